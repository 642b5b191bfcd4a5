/**
 * `openviking-kimi doctor [--json] [--kimi-home DIR]`: tells why memory does not work. Each check reports
 * ok / info / warn / fail with the fix; the exit code is 1 when any check fails. Never prints a credential.
 */

import { loadConfig } from "../runtime/config.ts";
import { createClient } from "../runtime/http.ts";
import { listPending } from "../runtime/pending.ts";
import { SessionStateSchema } from "../runtime/state.ts";
import { parseJsonOrUndefined } from "../runtime/fs.ts";
import {
  type Env,
  hookStateDir,
  ignoredOverrides,
  isAbsolutePath,
  joinPath,
  kimiHome,
  noHomeReason,
  orNoHome,
  pendingDir,
  processEnv,
} from "../runtime/paths.ts";
import { unwritableReason } from "../runtime/writable.ts";
import { VERSION } from "../runtime/version.ts";
import { HOOKS, isOurHookCommand, isUpstreamHookCommand, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import { type KimiState, readKimiState } from "./detect.ts";
import { isObject } from "./json-file.ts";
import { currentOs, type OsFamily } from "./placement.ts";

/** A check's verdict. */
export type CheckStatus = "ok" | "info" | "warn" | "fail";

/** One check. */
export interface Check {
  id: string;
  status: CheckStatus;
  summary: string;
  detail?: string[];
  fix?: string;
}

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

/** Journal protocol versions this release was tested with. */
export const KNOWN_PROTOCOLS = ["1.4", "1.5"];

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
    for (const h of p.manifest.hooks) if (isObject(h)) add(h.event, where);
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
    p && p.enabled && p.manifest && isObject(p.manifest.mcpServers) &&
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

/** The commands the registrations point at, as `<command> version` lines with their working directory. */
export function versionCommands(
  state: KimiState,
  os: OsFamily,
): { label: string; command: string; cwd: string }[] {
  const out: { label: string; command: string; cwd: string }[] = [];
  const ours = state.configHooks.find((h) => isOurHookCommand(h.command));
  if (ours) {
    const prefix = ours.command.replace(/\s+hook\s+\S+\s*$/, "");
    out.push({ label: "config.toml hooks", command: `${prefix} version`, cwd: state.paths.home });
  }
  if (state.plugin?.owner === "ours") {
    const exe = os === "windows" ? ".\\bin\\openviking-kimi.exe" : "./bin/openviking-kimi";
    out.push({ label: `plugin ${PLUGIN_ID}`, command: `${exe} version`, cwd: state.plugin.root });
  }
  return out;
}

async function commandChecks(ctx: DoctorContext, state: KimiState): Promise<Check[]> {
  const run = ctx.runShell ?? defaultRunShell;
  const checks: Check[] = [];
  for (const c of versionCommands(state, ctx.os)) {
    const env = { ...ctx.env, KIMI_CODE_HOME: state.paths.home, KIMI_PLUGIN_ROOT: c.cwd };
    let result: { code: number; stdout: string; stderr: string };
    try {
      result = await run(c.command, c.cwd, env);
    } catch (error) {
      result = { code: -1, stdout: "", stderr: (error as Error).message };
    }
    const version = result.stdout.trim().split("\n").at(-1) ?? "";
    if (result.code !== 0) {
      checks.push({
        id: "command",
        status: "fail",
        summary: `${c.label}: \`${c.command}\` does not run (exit ${result.code})`,
        detail: result.stderr.trim() ? [result.stderr.trim().split("\n").slice(-3).join(" | ")] : undefined,
        fix:
          "the executable moved or was deleted: run `openviking-kimi install` again from where it now lives",
      });
    } else if (version !== VERSION) {
      checks.push({
        id: "command",
        status: "warn",
        summary: `${c.label} run openviking-kimi ${version || "(unknown)"}, this is ${VERSION}`,
        fix: "run `openviking-kimi install` with the version you want the hooks to use",
      });
    } else {
      checks.push({ id: "command", status: "ok", summary: `${c.label}: \`${c.command}\` runs (${version})` });
    }
  }
  return checks;
}

async function serverChecks(ctx: DoctorContext): Promise<Check[]> {
  const { config, warnings } = await loadConfig(ctx.env);
  const checks: Check[] = [];
  if (warnings.length) {
    checks.push({
      id: "settings",
      status: "warn",
      summary: "some settings were ignored",
      detail: warnings,
      fix: "correct the values named above (environment or ~/.openviking/ovcli.conf)",
    });
  }
  const client = createClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    account: config.account,
    user: config.user,
    peerId: "",
    userAgent: config.userAgent,
    timeoutMs: 5000,
    fetch: ctx.fetch,
  });
  const where = `${config.baseUrl} (from ${config.credentialSource})`;
  const health = await client.request<Record<string, unknown>>("GET", "/health");
  if (!health.ok) {
    checks.push({
      id: "server",
      status: "fail",
      summary: `OpenViking at ${where} is not reachable: ${health.error.message}`,
      fix:
        "start the OpenViking server, or save its address: `openviking-kimi install --url http://HOST:1933`",
    });
    return checks;
  }
  const h = isObject(health.result) ? health.result : {};
  checks.push({
    id: "server",
    status: "ok",
    summary: `OpenViking ${typeof h.version === "string" ? h.version : ""} at ${where}`.replace("  ", " "),
  });
  const search = await client.request("POST", "/api/v1/search/find", {
    body: { query: "openviking-kimi doctor", limit: 1 },
  });
  const keyNote = config.apiKey ? `API key from ${config.apiKeySource}` : "no API key";
  if (search.ok) checks.push({ id: "auth", status: "ok", summary: `a search works (${keyNote})` });
  else if (search.status === 401 || search.status === 403) {
    checks.push({
      id: "auth",
      status: "fail",
      summary: `the server refused a search (HTTP ${search.status}, ${keyNote}): ${search.error.message}`,
      fix:
        "save a valid key: `openviking-kimi install --api-key KEY` (stored in ~/.openviking/ovcli.conf), " +
        "and --account/--user when the server runs in trusted mode",
    });
  } else {
    checks.push({
      id: "auth",
      status: "fail",
      summary: `a search failed (HTTP ${search.status || "none"}): ${search.error.message}`,
      fix: "check the server's log; doctor sends POST /api/v1/search/find {query, limit: 1}",
    });
  }
  return checks;
}

