/**
 * A program copy's launcher: finds Deno (the recorded one, PATH, the usual places) and runs the bundle offline;
 * without it a hook exits 0 in silence, `mcp` answers with the fix, `doctor` reports. `findDeno`: the same search.
 */

import { type Env, joinPath } from "../lib/paths.ts";
import { COPY_FILES, COPY_RUN_FLAGS, shellQuote } from "../lib/self.ts";
import { cmdQuote, type OsFamily } from "./placement.ts";
import type { Check } from "./check.ts";

/** What a launcher needs to know. */
export interface LauncherSpec {
  /** The copy's directory. */
  dir: string;
  /** The Deno install used. */
  deno: string;
  /** The production flags (deno.json's `cli` task). */
  flags: readonly string[];
  version: string;
  id: string;
  /** The checkout the copy was built from. */
  source: string;
}

/** A failing doctor check. */
type Failing = Check & { status: "fail"; fix: string };

const MARKER = "# openviking-kimi copy ";

/** Where else Deno usually lives, in search order: `$VAR/path` (an absolute VAR only) or a fixed path; `*` a glob. */
const USUAL: readonly { base?: "DENO_INSTALL" | "HOME" | "NVM_DIR"; path: string }[] = [
  { base: "DENO_INSTALL", path: "bin/deno" },
  { base: "HOME", path: ".deno/bin/deno" },
  { base: "HOME", path: ".local/bin/deno" },
  { path: "/opt/homebrew/bin/deno" },
  { path: "/usr/local/bin/deno" },
  { path: "/usr/bin/deno" },
  { base: "NVM_DIR", path: "versions/node/*/bin/deno" },
];

const USUAL_WORDS =
  "~/.deno/bin, ~/.local/bin, $DENO_INSTALL/bin, /opt/homebrew/bin, /usr/local/bin, /usr/bin, nvm's Node versions";

const install = (mode?: "config" | "plugin") =>
  mode === undefined
    ? "`deno task -q install` (with `--mode plugin` for plugin mode)"
    : `\`deno task -q install${mode === "plugin" ? " --mode plugin" : ""}\``;

/** The failing check of a copy whose Deno is gone: what is missing and how to get it back. */
export function denoNotFound(
  spec: Pick<LauncherSpec, "deno" | "source"> & { mode?: "config" | "plugin" },
  os: OsFamily,
): Failing {
  return {
    id: "deno",
    status: "fail",
    summary: `Deno not found at ${spec.deno} (the one install used), on PATH or in the usual places (${
      os === "windows" ? "%USERPROFILE%\\.deno\\bin" : USUAL_WORDS
    }): the hooks do nothing and the MCP server cannot start`,
    fix:
      `reinstall with: install Deno 2 (\`npm install -g deno\`, or see https://deno.com), then run ${
        install(spec.mode)
      } ` +
      `in an openviking-kimi checkout (this copy was built from ${spec.source}); or install a release binary, which needs no Deno`,
  };
}

/** The failing check of a launcher whose copy lost its code (the version directory moved or deleted, a bundle missing). */
function copyIncomplete(spec: Pick<LauncherSpec, "dir" | "source">): Failing {
  return {
    id: "command",
    status: "fail",
    summary:
      `the program copy ${spec.dir} is gone or incomplete (${COPY_FILES.main} or ${COPY_FILES.hook} is missing): ` +
      "the hooks do nothing and the MCP server cannot start",
    fix:
      `run install again: ${install()} in an openviking-kimi checkout (this copy was built from ${spec.source}); ` +
      "or install a release binary, which needs no Deno",
  };
}

/** A check in one line: "Deno not found at …; reinstall with …". */
const oneLine = (c: Failing) => `${c.summary.replace(/: the hooks do nothing.*$/, "")}; ${c.fix}`;

