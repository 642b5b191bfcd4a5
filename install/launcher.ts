/**
 * The launcher of an installed copy (install/copy.ts): the small script the hooks, the MCP server and the
 * user run. It finds Deno — the one install used, then `deno` on PATH, then the usual install places — and
 * runs the copy with the production flags, offline. Without Deno, or with the copy's code gone (its version
 * directory moved or deleted, a bundle missing), it never breaks Kimi: a hook drains its stdin and exits 0
 * silently (a debug log line says why), `mcp` answers every request with an error that names the fix,
 * `doctor` prints its report with that one failing check, and any other command says so and exits 1. The search list is defined once here: the script and doctor's own search both come from it.
 */

import { COPY_FILES, COPY_RUN_FLAGS, shellQuote } from "../lib/self.ts";
import { type Env, joinPath } from "../lib/paths.ts";
import type { Check } from "./check.ts";
import type { OsFamily } from "./placement.ts";
import { cmdQuote } from "./placement.ts";

/** What a launcher needs to know. */
export interface LauncherSpec {
  /** The copy's directory. */
  dir: string;
  /** The Deno install used (`Deno.execPath()` of the install). */
  deno: string;
  /** The production flags (deno.json's `cli` task). */
  flags: readonly string[];
  version: string;
  id: string;
  /** The checkout the copy was built from. */
  source: string;
}

/** The marker line of a launcher: what doctor reads back (`# openviking-kimi copy {json}`). */
const MARKER = "# openviking-kimi copy ";

/**
 * The variables the usual places start from, in the order the script sets them. A relative value counts as
 * unset (it would name a file of the directory the hook runs in, a cloned project's); NVM_DIR then means
 * `~/.nvm`.
 */
const BASES = ["DENO_INSTALL", "HOME", "NVM_DIR"] as const;

/** Where else Deno usually lives (after the recorded one and PATH): `$VAR/rest`, a glob in the last part. */
const USUAL_PLACES: readonly { base?: (typeof BASES)[number]; path: string }[] = [
  { base: "DENO_INSTALL", path: "bin/deno" },
  { base: "HOME", path: ".deno/bin/deno" },
  { base: "HOME", path: ".local/bin/deno" },
  { path: "/opt/homebrew/bin/deno" },
  { path: "/usr/local/bin/deno" },
  { path: "/usr/bin/deno" },
  { base: "NVM_DIR", path: "versions/node/*/bin/deno" },
];

/** The usual places in words, for messages. */
const USUAL_WORDS = "~/.deno/bin, ~/.local/bin, $DENO_INSTALL/bin, /opt/homebrew/bin, /usr/local/bin, " +
  "/usr/bin, nvm's Node versions";

/**
 * The failing check a copy without Deno reports: what is missing and how to get it back (the install
 * command for `mode` when known; the launcher, shared by both modes, names both).
 */
export function denoNotFound(
  spec: Pick<LauncherSpec, "deno" | "source"> & { mode?: "config" | "plugin" },
  os: OsFamily,
): Check {
  const install = installCommand(spec.mode);
  return {
    id: "deno",
    status: "fail",
    summary: `Deno not found at ${spec.deno} (the one install used), on PATH or in the usual places (${
      os === "windows" ? "%USERPROFILE%\\.deno\\bin" : USUAL_WORDS
    }): the hooks do nothing and the MCP server cannot start`,
    fix:
      `reinstall with: install Deno 2 (\`npm install -g deno\`, or see https://deno.com), then run ${install} ` +
      `in an openviking-kimi checkout (this copy was built from ${spec.source}); or install a release binary, ` +
      "which needs no Deno",
  };
}

/** The install command for `mode`, in words (both modes when unknown: the launcher serves either). */
function installCommand(mode: "config" | "plugin" | undefined): string {
  return mode === undefined
    ? "`deno task -q install` (with `--mode plugin` for plugin mode)"
    : `\`deno task -q install${mode === "plugin" ? " --mode plugin" : ""}\``;
}

/**
 * The failing check a launcher whose copy lost its code reports (the version directory moved or deleted, a
 * bundle missing): the same fail-safe route as without Deno, and the fix is to install again.
 */
