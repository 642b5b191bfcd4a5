/**
 * Doctor's checks of the program the registrations run: that it is there (the binary, or a program copy's
 * launcher with its bundles), that the copy's Deno can be found the way its launcher looks for it, and that
 * the plugin directory a record points at is whole. Every problem comes with its fix; nothing here throws.
 */

import { COPY_FILES } from "../runtime/self.ts";
import { type Env, joinPath } from "../runtime/paths.ts";
import { readTextIfExists } from "../runtime/fs.ts";
import type { Check } from "./check.ts";
import type { KimiState } from "./detect.ts";
import { denoNotFound, findDeno, isExecutable, launcherInfo } from "./launcher.ts";
import type { OsFamily } from "./placement.ts";
import { PLUGIN_ID } from "./spec.ts";

/** A program a registration runs. */
export interface RegisteredProgram {
  /** Which registration (for messages). */
  label: string;
  /** The executable file: the binary, or a launcher. */
  path: string;
  mode: "config" | "plugin";
}

/** The first word of a shell command line (quotes removed), as `sh` or cmd.exe reads it. */
export function firstWord(command: string): string {
  const m = /^\s*(?:'((?:[^']|'\\'')*)'|"((?:[^"]|"")*)"|(\S+))/.exec(command);
  if (!m) return "";
  if (m[1] !== undefined) return m[1].replace(/'\\''/g, "'");
  if (m[2] !== undefined) return m[2].replace(/""/g, '"');
  return m[3];
}

/** The fix for a program that is gone or broken. */
const REINSTALL = "run install again: `deno task -q install` in an openviking-kimi checkout, or " +
  "`openviking-kimi install` with a release binary (add `--mode plugin` for plugin mode)";

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
export async function programChecks(
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
export async function pluginDirCheck(state: KimiState, os: OsFamily): Promise<Check | undefined> {
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
      "run `openviking-kimi install --mode plugin` again (or `openviking-kimi uninstall --mode plugin` to " +
      "drop the record)",
  };
}
