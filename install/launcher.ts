/**
 * A program copy's launcher: finds Deno (the recorded one, PATH, the usual places) and runs the bundle offline;
 * without it (or its code) a hook exits 0 in silence, every other command says why on stderr and exits 1.
 * `findDeno`: the same search.
 */

import { type Env, joinPath } from "../lib/paths.ts";
import { COPY_FILES, COPY_RUN_FLAGS, shellQuote } from "../lib/self.ts";
import type { OsFamily } from "./placement.ts";
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
): Failing {
  return {
    id: "deno",
    status: "fail",
    summary: `Deno not found at ${spec.deno} (the one install used), on PATH or in the usual places ` +
      `(${USUAL_WORDS}): the hooks do nothing and the MCP server cannot start`,
    fix:
      `reinstall with: install Deno 2 (\`npm install -g deno\`, or see https://deno.com), then run ${
        install(spec.mode)
      } ` +
      `in an openviking-kimi checkout (this copy was built from ${spec.source}); or install a release binary, which needs no Deno`,
  };
}

/** What a launcher whose copy lost its code (the version directory moved or deleted, a bundle missing) says. */
const copyIncomplete = (spec: Pick<LauncherSpec, "dir" | "source">) =>
  `the program copy ${spec.dir} is gone or incomplete (${COPY_FILES.main} or ${COPY_FILES.hook} is missing); ` +
  `run install again: ${install()} in an openviking-kimi checkout (this copy was built from ${spec.source}); ` +
  "or install a release binary, which needs no Deno";

/** A check in one line: "Deno not found at …; reinstall with …". */
const oneLine = (c: Failing) => `${c.summary.replace(/: the hooks do nothing.*$/, "")}; ${c.fix}`;

/** The launcher's text: a POSIX sh script (a checkout installs on POSIX systems only). */
export function launcherText(spec: LauncherSpec): string {
  const marker = JSON.stringify({ dir: spec.dir, deno: spec.deno, id: spec.id });
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(shellQuote).join(" ");
  const usual = USUAL.map((p) => (p.base ? `"$${p.base[0].toLowerCase()}"/${p.path}` : p.path)).join(" ");
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
if [ -z "$deno" ]; then why=${shellQuote(oneLine(denoNotFound(spec)))}
else why=${shellQuote(copyIncomplete(spec))}; fi
if [ "$1" = hook ]; then [ -t 0 ] || cat >/dev/null 2>&1; exit 0; fi
printf 'openviking-kimi: %s\\n' "$why" >&2
exit 1
`;
}

/** What a launcher says of its copy (its marker line), or undefined when the text is not a launcher. */
export function launcherInfo(text: string): { dir: string; deno: string; id: string } | undefined {
  const line = text.split(/\r?\n/).find((l) => l.startsWith(MARKER));
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
export async function findDeno(recorded: string, env: Env): Promise<string | undefined> {
  const path = (env.PATH ?? "").split(":").filter(Boolean).map((d) => joinPath(d, "deno"));
  const absolute = (v: string | undefined) => (v?.startsWith("/") ? v : undefined);
  const bases = {
    DENO_INSTALL: absolute(env.DENO_INSTALL),
    HOME: absolute(env.HOME),
    NVM_DIR: absolute(env.NVM_DIR) ?? `${absolute(env.HOME) ?? "/nonexistent"}/.nvm`,
  };
  const usual = USUAL.flatMap((p) => {
    const base = p.base ? bases[p.base] : "";
    return base === undefined ? [] : [p.base ? joinPath(base, p.path) : p.path];
  });
  for (const candidate of [recorded, ...path, ...usual]) {
    const star = candidate.indexOf("*");
    const found = star < 0 ? [candidate] : await glob(candidate, star);
    for (const f of found) if (await isExecutable(f, "posix")) return f;
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