function copyIncomplete(spec: Pick<LauncherSpec, "dir" | "source">): Check {
  return {
    id: "command",
    status: "fail",
    summary: `the program copy ${spec.dir} is gone or incomplete (${COPY_FILES.main} or ${COPY_FILES.hook} ` +
      "is missing): the hooks do nothing and the MCP server cannot start",
    fix: `run install again: ${installCommand(undefined)} in an openviking-kimi checkout (this copy was ` +
      `built from ${spec.source}); or install a release binary, which needs no Deno`,
  };
}

/** One line saying it: "Deno not found at …; reinstall with …", "the program copy … is gone …; run …". */
function problemLine(check: Check): string {
  return `${check.summary.replace(/: the hooks do nothing.*$/, "")}; ${check.fix}`;
}

/** The launcher's text for `os` (a POSIX sh script, or a cmd.exe batch file). */
export function launcherText(spec: LauncherSpec, os: OsFamily): string {
  return os === "windows" ? windowsLauncher(spec) : posixLauncher(spec);
}

/** The launcher's file name. */
export function launcherName(os: OsFamily): string {
  return os === "windows" ? "openviking-kimi.cmd" : "openviking-kimi";
}

/** A JSON string's inside (no quotes), for text the script prints inside JSON. */
function jsonInside(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** The sh lines that set each usual place's base (`base_HOME`, …), absolute or `/nonexistent`. */
function posixBases(): string {
  return BASES.map((b) => {
    const fallback = b === "NVM_DIR" ? "$base_HOME/.nvm" : "/nonexistent";
    return `  case \${${b}:-} in /*) base_${b}=$${b} ;; *) base_${b}=${fallback} ;; esac`;
  }).join("\n");
}

/** The candidates of the sh script after the recorded Deno: PATH, then the usual places. */
function posixCandidates(): string {
  const usual = USUAL_PLACES.map((p) => (p.base ? `"$base_${p.base}"/${p.path}` : p.path));
  return ['"$(command -v deno 2>/dev/null)"', ...usual].join(" \\\n    ");
}

/** The doctor report of a copy that cannot run (no Deno, or its code missing), as `doctor [--json]` print it. */
function doctorReports(spec: LauncherSpec, check: Check): { text: string; json: string } {
  const text = [
    `openviking-kimi doctor ${spec.version}`,
    `✗ ${check.id}: ${check.summary}`,
    `    fix: ${check.fix}`,
    "1 problem(s) found.",
  ].join("\n");
  const json = JSON.stringify({ version: spec.version, ok: false, checks: [check] }, null, 2);
  return { text, json };
}

/** The POSIX launcher: its header, the Deno search and the run, then what it does without Deno or code. */
function posixLauncher(spec: LauncherSpec): string {
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(shellQuote).join(" ");
  const marker = JSON.stringify({ dir: spec.dir, deno: spec.deno, id: spec.id });
  return `#!/bin/sh
# openviking-kimi ${spec.version}: runs the program copy in ${spec.dir}
# (bundled from ${spec.source.replace(/\n/g, " ")} by \`openviking-kimi install\`) with Deno and the
# production flags, offline. Deno is looked for where install found it, then on PATH, then in the usual places.
${MARKER}${marker}
dir=${shellQuote(spec.dir)}
deno=${shellQuote(spec.deno)}
if [ ! -f "$deno" ] || [ ! -x "$deno" ]; then
  deno=
${posixBases()}
  for d in ${posixCandidates()}; do
    if [ -f "$d" ] && [ -x "$d" ]; then deno=$d; break; fi
  done
fi
entry=${COPY_FILES.main}
if [ "$1" = hook ] && [ "$#" -eq 2 ]; then case $2 in -*) ;; *) entry=${COPY_FILES.hook} ;; esac; fi
if [ -n "$deno" ] && [ -f "$dir/$entry" ]; then
  umask 077 # what Deno writes in its cache is private too, like every file of ours
  DENO_DIR="$dir/${COPY_FILES.denoDir}" exec "$deno" run ${run} "$dir/$entry" "$@"
fi
${posixCannotRun(spec)}`;
}

/** The end of the POSIX launcher, reached without Deno or without the copy's code: hooks silent, the rest say why. */
function posixCannotRun(spec: LauncherSpec): string {
  const problems = [
    { outcome: "deno-not-found", check: denoNotFound(spec, "posix") },
    { outcome: "copy-incomplete", check: copyIncomplete(spec) },
  ];
  const [noDeno, noCode] = problems.map(({ outcome, check }) => {
    const why = problemLine(check);
    const json = jsonInside(why);
    return [
      `  outcome=${outcome}`,
      `  why=${shellQuote(why)}`,
      `  why_json=${json === why ? '"$why"' : shellQuote(json)}`,
    ].join("\n");
  });
  const reports = problems.map(({ outcome, check }) => {
    const r = doctorReports(spec, check);
    return `  ${outcome}-json)
    cat <<'OPENVIKING_KIMI_JSON'
${r.json}
OPENVIKING_KIMI_JSON
    ;;
  ${outcome}-)
    cat <<'OPENVIKING_KIMI_TEXT'
${r.text}
OPENVIKING_KIMI_TEXT
    ;;`;
  }).join("\n");
  return `# No Deno, or the copy's code is missing: a hook stays silent and exits 0 (Kimi must never break);
# everything else says why.
if [ -z "$deno" ]; then
${noDeno}
else
${noCode}
fi
case $1 in
hook)
  [ -t 0 ] || cat >/dev/null 2>&1
  case \${OPENVIKING_DEBUG:-} in
  1 | [Tt][Rr][Uu][Ee] | [Yy][Ee][Ss] | [Oo][Nn])
    case $2 in *[!a-z-]* | '') event=unknown ;; *) event=$2 ;; esac
    log=\${OPENVIKING_DEBUG_LOG:-}
    case $log in /*) ;; *) log= ;; esac
    if [ -z "$log" ]; then
      case \${OPENVIKING_HOME:-} in
      /*) log=$OPENVIKING_HOME/logs/kimicode-hooks.log ;;
      *) case \${HOME:-} in /*) log=$HOME/.openviking/logs/kimicode-hooks.log ;; esac ;;
      esac
    fi
    if [ -n "$log" ]; then
      (umask 077 && mkdir -p "\${log%/*}" && printf '{"ts":"%s","pid":%s,"source":"kimicode:%s","stage":"done","event":"%s","outcome":"%s","reason":"%s"}\\n' \\
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$$" "$event" "$event" "$outcome" "$why_json" >>"$log") 2>/dev/null
    fi
    ;;
  esac
  exit 0
  ;;
mcp)
  printf 'openviking-kimi mcp: %s\\n' "$why" >&2
  while IFS= read -r line || [ -n "$line" ]; do
    id=$(printf '%s\\n' "$line" | awk 'match($0, /"id"[ \\t]*:[ \\t]*(-?[0-9]+|"[^"\\\\]*")/) { s = substr($0, RSTART, RLENGTH); sub(/^"id"[ \\t]*:[ \\t]*/, "", s); print s }')
    if [ -n "$id" ]; then
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"%s"}}\\n' "$id" "openviking-kimi: $why_json"
    fi
  done
  exit 0
  ;;
doctor)
  json=
  case " $* " in *" --json "*) json=json ;; esac
  case $outcome-$json in
${reports}
  esac
  exit 1
  ;;
esac
printf 'openviking-kimi: %s\\n' "$why" >&2
exit 1
`;
}

/** The Windows launcher (cmd.exe, which Kimi's hooks run through there). */
function windowsLauncher(spec: LauncherSpec): string {
  const check = denoNotFound(spec, "windows");
  const why = problemLine(check).replace(/[%^&|<>]/g, "^$&");
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(cmdQuote).join(" ");
  const win = (p: string) => p.replace(/\//g, "\\");
  const marker = JSON.stringify({ dir: spec.dir, deno: spec.deno, id: spec.id });
  return [
    "@echo off",
    `rem openviking-kimi ${spec.version}: runs the program copy in ${win(spec.dir)} with Deno, offline.`,
    `rem ${MARKER.slice(2)}${marker}`,
    "setlocal",
    `set "dir=${win(spec.dir)}"`,
    'set "deno="',
    `if exist "${win(spec.deno)}" set "deno=${win(spec.deno)}"`,
    'if not defined deno for /f "delims=" %%d in (\'where deno.exe 2^>nul\') do if not defined deno set "deno=%%d"',
    'if not defined deno if exist "%USERPROFILE%\\.deno\\bin\\deno.exe" set "deno=%USERPROFILE%\\.deno\\bin\\deno.exe"',
    "if not defined deno goto nodeno",
    `set "entry=${COPY_FILES.main}"`,
    `if "%~1"=="hook" if not "%~2"=="" if "%~3"=="" set "entry=${COPY_FILES.hook}"`,
    `set "DENO_DIR=%dir%\\${COPY_FILES.denoDir}"`,
    `"%deno%" run ${run} "%dir%\\%entry%" %*`,
    "exit /b %ERRORLEVEL%",
    ":nodeno",
    'if "%~1"=="hook" exit /b 0',
    `echo openviking-kimi: ${why} 1>&2`,
    "exit /b 1",
    "",
  ].join("\r\n");
}

/** What a launcher says of its copy (its marker line), or undefined when the text is not a launcher. */
export function launcherInfo(text: string): { dir: string; deno: string; id: string } | undefined {
  const line = text.split(/\r?\n/).find((l) =>
    l.startsWith(MARKER) || l.startsWith(`rem ${MARKER.slice(2)}`)
  );
  if (!line) return undefined;
  try {
    const info = JSON.parse(line.slice(line.indexOf("{"))) as Record<string, unknown>;
    const [dir, deno, id] = [info.dir, info.deno, info.id];
    if (typeof dir !== "string" || typeof deno !== "string" || typeof id !== "string") return undefined;
    return { dir, deno, id };
  } catch {
    return undefined;
  }
}

/** Whether `path` is an executable file. */
export async function isExecutable(path: string, os: OsFamily): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return info.isFile && (os === "windows" || ((info.mode ?? 0) & 0o111) !== 0);
  } catch {
    return false;
  }
}

