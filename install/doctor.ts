/**
 * `openviking-kimi doctor [--json] [--kimi-home DIR]`: tells why memory does not work. Each check reports
 * ok / info / warn / fail with the fix; the exit code is 1 when any check fails. Never prints a credential.
 */

import { printable, reportJson } from "../runtime/neutralize.ts";
import { loadConfig } from "../runtime/config.ts";
import { scrub } from "../runtime/scrub.ts";
import { type Env, orNoHome, processEnv } from "../runtime/paths.ts";
import type { Check, CheckStatus } from "./check.ts";
import { captureChecks, queueCheck, serverChecks } from "./doctor-memory.ts";
import { homeChecks } from "./doctor-home.ts";
import { VERSION } from "../runtime/version.ts";
import { HOOKS } from "../hooks/events.ts";
import { isOurHookCommand, isUpstreamHookCommand, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import { kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import { isRecord } from "../runtime/parsed.ts";
import { currentOs, type OsFamily } from "./placement.ts";
import { firstWord, pluginDirCheck, programChecks, type RegisteredProgram } from "./doctor-program.ts";

export type { Check } from "./check.ts";

/** What doctor needs, injectable for tests. */
export interface DoctorContext {
  env: Env;
  home: string;
  os: OsFamily;
  now: number;
  /** Runs a shell command line in `cwd`; returns exit code and output. */
  runShell?: (
    command: string,
    cwd: string,
    env: Env,
  ) => Promise<{ code: number; stdout: string; stderr: string }>;
  fetch?: typeof fetch;
}

const INSTALL_FIX = "run `openviking-kimi install` (or `install --mode plugin`)";

async function defaultRunShell(
  command: string,
  cwd: string,
  env: Env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const windows = Deno.build.os === "windows";
  const cmd = new Deno.Command(windows ? "cmd.exe" : "/bin/sh", {
    args: windows ? ["/d", "/s", "/c", command] : ["-c", command],
    cwd,
    env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(20_000),
  });
  const out = await cmd.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Where each event is registered (config block, plugin, OpenViking's own plugin). */
export function registrations(state: KimiState): Map<string, string[]> {
  const byEvent = new Map<string, string[]>(HOOKS.map((h) => [h.event, []]));
  const add = (event: unknown, where: string) => {
    if (typeof event === "string" && byEvent.has(event)) byEvent.get(event)!.push(where);
  };
  const configLive = state.configError === undefined && state.invalidHookKeys.length === 0;
  if (configLive) {
    for (const h of state.configHooks) {
      if (isOurHookCommand(h.command)) add(h.value.event, "config.toml");
      else if (isUpstreamHookCommand(h.command)) add(h.value.event, "config.toml (OpenViking's Node plugin)");
    }
  }
  const p = state.plugin;
  if (p && p.enabled && p.manifest && Array.isArray(p.manifest.hooks)) {
    const where = p.owner === "ours"
      ? `plugin ${PLUGIN_ID}`
      : `plugin ${PLUGIN_ID} (OpenViking's Node plugin)`;
    for (const h of p.manifest.hooks) if (isRecord(h)) add(h.event, where);
  }
  return byEvent;
}

function hookCheck(state: KimiState): Check {
  const regs = registrations(state);
  const missing = [...regs].filter(([, w]) => w.length === 0).map(([e]) => e);
  const twice = [...regs].filter(([, w]) => w.length > 1);
  const detail = [...regs].map(([e, w]) => `${e}: ${w.length ? w.join(" + ") : "not registered"}`);
  if (state.plugin?.owner === "ours" && !state.plugin.enabled) {
    return {
      id: "hooks",
      status: "fail",
      summary: `the ${PLUGIN_ID} plugin is disabled in Kimi`,
      detail,
      fix: `in Kimi run \`/plugins enable ${PLUGIN_ID}\` (or run \`openviking-kimi install --mode plugin\`)`,
    };
  }
  if (twice.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: `hooks registered more than once (${
        twice.map(([e, w]) => `${e} ×${w.length}`).join(", ")
      }): ` +
        "every turn would be captured twice",
      detail,
      fix: "run `openviking-kimi install` in the mode you want (it replaces its own other mode), or " +
        "`openviking-kimi uninstall --mode config|plugin`; remove OpenViking's Node plugin with `/plugins remove " +
        `${PLUGIN_ID}\` or its \`install.sh --harness kimicode --uninstall --yes\``,
    };
  }
  if (missing.length === HOOKS.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: "no openviking hook is registered",
      detail,
      fix: INSTALL_FIX,
    };
  }
  if (missing.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: `not registered: ${missing.join(", ")}`,
      detail,
      fix: `${INSTALL_FIX} again to restore every hook`,
    };
  }
  return { id: "hooks", status: "ok", summary: `all ${HOOKS.length} hooks registered once`, detail };
}

function mcpCheck(state: KimiState): Check {
  const where: string[] = [];
  if (state.mcpOwner === "ours") where.push("mcp.json");
  if (state.mcpOwner === "upstream") where.push("mcp.json (OpenViking's Node proxy)");
  const p = state.plugin;
  if (
    p && p.enabled && p.manifest && isRecord(p.manifest.mcpServers) &&
    MCP_SERVER_NAME in p.manifest.mcpServers
  ) {
    if (!p.mcpDisabled) where.push(`plugin ${PLUGIN_ID}`);
  }
  if (state.mcpError) {
    return {
      id: "mcp",
      status: "fail",
      summary: `mcp.json is not valid JSON (${state.mcpError})`,
      fix: "fix mcp.json or restore mcp.json.bak, then run `openviking-kimi install`",
    };
  }
  if (where.length === 0) {
    const fix = p?.owner === "ours" && p.mcpDisabled
      ? `in Kimi run \`/plugins mcp enable ${PLUGIN_ID} ${MCP_SERVER_NAME}\``
      : INSTALL_FIX;
    return { id: "mcp", status: "fail", summary: "the OpenViking MCP server is not registered", fix };
  }
  if (where.length > 1) {
    return {
      id: "mcp",
      status: "warn",
      summary: `MCP server registered ${where.length} times (${
        where.join(" + ")
      }): the model sees every tool twice`,
      fix: "run `openviking-kimi install` in one mode; it removes the other",
    };
  }
  const note = state.mcpOwner === "foreign"
    ? ` (mcp.json also has a foreign "${MCP_SERVER_NAME}" entry)`
    : "";
  return { id: "mcp", status: note ? "warn" : "ok", summary: `registered in ${where[0]}${note}` };
}

/** A registration's program and the `<program> version` line that proves it runs, with its working directory. */
interface Registered {
  program: RegisteredProgram;
  command: string;
  cwd: string;
}

/** The programs the registrations point at: config.toml's hooks, and our plugin's `bin/`. */
function registeredPrograms(state: KimiState, os: OsFamily): Registered[] {
  const out: Registered[] = [];
  const ours = state.configHooks.find((h) => isOurHookCommand(h.command));
  if (ours) {
    const prefix = ours.command.replace(/\s+hook\s+\S+\s*$/, "");
    out.push({
      program: { label: "config.toml hooks", path: firstWord(prefix), mode: "config" },
      command: `${prefix} version`,
      cwd: state.paths.home,
    });
  }
  if (state.plugin?.owner === "ours") {
    const exe = os === "windows" ? ".\\bin\\openviking-kimi.exe" : "./bin/openviking-kimi";
    const path = `${state.plugin.root}/bin/openviking-kimi${os === "windows" ? ".exe" : ""}`;
    out.push({
      program: { label: `plugin ${PLUGIN_ID}`, path, mode: "plugin" },
      command: `${exe} version`,
      cwd: state.plugin.root,
    });
  }
  return out;
}

/** Runs `<program> version` the way Kimi runs the hooks (a shell, the registration's working directory). */
async function versionCheck(ctx: DoctorContext, state: KimiState, c: Registered): Promise<Check> {
  const run = ctx.runShell ?? defaultRunShell;
  const env = { ...ctx.env, KIMI_CODE_HOME: state.paths.home, KIMI_PLUGIN_ROOT: c.cwd };
  let result: { code: number; stdout: string; stderr: string };
  try {
    result = await run(c.command, c.cwd, env);
  } catch (error) {
    result = { code: -1, stdout: "", stderr: (error as Error).message };
  }
  const version = result.stdout.trim().split("\n").at(-1) ?? "";
  const label = c.program.label;
  if (result.code !== 0) {
    return {
      id: "command",
      status: "fail",
      summary: `${label}: \`${c.command}\` does not run (exit ${result.code})`,
      detail: result.stderr.trim() ? [result.stderr.trim().split("\n").slice(-3).join(" | ")] : undefined,
      fix: "run `openviking-kimi install` again (from a checkout: `deno task -q install`)",
    };
  }
  if (version !== VERSION) {
    return {
      id: "command",
      status: "warn",
      summary: `${label} run openviking-kimi ${version || "(unknown)"}, this is ${VERSION}`,
      fix: "run `openviking-kimi install` with the version you want the hooks to use",
    };
  }
  return { id: "command", status: "ok", summary: `${label}: \`${c.command}\` runs (${version})` };
}

/** For each registration: its program (there, its copy whole, its Deno found), then that it runs. */
async function commandChecks(ctx: DoctorContext, state: KimiState): Promise<Check[]> {
  const checks: Check[] = [];
  const plugin = await pluginDirCheck(state, ctx.os);
  if (plugin) checks.push(plugin);
  for (const c of registeredPrograms(state, ctx.os)) {
    if (plugin && c.program.mode === "plugin") continue; // said already: the plugin directory is incomplete
    const program = await programChecks(c.program, ctx.env, ctx.os);
    checks.push(...program.checks);
    if (program.runnable) checks.push(await versionCheck(ctx, state, c));
  }
  return checks;
}

/** Whether Kimi's home is there, and whether config.toml parses with [[hooks]] Kimi accepts. */
function kimiChecks(home: string, state: KimiState): Check[] {
  const checks: Check[] = [
    state.homeExists ? { id: "kimi-home", status: "ok", summary: `Kimi Code home ${home}` } : {
      id: "kimi-home",
      status: "fail",
      summary: `Kimi Code home ${home} does not exist`,
      fix:
        "install Kimi Code (`npm install -g @moonshot-ai/kimi-code`) and run it once, or set KIMI_CODE_HOME",
    },
  ];
  if (state.configError?.startsWith("cannot be read")) {
    checks.push({
      id: "config",
      status: "fail",
      summary: `${state.paths.config} ${state.configError}`,
      fix: "make it a readable UTF-8 file again (or restore config.toml.bak); Kimi cannot read it either",
    });
  } else if (state.configError) {
    checks.push({
      id: "config",
      status: "fail",
      summary: `config.toml does not parse: ${state.configError}`,
      fix: "fix it (`kimi doctor config` shows where) or restore config.toml.bak",
    });
  } else if (state.invalidHookKeys.length) {
    checks.push({
      id: "config",
      status: "fail",
      summary: "config.toml has [[hooks]] entries Kimi rejects, so Kimi ignores all of them",
      detail: state.invalidHookKeys,
      fix: "remove the keys named above",
    });
  } else {
    checks.push({
      id: "config",
      status: "ok",
      summary: state.configText === undefined ? "no config.toml (nothing to parse)" : "config.toml parses",
    });
  }
  if (state.registryError && state.registryText !== undefined) {
    checks.push({ id: "plugins", status: "fail", summary: state.registryError });
  }
  return checks;
}

/** What is registered: the hooks (and any of ours outside the block), the MCP server. */
function registrationChecks(state: KimiState): Check[] {
  const checks = [hookCheck(state)];
  if (state.strayHooks.length) {
    checks.push({
      id: "hooks-outside-block",
      status: "warn",
      summary:
        "openviking-kimi [[hooks]] found outside the marked block (Kimi may have rewritten config.toml)",
      detail: state.strayHooks.map((h) => `hooks[${h.index}]: ${h.command}`),
      fix: "uninstall cannot remove these: delete them by hand, then run `openviking-kimi install`",
    });
  }
  checks.push(mcpCheck(state));
  return checks;
}

/** The settings that were ignored, with their fix. */
function settingsCheck(warnings: string[]): Check[] {
  return warnings.length
    ? [{
      id: "settings",
      status: "warn",
      summary: "some settings were ignored",
      detail: warnings,
      fix: "correct the values named above (environment or ~/.openviking/ovcli.conf)",
    }]
    : [];
}

/**
 * Runs one part of doctor; whatever it throws becomes a failing check that says what could not be checked
 * (doctor itself never crashes: it is what a user runs when something is broken).
 */
async function guarded(id: string, what: string, part: () => Check[] | Promise<Check[]>): Promise<Check[]> {
  try {
    return await part();
  } catch (error) {
    return [{
      id,
      status: "fail",
      summary: `doctor could not check ${what}: ${(error as Error)?.message ?? String(error)}`,
      fix: "fix what the message names and run doctor again; if it persists, report it with this output",
    }];
  }
}

/** Runs every check. */
export async function runDoctor(ctx: DoctorContext): Promise<Check[]> {
  const homes = await guarded("home", "the home directory", () => homeChecks(ctx.env));
  const { config, warnings } = await loadConfig(ctx.env);
  const server = () => guarded("server", "the server", () => serverChecks(config, ctx.fetch));
  // Without Kimi's home there is nothing on disk to inspect; the server is still worth a look.
  if (!ctx.home) return scrub([...homes, ...await server()], [config.apiKey]) as Check[];
  const state = await readKimiState(ctx.home);
  const checks: Check[] = [
    ...await guarded("kimi-home", "Kimi's home", () => kimiChecks(ctx.home, state)),
    ...await guarded("hooks", "the registrations", () => registrationChecks(state)),
    ...await guarded("command", "the registered program", () => commandChecks(ctx, state)),
    ...homes,
    ...settingsCheck(warnings),
    ...await server(),
  ];
  if (homes.every((c) => c.id !== "home" || c.status !== "fail")) {
    checks.push(
      ...await guarded("queue", "the pending queue", async () => [await queueCheck(ctx.env, ctx.now)]),
    );
    checks.push(...await guarded("captures", "the captures", () => captureChecks(ctx.env, config)));
  }
  // A server's error text may quote the key back (`invalid api key: Bearer …`): nothing leaves unscrubbed.
  return scrub(checks, [config.apiKey]) as Check[];
}

const MARK: Record<CheckStatus, string> = { ok: "✓", info: "·", warn: "!", fail: "✗" };

/** Renders checks as text. */
export function renderChecks(checks: readonly Check[]): string {
  const lines = [`openviking-kimi doctor ${VERSION}`];
  for (const c of checks) {
    lines.push(`${MARK[c.status]} ${c.id}: ${c.summary}`);
    for (const d of c.detail ?? []) lines.push(`    ${d}`);
    if (c.fix && (c.status === "fail" || c.status === "warn")) lines.push(`    fix: ${c.fix}`);
  }
  const failed = checks.filter((c) => c.status === "fail").length;
  lines.push(failed ? `${failed} problem(s) found.` : "Everything needed for memory is in place.");
  return lines.join("\n");
}

/** Options of `openviking-kimi doctor` (parsed by cli/commands.ts). */
export interface DoctorOptions {
  json: boolean;
  /** `--kimi-home`, when given. */
  kimiHome: string | undefined;
}

/** `openviking-kimi doctor [--json] [--kimi-home DIR]` */
export async function doctorCommand(options: DoctorOptions): Promise<number> {
  const { json, kimiHome: explicitHome } = options;
  const env = processEnv();
  let checks: Check[];
  try {
    // "" without a home: the checks say so instead of looking at a directory relative to here.
    const home = orNoHome(() => kimiHomeFor(env, explicitHome, Deno.cwd())) ?? "";
    checks = await runDoctor({ env, home, os: currentOs(), now: Date.now() });
  } catch (error) {
    checks = await guarded("doctor", "the setup", () => Promise.reject(error));
  }
  const ok = !checks.some((c) => c.status === "fail");
  // A server's words (its version, a proxy's page) are printed as a person may safely read them.
  if (json) console.log(reportJson({ version: VERSION, ok, checks }, 2));
  else console.log(printable(renderChecks(checks)));
  return ok ? 0 : 1;
}