/** The launcher's file name on `os`. */
export function launcherName(os: OsFamily): string {
  return os === "windows" ? "openviking-kimi.cmd" : "openviking-kimi";
}

/** The launcher's text: a POSIX sh script, or a cmd.exe batch file. */
export function launcherText(spec: LauncherSpec, os: OsFamily): string {
  const marker = JSON.stringify({ dir: spec.dir, deno: spec.deno, id: spec.id });
  return os === "windows" ? windowsLauncher(spec, marker) : posixLauncher(spec, marker);
}

function posixLauncher(spec: LauncherSpec, marker: string): string {
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(shellQuote).join(" ");
  const usual = USUAL.map((p) => (p.base ? `"$${p.base[0].toLowerCase()}"/${p.path}` : p.path)).join(" ");
  const problem = (c: Failing, outcome: string) => {
    const text = [
      `openviking-kimi doctor ${spec.version}`,
      `✗ ${c.id}: ${c.summary}`,
      `    fix: ${c.fix}`,
      "1 problem(s) found.",
    ];
    const json = JSON.stringify({ version: spec.version, ok: false, checks: [c] }, null, 2);
    const why = oneLine(c);
    return `outcome=${outcome} why=${shellQuote(why)} why_json=${
      shellQuote(JSON.stringify(why).slice(1, -1))
    } ` +
      `text=${shellQuote(text.join("\n"))} json=${shellQuote(json)}`;
  };
  return `#!/bin/sh
# openviking-kimi ${spec.version}: runs the program copy in ${spec.dir}
# (bundled from ${spec.source.replace(/\n/g, " ")} by \`openviking-kimi install\`) with Deno, offline.
${MARKER}${marker}
dir=${shellQuote(spec.dir)}
deno=${shellQuote(spec.deno)}
if [ ! -f "$deno" ] || [ ! -x "$deno" ]; then
  deno=
  case \${DENO_INSTALL:-} in /*) d=$DENO_INSTALL ;; *) d=/nonexistent ;; esac
  case \${HOME:-} in /*) h=$HOME ;; *) h=/nonexistent ;; esac
  case \${NVM_DIR:-} in /*) n=$NVM_DIR ;; *) n=$h/.nvm ;; esac
  for x in "$(command -v deno 2>/dev/null)" ${usual}; do
    if [ -f "$x" ] && [ -x "$x" ]; then deno=$x; break; fi
  done
fi
entry=${COPY_FILES.main}
if [ "$1" = hook ] && [ "$#" -eq 2 ]; then case $2 in -*) ;; *) entry=${COPY_FILES.hook} ;; esac; fi
if [ -n "$deno" ] && [ -f "$dir/$entry" ]; then
  umask 077
  DENO_DIR="$dir/${COPY_FILES.denoDir}" exec "$deno" run ${run} "$dir/$entry" "$@"
fi
# No Deno, or the copy's code is gone: a hook stays silent (Kimi must never break); the rest say why.
if [ -z "$deno" ]; then ${problem(denoNotFound(spec, "posix"), "deno-not-found")}
else ${problem(copyIncomplete(spec), "copy-incomplete")}; fi
case $1 in
hook)
  [ -t 0 ] || cat >/dev/null 2>&1
  case \${OPENVIKING_DEBUG:-} in 1 | [Tt][Rr][Uu][Ee] | [Yy][Ee][Ss] | [Oo][Nn])
    case $2 in *[!a-z-]* | '') event=unknown ;; *) event=$2 ;; esac
    case \${OPENVIKING_DEBUG_LOG:-} in /*) log=$OPENVIKING_DEBUG_LOG ;; *) case \${OPENVIKING_HOME:-} in
      /*) log=$OPENVIKING_HOME/logs/kimicode-hooks.log ;;
      *) case \${HOME:-} in /*) log=$HOME/.openviking/logs/kimicode-hooks.log ;; *) log= ;; esac ;; esac ;; esac
    [ -n "$log" ] && (umask 077 && mkdir -p "\${log%/*}" && printf '{"ts":"%s","pid":%s,"source":"kimicode:%s","stage":"done","event":"%s","outcome":"%s","reason":"%s"}\\n' \\
      "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$$" "$event" "$event" "$outcome" "$why_json" >>"$log") 2>/dev/null ;;
  esac
  exit 0 ;;
mcp)
  printf 'openviking-kimi mcp: %s\\n' "$why" >&2
  while IFS= read -r line || [ -n "$line" ]; do
    id=$(printf '%s\\n' "$line" | awk 'match($0, /"id"[ \\t]*:[ \\t]*(-?[0-9]+|"[^"\\\\]*")/) { s = substr($0, RSTART, RLENGTH); sub(/^"id"[ \\t]*:[ \\t]*/, "", s); print s }')
    [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"openviking-kimi: %s"}}\\n' "$id" "$why_json"
  done
  exit 0 ;;
doctor) case " $* " in *" --json "*) printf '%s\\n' "$json" ;; *) printf '%s\\n' "$text" ;; esac; exit 1 ;;
esac
printf 'openviking-kimi: %s\\n' "$why" >&2
exit 1
`;
}