/** The files a usual place names (its glob expanded), given the environment. */
async function usualPaths(place: (typeof USUAL_PLACES)[number], env: Env): Promise<string[]> {
  const absolute = (v: string | undefined) => (v?.startsWith("/") ? v : undefined);
  const home = absolute(env.HOME);
  const base = place.base === "NVM_DIR"
    ? absolute(env.NVM_DIR) ?? (home && joinPath(home, ".nvm"))
    : place.base && absolute(env[place.base]);
  if (place.base && !base) return [];
  const full = base ? joinPath(base, place.path) : place.path;
  const star = full.indexOf("*");
  if (star < 0) return [full];
  const parent = full.slice(0, full.lastIndexOf("/", star));
  const rest = full.slice(full.indexOf("/", star));
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(parent)) out.push(`${parent}/${e.name}${rest}`);
  } catch {
    // no such directory
  }
  return out.sort();
}

/**
 * The Deno the launcher would run (the same search, for doctor): the recorded one, then PATH, then the
 * usual places; undefined when there is none.
 */
export async function findDeno(recorded: string, env: Env, os: OsFamily): Promise<string | undefined> {
  if (await isExecutable(recorded, os)) return recorded;
  const exe = os === "windows" ? "deno.exe" : "deno";
  for (const dir of (env.PATH ?? "").split(os === "windows" ? ";" : ":")) {
    if (dir && (await isExecutable(joinPath(dir, exe), os))) return joinPath(dir, exe);
  }
  if (os === "windows") {
    const home = env.USERPROFILE;
    const p = home ? `${home}\\.deno\\bin\\deno.exe` : "";
    return p && (await isExecutable(p, os)) ? p : undefined;
  }
  for (const place of USUAL_PLACES) {
    for (const p of await usualPaths(place, env)) if (await isExecutable(p, os)) return p;
  }
  return undefined;
}
