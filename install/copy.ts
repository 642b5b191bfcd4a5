/**
 * The program copy an install from a checkout registers: the program bundled into plain JavaScript, its npm
 * dependencies inside (`deno bundle`; nothing is fetched when it runs), placed with its launcher
 * (install/launcher.ts) in `~/.openviking/agent-integrations/kimicode/versions/<version>-<content hash>/`.
 * Its code never changes once placed (only the launcher and copy.json may be rewritten, atomically, for a
 * new Deno path), so an install never changes code under a running session; the checkout can move or go.
 *
 * Why a bundle: measured here, the prompt hook from a bundle starts without Deno's npm resolver and loads
 * one file instead of ~40 modules (see docs/BENCHMARKS.md); the module graph plus a populated DENO_DIR would
 * keep both costs and a copy of npm's cache. Two bundles: `hook.js` holds only what `hook <event>` needs (the
 * launcher routes those calls there), `main.js` everything. What this relies on is pinned: the bundle is built
 * by the Deno running install (2.9: `deno bundle --platform deno -o`, experimental) from the locked npm
 * versions (`--frozen-lockfile`), and checked to run before anything is written.
 *
 * When a previous version goes: once nothing uses it — no process of it runs (each holds a shared lock on the
 * copy's in-use.lock for its life, and a Kimi session's MCP server lives as long as the session, so a session
 * still holding that version's hook commands keeps it) and no Kimi home we installed into registers it.
 *
 * This module builds a copy and names where versions live; copy-place.ts puts one in place, copy-homes.ts keeps
 * the list of Kimi homes installed into, copy-sweep.ts removes the versions nothing uses.
 */

import { COPY_FILES, COPY_RUN_FLAGS } from "../lib/self.ts";
import { sha256Hex } from "../lib/hash.ts";
import { type Env, integrationDir, joinPath } from "../lib/paths.ts";
import { VERSION } from "../lib/version.ts";

/** The entry points bundled, and the file each becomes. */
const ENTRIES: readonly { source: string; out: string }[] = [
  { source: "main.ts", out: COPY_FILES.main },
  { source: "commands/hook-main.ts", out: COPY_FILES.hook },
];

/** A built program copy: its id and its files (not yet placed anywhere). */
export interface BuiltCopy {
  id: string;
  files: { name: string; bytes: Uint8Array }[];
  /** Total size in bytes. */
  bytes: number;
}

/** Where the versions live: `~/.openviking/agent-integrations/kimicode/versions`. */
export function versionsDir(env: Env): string {
  return joinPath(integrationDir(env), "versions");
}

/** The first lines of a process's stderr that say what went wrong (colours removed). */
function cause(stderr: Uint8Array): string {
  // deno-lint-ignore no-control-regex
  const text = new TextDecoder().decode(stderr).replace(/\u001b\[[0-9;]*m/g, "");
  return text.split("\n").map((l) => l.trim()).filter(Boolean).slice(0, 4).join(" / ");
}

/** Runs `deno <args>`; returns why it failed, or undefined. */
async function runDeno(
  deno: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<string | undefined> {
  const out = await new Deno.Command(deno, {
    args,
    ...options,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  return out.success ? undefined : cause(out.stderr) || `exit ${out.code}`;
}

/** Bundles the checkout at `root` into `out` and checks the result runs offline under the production flags. */
async function bundleInto(
  root: string,
  deno: string,
  flags: readonly string[],
  out: string,
): Promise<string> {
  const failures = await Promise.all(ENTRIES.map((e) =>
    runDeno(deno, [
      "bundle",
      "--quiet",
      "--platform",
      "deno",
      "--frozen-lockfile",
      "--config",
      joinPath(root, "deno.json"),
      "--output",
      joinPath(out, e.out),
      joinPath(root, e.source),
    ], { cwd: root }) // the bundle names modules relative to its cwd: our own ones the same in any checkout
  ));
  const failed = failures.find((f) => f !== undefined);
  if (failed) {
    return `could not bundle the program (\`deno bundle\`, Deno ${Deno.version.deno}): ${failed}. Run ` +
      "`deno task check` in the checkout, or install a release binary";
  }
  const ran = await new Deno.Command(deno, {
    args: ["run", ...flags, ...COPY_RUN_FLAGS, joinPath(out, COPY_FILES.main), "version"],
    env: { DENO_DIR: joinPath(out, COPY_FILES.denoDir) },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const said = new TextDecoder().decode(ran.stdout).trim();
  if (!ran.success || said !== VERSION) {
    return `the bundled program does not run (\`version\` said ${JSON.stringify(said)}, exit ${ran.code}: ${
      cause(ran.stderr)
    })`;
  }
  return "";
}

/** An npm package's path in Deno's cache as a bundle names it (relative to the checkout: `../../…/npm/registry.npmjs.org/`). */
const NPM_CACHE_PATH = /(?:\.\.\/)*[^\s"'`]*?\/npm\/registry\.npmjs\.org\//g;

/** The bundles' bytes with where Deno's npm cache is left out: what the version hashes (same code, same id). */
function comparable(bytes: Uint8Array): Uint8Array {
  const text = new TextDecoder().decode(bytes).replace(NPM_CACHE_PATH, "<npm>/");
  return new TextEncoder().encode(text);
}

/** Whether two bundles hold the same code: their bytes alike once where Deno's npm cache is is left out. */
export function sameCode(a: Uint8Array, b: Uint8Array): boolean {
  const same = (x: Uint8Array, y: Uint8Array) => x.length === y.length && x.every((v, i) => v === y[i]);
  return same(a, b) || same(comparable(a), comparable(b));
}

const builds = new Map<string, Promise<BuiltCopy>>();

/** Builds (once per process and checkout) the program copy of the checkout at `root` with `deno`. */
export function buildCopy(root: string, deno: string, flags: readonly string[]): Promise<BuiltCopy> {
  const key = [root, deno, ...flags].join("\0");
  let build = builds.get(key);
  if (!build) {
    build = (async () => {
      const tmp = await Deno.makeTempDir({ prefix: "openviking-kimi-copy-" });
      try {
        const failed = await bundleInto(root, deno, flags, tmp);
        if (failed) throw new Error(failed);
        const files = await Promise.all(
          ENTRIES.map(async (e) => ({ name: e.out, bytes: await Deno.readFile(joinPath(tmp, e.out)) })),
        );
        const all = new Uint8Array(files.reduce((n, f) => n + f.bytes.length + 1, 0));
        let at = 0;
        for (const f of files) {
          all.set(f.bytes, at);
          at += f.bytes.length + 1;
        }
        return {
          id: `${VERSION}-${(await sha256Hex(comparable(all))).slice(0, 12)}`,
          files,
          bytes: all.length,
        };
      } finally {
        await Deno.remove(tmp, { recursive: true }).catch(() => {});
      }
    })();
    builds.set(key, build);
    build.catch(() => builds.delete(key));
  }
  return build;
}