async function queueCheck(ctx: DoctorContext): Promise<Check> {
  const dir = pendingDir(ctx.env);
  let queued;
  try {
    queued = await listPending(dir);
  } catch (error) {
    return { id: "queue", status: "warn", summary: `cannot read ${dir}: ${(error as Error).message}` };
  }
  if (queued.length === 0) return { id: "queue", status: "ok", summary: `pending queue empty (${dir})` };
  const oldest = Math.min(...queued.map((q) => q.entry.createdAt));
  const ageH = (ctx.now - oldest) / 3_600_000;
  const summary = `${queued.length} write(s) waiting in ${dir}, oldest from ${
    new Date(oldest).toISOString()
  }`;
  return ageH > 1
    ? {
      id: "queue",
      status: "warn",
      summary,
      fix: "they are sent when the server is reachable (at the next session start); send them now with " +
        "`openviking-kimi replay`",
    }
    : { id: "queue", status: "info", summary };
}

async function captureChecks(ctx: DoctorContext): Promise<Check[]> {
  const dir = hookStateDir(ctx.env);
  const sessions: { name: string; at: number; event?: string; protocol?: string }[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".json")) continue;
      const raw = parseJsonOrUndefined(await Deno.readTextFile(joinPath(dir, e.name)).catch(() => undefined));
      const parsed = SessionStateSchema.safeParse(raw);
      if (!parsed.success) continue;
      const s = parsed.data;
      sessions.push({
        name: e.name.replace(/\.json$/, ""),
        at: s.lastCaptureAt ?? 0,
        event: s.lastCaptureEvent,
        protocol: s.protocolVersion,
      });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      return [{ id: "captures", status: "warn", summary: `cannot read ${dir}: ${(error as Error).message}` }];
    }
  }
  const captured = sessions.filter((s) => s.at > 0).sort((a, b) => b.at - a.at);
  const checks: Check[] = [];
  if (captured.length === 0) {
    checks.push({
      id: "captures",
      status: "info",
      summary: sessions.length
        ? `${sessions.length} session(s) seen, none captured yet`
        : "no capture recorded yet (finish a turn in Kimi Code, then run doctor again)",
    });
  } else {
    checks.push({
      id: "captures",
      status: "ok",
      summary: `last capture ${new Date(captured[0].at).toISOString()} (${captured.length} session(s))`,
      detail: captured.slice(0, 5).map((s) =>
        `${s.name}: ${new Date(s.at).toISOString()}${s.event ? ` on ${s.event}` : ""}${
          s.protocol ? `, journal protocol ${s.protocol}` : ""
        }`
      ),
    });
  }
  const protocols = [...new Set(sessions.map((s) => s.protocol).filter((p): p is string => !!p))];
  if (protocols.length) {
    const unknown = protocols.filter((p) => !KNOWN_PROTOCOLS.includes(p));
    checks.push(
      unknown.length
        ? {
          id: "protocol",
          status: "warn",
          summary: `journal protocol ${unknown.join(", ")} seen; this release knows ${
            KNOWN_PROTOCOLS.join(", ")
          }`,
          fix: "update openviking-kimi; until then capture may miss parts of turns",
        }
        : { id: "protocol", status: "ok", summary: `journal protocol ${protocols.join(", ")}` },
    );
  }
  return checks;
}