function windowsLauncher(spec: LauncherSpec, marker: string): string {
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(cmdQuote).join(" ");
  const win = (p: string) => p.replace(/\//g, "\\");
  const why = oneLine(denoNotFound(spec, "windows")).replace(/[%^&|<>]/g, "^$&");
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
  try {
    const { dir, deno, id } = JSON.parse(line!.slice(line!.indexOf("{"))) as Record<string, unknown>;
    return typeof dir === "string" && typeof deno === "string" && typeof id === "string"
      ? { dir, deno, id }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `path` is an executable file. */
export async function isExecutable(path: string, os: OsFamily): Promise<boolean> {
  const info = await Deno.stat(path).catch(() => undefined);
  return !!info?.isFile && (os === "windows" || ((info.mode ?? 0) & 0o111) !== 0);
}

/** The Deno the launcher would run: the recorded one, then PATH, then the usual places; undefined: none. */
export async function findDeno(recorded: string, env: Env, os: OsFamily): Promise<string | undefined> {
  const exe = os === "windows" ? "deno.exe" : "deno";
  const path = (env.PATH ?? "").split(os === "windows" ? ";" : ":").filter(Boolean).map((d) =>
    joinPath(d, exe)
  );
  const absolute = (v: string | undefined) => (v?.startsWith("/") ? v : undefined);
  const bases = {
    DENO_INSTALL: absolute(env.DENO_INSTALL),
    HOME: absolute(env.HOME),
    NVM_DIR: absolute(env.NVM_DIR) ?? `${absolute(env.HOME) ?? "/nonexistent"}/.nvm`,
  };
  const usual = os === "windows"
    ? (env.USERPROFILE ? [`${env.USERPROFILE}\\.deno\\bin\\deno.exe`] : [])
    : USUAL.flatMap((p) => {
      const base = p.base ? bases[p.base] : "";
      return base === undefined ? [] : [p.base ? joinPath(base, p.path) : p.path];
    });
  for (const candidate of [recorded, ...path, ...usual]) {
    const star = candidate.indexOf("*");
    const found = star < 0 ? [candidate] : await glob(candidate, star);
    for (const f of found) if (await isExecutable(f, os)) return f;
  }
  return undefined;
}

/** The paths a pattern with one `*` in a directory name names, sorted. */
async function glob(pattern: string, star: number): Promise<string[]> {
  const parent = pattern.slice(0, pattern.lastIndexOf("/", star));
  const rest = pattern.slice(pattern.indexOf("/", star));
  const names = await Array.fromAsync(Deno.readDir(parent), (e) => e.name).catch(() => [] as string[]);
  return names.sort().map((n) => `${parent}/${n}${rest}`);
}
