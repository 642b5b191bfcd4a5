/**
 * Doctor's checks of the program the registrations run: that it is there (the binary, or a program copy's
 * launcher with its bundles), that the copy's Deno can be found the way its launcher looks for it, that the
 * plugin directory a record points at is whole, and that the program runs (`<program> version`, the way Kimi
 * runs the hooks). Every problem comes with its fix; nothing here throws.
 */

import { commandName, COPY_FILES } from "../lib/self.ts";
import { type Env, joinPath } from "../lib/paths.ts";
import { readTextIfExists } from "../lib/fs.ts";
import { VERSION } from "../lib/version.ts";
import type { Check } from "./check.ts";
import type { KimiState } from "./detect.ts";
import { denoNotFound, findDeno, isExecutable, launcherInfo } from "./launcher.ts";
import type { OsFamily } from "./placement.ts";
import { isOurHookCommand, PLUGIN_ID } from "./spec.ts";

/** A program a registration runs. */
interface RegisteredProgram {
  /** Which registration (for messages). */
  label: string;
  /** The executable file: the binary, or a launcher. */
  path: string;
  mode: "config" | "plugin";
}

/** The first word of a shell command line (quotes removed), as `sh` or cmd.exe reads it. */
function firstWord(command: string): string {
  const m = /^\s*(?:'((?:[^']|'\\'')*)'|"((?:[^"]|"")*)"|(\S+))/.exec(command);
  if (!m) return "";
  if (m[1] !== undefined) return m[1].replace(/'\\''/g, "'");
  if (m[2] !== undefined) return m[2].replace(/""/g, '"');
  return m[3];
}

/** The fix for a program that is gone or broken. */
const REINSTALL = "run install again: `deno task -q install` in an openviking-kimi checkout, or " +
  "`./openviking-kimi-<target> install` with a release binary (add `--mode plugin` for plugin mode)";

/** The checks of one program copy behind a launcher: its files, and the Deno its launcher would run. */
async function copyChecks(
  p: RegisteredProgram,
  info: { dir: string; deno: string },
  env: Env,
  os: OsFamily,
): Promise<Check[]> {
  const missing: string[] = [];
  for (const f of [COPY_FILES.main, COPY_FILES.hook, COPY_FILES.info]) {
    if (!(await Deno.stat(joinPath(info.dir, f)).then((s) => s.isFile, () => false))) missing.push(f);
  }
  if (missing.length) {
    return [{
      id: "command",
      status: "fail",
      summary: `${p.label}: the program copy ${info.dir} is incomplete (missing ${missing.join(", ")})`,
      fix: REINSTALL,
    }];
  }
  const source = JSON.parse(
    (await readTextIfExists(joinPath(info.dir, COPY_FILES.info)).catch(() => undefined)) ?? "{}",
  ) as { source?: unknown };
  const deno = await findDeno(info.deno, env, os);
  if (!deno) {
    const check = denoNotFound({
      deno: info.deno,
      source: typeof source.source === "string" ? source.source : "a checkout",
      mode: p.mode,
    }, os);
    return [{ ...check, summary: `${p.label}: ${check.summary}` }];
  }
  if (deno !== info.deno) {
    return [{
      id: "deno",
      status: "warn",
      summary: `${p.label}: the Deno install used (${info.deno}) is gone; the launcher runs ${deno} instead`,
      fix: `${REINSTALL}, so it records ${deno}`,
    }];
  }
  return [{
    id: "program",
    status: "ok",
    summary: `${p.label}: the program copy ${info.dir}, run by ${deno}`,
  }];
}

/**
 * The checks of a registered program: there and executable; for a launcher, its copy's files and its
 * Deno. Returns the checks and whether the program can be run at all (then doctor runs its `version`).
 */
async function programChecks(
  p: RegisteredProgram,
  env: Env,
  os: OsFamily,
): Promise<{ checks: Check[]; runnable: boolean }> {
  if (!(await isExecutable(p.path, os))) {
    const gone = !(await Deno.lstat(p.path).then(() => true, () => false));
    return {
      checks: [{
        id: "command",
        status: "fail",
        summary: `${p.label}: ${p.path} ${gone ? "is gone (moved or deleted)" : "is not an executable file"}`,
        fix: REINSTALL,
      }],
      runnable: false,
    };
  }
  const text = await readTextIfExists(p.path).catch(() => undefined);
  const info = text !== undefined && text.length < 64 * 1024 ? launcherInfo(text) : undefined;
  if (!info) return { checks: [], runnable: true };
  const checks = await copyChecks(p, info, env, os);
  return { checks, runnable: !checks.some((c) => c.status === "fail") };
}

/** A plugin record whose directory is missing or half removed (no manifest, or no bin/): what to do. */
async function pluginDirCheck(state: KimiState, os: OsFamily): Promise<Check | undefined> {
  const p = state.plugin;
  if (!p || (p.owner !== "ours" && p.owner !== "missing")) return undefined;
  const bin = joinPath(p.root, "bin", os === "windows" ? "openviking-kimi.exe" : "openviking-kimi");
  const what = p.owner === "missing"
    ? (p.root ? `${p.root} has no kimi.plugin.json` : "the record has no root directory")
    : !(await Deno.lstat(bin).then(() => true, () => false))
    ? `${bin} is missing`
    : "";
  if (!what) return undefined;
  return {
    id: "plugin",
    status: "fail",
    summary: `plugins/installed.json registers "${PLUGIN_ID}", but its directory is incomplete: ${what}`,
    fix:
      `run \`${commandName()} install --mode plugin\` again (or \`${commandName()} uninstall --mode plugin\` ` +
      "to drop the record)",
  };
}

/** What a shell command line gave: its exit code and its output. */
export interface ShellResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a shell command line in `cwd` with exactly `env`. */
export type RunShell = (command: string, cwd: string, env: Env) => Promise<ShellResult>;

/** What the command checks need: the environment, the OS, and a shell (injectable for tests). */
export interface CommandContext {
  env: Env;
  os: OsFamily;
  runShell?: RunShell;
}

/** Runs a command line through `/bin/sh -c` (cmd.exe on Windows) with only `env`, within 20 s. */
async function defaultRunShell(command: string, cwd: string, env: Env): Promise<ShellResult> {
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
async function versionCheck(ctx: CommandContext, state: KimiState, c: Registered): Promise<Check> {
  const run = ctx.runShell ?? defaultRunShell;
  const env = { ...ctx.env, KIMI_CODE_HOME: state.paths.home, KIMI_PLUGIN_ROOT: c.cwd };
  let result: ShellResult;
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
      fix: `run \`${commandName()} install\` again (from a checkout: \`deno task -q install\`)`,
    };
  }
  if (version !== VERSION) {
    return {
      id: "command",
      status: "warn",
      summary: `${label} run openviking-kimi ${version || "(unknown)"}, this is ${VERSION}`,
      fix: `run \`${commandName()} install\` with the version you want the hooks to use`,
    };
  }
  return { id: "command", status: "ok", summary: `${label}: \`${c.command}\` runs (${version})` };
}

/** For each registration: its program (there, its copy whole, its Deno found), then that it runs. */
export async function commandChecks(ctx: CommandContext, state: KimiState): Promise<Check[]> {
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