/**
 * Where our files go: a failing "home" check without one (hooks then keep nothing and capture nothing), and
 * a failing "state-dirs" check when the hook state or the queue directory cannot be written (probed by
 * writing, so it is true for root and read-only mounts too; directories it had to create are removed).
 */
export async function homeChecks(env: Env): Promise<Check[]> {
  const ignored = ignoredOverrides(env);
  const noHome = noHomeReason(env);
  const state = orNoHome(() => hookStateDir(env));
  const queue = orNoHome(() => pendingDir(env));
  if (noHome && (!state || !queue)) {
    return [{
      id: "home",
      status: "fail",
      summary:
        "HOME is not set (or not an absolute path): the hooks keep no state, capture nothing and read " +
        "no config file; recall uses the OPENVIKING_* environment only",
      detail: ignored.length ? ignored.map((o) => `ignored (not absolute): ${o}`) : undefined,
      fix:
        "start Kimi Code with HOME set to your home directory, or set OPENVIKING_HOME (and KIMI_CODE_HOME) " +
        "to absolute directories",
    }];
  }
  const checks: Check[] = [{
    id: "home",
    status: ignored.length ? "warn" : "ok",
    summary: ignored.length ? "some path settings are not absolute and are ignored" : "home directory set",
    detail: ignored.length ? ignored : undefined,
    fix: ignored.length ? "give these variables absolute paths (or unset them)" : undefined,
  }];
  const problems: string[] = [];
  for (const dir of [state!, queue!]) {
    const reason = await unwritableReason(dir, { removeCreated: true });
    if (reason) problems.push(reason);
  }
  checks.push(
    problems.length
      ? {
        id: "state-dirs",
        status: "fail",
        summary:
          "the hook state or the pending queue cannot be written: recall still works, but nothing is " +
          "captured (the journal keeps every turn until this is fixed)",
        detail: problems,
        fix:
          `make ${state} and ${queue} directories you can write (\`mkdir -p DIR && chmod 700 DIR\`; move ` +
          "a file that is in the way), or set OPENVIKING_HOOK_STATE_DIR / OPENVIKING_PENDING_DIR to ones",
      }
      : { id: "state-dirs", status: "ok", summary: `hook state ${state} and queue ${queue} are writable` },
  );
  return checks;
}

/** Runs every check. */
export async function runDoctor(ctx: DoctorContext): Promise<Check[]> {
  const homes = await homeChecks(ctx.env);
  // Without Kimi's home there is nothing on disk to inspect; the server is still worth a look.
  if (!ctx.home) return [...homes, ...await serverChecks(ctx)];
  const state = await readKimiState(ctx.home);
  const checks: Check[] = [];
  checks.push(
    state.homeExists ? { id: "kimi-home", status: "ok", summary: `Kimi Code home ${ctx.home}` } : {
      id: "kimi-home",
      status: "fail",
      summary: `Kimi Code home ${ctx.home} does not exist`,
      fix:
        "install Kimi Code (`npm install -g @moonshot-ai/kimi-code`) and run it once, or set KIMI_CODE_HOME",
    },
  );
  if (state.configError) {
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
  checks.push(hookCheck(state));
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
  checks.push(...await commandChecks(ctx, state));
  checks.push(...homes);
  checks.push(...await serverChecks(ctx));
  if (homes.every((c) => c.id !== "home" || c.status !== "fail")) {
    checks.push(await queueCheck(ctx));
    checks.push(...await captureChecks(ctx));
  }
  return checks;
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

/** `openviking-kimi doctor [--json] [--kimi-home DIR]` */
export async function doctorCommand(args: string[]): Promise<number> {
  let json = false;
  let explicitHome: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--json") json = true;
    else if (args[i] === "--kimi-home" && args[i + 1] !== undefined) explicitHome = args[++i];
    else if (args[i].startsWith("--kimi-home=")) explicitHome = args[i].slice("--kimi-home=".length);
    else {
      console.error(
        `openviking-kimi doctor: unknown option "${
          args[i]
        }"\nusage: openviking-kimi doctor [--json] [--kimi-home DIR]`,
      );
      return 2;
    }
  }
  const env = processEnv();
  // "" without a home: the checks say so instead of looking at a directory relative to here.
  let home = orNoHome(() => kimiHome(env, explicitHome)) ?? "";
  if (home && !isAbsolutePath(home)) home = joinPath(Deno.cwd(), home);
  const checks = await runDoctor({ env, home, os: currentOs(), now: Date.now() });
  const ok = !checks.some((c) => c.status === "fail");
  if (json) console.log(JSON.stringify({ version: VERSION, ok, checks }, null, 2));
  else console.log(renderChecks(checks));
  return ok ? 0 : 1;
}
