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
 */

import { COPY_FILES, COPY_RUN_FLAGS } from "../runtime/self.ts";
import { readTextIfExists, writeFileAtomic } from "../runtime/fs.ts";
import { sha256Hex } from "../runtime/hash.ts";
import { type Env, joinPath } from "../runtime/paths.ts";
import { VERSION } from "../runtime/version.ts";
import { PLUGIN_ID } from "./spec.ts";
import { checkCreatable, describeFsError, makeDirs, moveAside } from "./files.ts";
import { integrationDir, type OsFamily } from "./placement.ts";
import { launcherName, type LauncherSpec, launcherText } from "./launcher.ts";
import { attempt, type Step } from "./steps.ts";

/** The entry points bundled, and the file each becomes. */
const ENTRIES: readonly { source: string; out: string }[] = [
  { source: "main.ts", out: COPY_FILES.main },
  { source: "hooks/hook.ts", out: COPY_FILES.hook },
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

/** The file listing the Kimi homes installed into (one absolute path a line), for the removal rule. */
function homesFile(env: Env): string {
  return joinPath(integrationDir(env), "kimi-homes");
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

/** Where a copy goes and what its launcher and copy.json say. */
export interface CopyPlacement {
  copy: BuiltCopy;
  dir: string;
  /** The checkout it was built from, as its launcher and copy.json say. */
  source: string;
  launcher: string;
  launcherText: string;
  infoText: string;
}

/**
 * The checkout a placed version says it was built from (its copy.json), or undefined when `id` is not in
 * place. The same code installed from another clone keeps it: its launcher and records stay as they are.
 */
export async function placedSource(env: Env, id: string): Promise<string | undefined> {
  const text = await readTextIfExists(joinPath(versionsDir(env), id, COPY_FILES.info)).catch(() => undefined);
  try {
    const source = (JSON.parse(text ?? "null") as { source?: unknown } | null)?.source;
    return typeof source === "string" && source !== "" ? source : undefined;
  } catch {
    return undefined;
  }
}

/** The placement of `copy` for this environment and the Deno that runs it. */
export function copyPlacement(
  copy: BuiltCopy,
  env: Env,
  os: OsFamily,
  spec: Pick<LauncherSpec, "deno" | "flags" | "source">,
): CopyPlacement {
  const dir = joinPath(versionsDir(env), copy.id);
  const full: LauncherSpec = { ...spec, dir, id: copy.id, version: VERSION };
  const info = {
    version: VERSION,
    id: copy.id,
    flags: spec.flags,
    deno: spec.deno,
    source: spec.source,
    // What the bundle was made with: `deno bundle` is experimental in Deno 2.9, so the builder is recorded.
    bundledBy: `deno ${Deno.version.deno}`,
  };
  return {
    copy,
    dir,
    source: spec.source,
    launcher: joinPath(dir, "bin", launcherName(os)),
    launcherText: launcherText(full, os),
    infoText: `${JSON.stringify(info, null, 2)}\n`,
  };
}

/** Whether two bundles hold the same code: their bytes alike once where Deno's npm cache is is left out. */
function sameCode(a: Uint8Array, b: Uint8Array): boolean {
  const same = (x: Uint8Array, y: Uint8Array) => x.length === y.length && x.every((v, i) => v === y[i]);
  return same(a, b) || same(comparable(a), comparable(b));
}

/**
 * What is at a copy's place now: nothing, the same copy, the same code with another launcher, or a wreck.
 * The code is compared as the version hashes it, so the same program built in another clone (another path
 * to Deno's npm cache inside the bundles) is the copy in place, not a wreck to write again.
 */
async function placedState(p: CopyPlacement): Promise<"absent" | "same" | "relaunch" | "broken"> {
  if (!(await Deno.lstat(p.dir).then(() => true, () => false))) return "absent";
  for (const f of p.copy.files) {
    const bytes = await Deno.readFile(joinPath(p.dir, f.name)).catch(() => undefined);
    if (!bytes || !sameCode(bytes, f.bytes)) return "broken";
  }
  const lock = await Deno.stat(joinPath(p.dir, COPY_FILES.lock)).then((s) => s.isFile, () => false);
  if (!lock) return "broken";
  const [launcher, info] = await Promise.all([
    readTextIfExists(p.launcher).catch(() => undefined),
    readTextIfExists(joinPath(p.dir, COPY_FILES.info)).catch(() => undefined),
  ]);
  return launcher === p.launcherText && info === p.infoText ? "same" : "relaunch";
}

/** Writes a whole copy into a staging directory next to its place and renames it into place. */
async function writeCopy(p: CopyPlacement, os: OsFamily): Promise<void> {
  const staging = `${joinPath(p.dir, "..")}/.${p.copy.id}.${crypto.randomUUID().slice(0, 8)}.staging`;
  const exec = os === "windows" ? 0o600 : 0o700;
  try {
    await Deno.mkdir(joinPath(staging, "bin"), { recursive: true, mode: 0o700 });
    await Deno.mkdir(joinPath(staging, COPY_FILES.denoDir), { mode: 0o700 });
    for (const f of p.copy.files) await Deno.writeFile(joinPath(staging, f.name), f.bytes, { mode: 0o600 });
    await Deno.writeTextFile(joinPath(staging, COPY_FILES.info), p.infoText, { mode: 0o600 });
    await Deno.writeTextFile(joinPath(staging, COPY_FILES.lock), "", { mode: 0o600 });
    const launcher = joinPath(staging, "bin", launcherName(os));
    await Deno.writeTextFile(launcher, p.launcherText, { mode: exec });
    if (os !== "windows") {
      await Deno.chmod(launcher, exec);
      await Deno.chmod(staging, 0o700);
    }
    await Deno.rename(staging, p.dir);
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  }
}

/**
 * The step that places the copy (none when the same copy is in place already); the undo takes out what it
 * placed; once every step succeeded, the versions nothing uses any more are removed.
 */
export async function placeCopyStep(
  p: CopyPlacement,
  env: Env,
  os: OsFamily,
  kimiHome: string,
): Promise<Step | undefined> {
  const state = await placedState(p);
  const listed = (await readTextIfExists(homesFile(env)).catch(() => undefined))?.split("\n") ?? [];
  if (state === "same" && listed.includes(kimiHome)) return undefined;
  const size = `${Math.round(p.copy.bytes / 1024)} KB`;
  return {
    describe: state === "same"
      ? `record ${kimiHome} in ${homesFile(env)}`
      : `${state === "relaunch" ? "update the launcher of" : "place"} the program copy ${p.dir} (${size})`,
    check: () => checkCreatable(p.dir),
    run: () =>
      attempt(`place the program copy ${p.dir}`, async () => {
        const dirs = await makeDirs(versionsDir(env), { private: true });
        const undos: (() => Promise<void>)[] = [() => dirs.undo()];
        try {
          undos.unshift(await recordHome(env, kimiHome, listed));
          if (state === "relaunch") undos.unshift(await rewriteLauncher(p, os));
          let aside: string | undefined;
          if (state === "broken") aside = await moveAside(p.dir);
          if (state === "broken" || state === "absent") {
            await writeCopy(p, os);
            undos.unshift(async () => {
              await Deno.remove(p.dir, { recursive: true });
              if (aside) await Deno.rename(aside, p.dir);
            });
          }
          return {
            message: state === "same"
              ? undefined
              : state === "relaunch"
              ? `launcher of the program copy updated: ${p.launcher}`
              : `program copy in place: ${p.dir} (${size}; it runs without the checkout)`,
            changed: p.dir,
            undo: {
              undo: async () => {
                for (const u of undos) await u();
              },
            },
            commit: async () => {
              if (aside) await Deno.remove(aside, { recursive: true }).catch(() => {});
            },
          };
        } catch (error) {
          for (const u of undos) await u().catch(() => {});
          throw error;
        }
      }),
  };
}

/** The step that records `kimiHome` among the homes installed into (none when it is listed already). */
export async function homeStep(env: Env, kimiHome: string): Promise<Step | undefined> {
  const listed = (await readTextIfExists(homesFile(env)).catch(() => undefined))?.split("\n") ?? [];
  if (listed.includes(kimiHome)) return undefined;
  return {
    describe: `record ${kimiHome} in ${homesFile(env)}`,
    check: () => checkCreatable(homesFile(env)),
    run: () =>
      attempt(`record ${kimiHome} in ${homesFile(env)}`, async () => {
        const dirs = await makeDirs(integrationDir(env), { private: true });
        const undo = await recordHome(env, kimiHome, listed);
        return { changed: homesFile(env), undo: { undo: async () => (await undo(), await dirs.undo()) } };
      }),
  };
}

/** Adds `home` to the list of Kimi homes installed into; returns the undo. */
async function recordHome(env: Env, home: string, listed: string[]): Promise<() => Promise<void>> {
  if (listed.includes(home)) return () => Promise.resolve();
  const path = homesFile(env);
  const before = await readTextIfExists(path);
  const kept = listed.filter((l) => l.trim() !== "");
  await writeFileAtomic(path, `${[...kept, home].join("\n")}\n`, { privateDir: false });
  return async () => {
    if (before === undefined) await Deno.remove(path).catch(() => {});
    else await writeFileAtomic(path, before, { privateDir: false });
  };
}

/** Rewrites the launcher and copy.json of a copy in place (temp + rename each); returns the undo. */
async function rewriteLauncher(p: CopyPlacement, os: OsFamily): Promise<() => Promise<void>> {
  const info = joinPath(p.dir, COPY_FILES.info);
  const [oldLauncher, oldInfo] = [await readTextIfExists(p.launcher), await readTextIfExists(info)];
  const mode = os === "windows" ? 0o600 : 0o700;
  await Deno.mkdir(joinPath(p.dir, "bin"), { recursive: true, mode: 0o700 });
  await writeFileAtomic(p.launcher, p.launcherText, { mode, privateDir: false });
  await writeFileAtomic(info, p.infoText, { privateDir: false });
  return async () => {
    if (oldLauncher !== undefined) {
      await writeFileAtomic(p.launcher, oldLauncher, { mode, privateDir: false });
    }
    if (oldInfo !== undefined) await writeFileAtomic(info, oldInfo, { privateDir: false });
  };
}

/** The Kimi homes of `env` installed into, and `also`. */
async function knownHomes(env: Env, also: string[]): Promise<string[]> {
  const listed = (await readTextIfExists(homesFile(env)).catch(() => undefined))?.split("\n") ?? [];
  return [
    ...new Set(
      [...listed, ...also].map((l) => l.trim()).filter((l) => l.startsWith("/") || /^[A-Za-z]:/.test(l)),
    ),
  ];
}

/** The first Kimi home whose registration (config.toml, mcp.json, plugin launcher) names `id`. */
async function registeredIn(id: string, homes: string[]): Promise<string | undefined> {
  for (const home of homes) {
    const plugin = joinPath(home, "plugins", "managed", PLUGIN_ID, "bin");
    const files = [
      joinPath(home, "config.toml"),
      joinPath(home, "mcp.json"),
      joinPath(plugin, launcherName("posix")),
      joinPath(plugin, launcherName("windows")),
    ];
    for (const f of files) {
      if ((await readTextIfExists(f).catch(() => undefined))?.includes(id)) return home;
    }
  }
  return undefined;
}

/** A version kept by a sweep, and why. */
interface KeptVersion {
  dir: string;
  why: string;
}

/**
 * Removes every version but `keep` that nothing uses: no process of it runs (its in-use.lock can be locked
 * exclusively) and no Kimi home installed into registers it. Leftovers of interrupted placements older than
 * an hour go too. Returns what was removed and what was kept.
 */
async function sweepVersions(
  env: Env,
  options: { keep?: string; kimiHome: string; now?: number },
): Promise<{ removed: string[]; kept: KeptVersion[] }> {
  const dir = versionsDir(env);
  const removed: string[] = [];
  const kept: KeptVersion[] = [];
  const homes = await knownHomes(env, [options.kimiHome]);
  const now = options.now ?? Date.now();
  let entries: Deno.DirEntry[] = [];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch {
    return { removed, kept };
  }
  for (const e of entries) {
    const path = joinPath(dir, e.name);
    if (!e.isDirectory || e.name === options.keep) continue;
    if (e.name.startsWith(".")) {
      const age = now - ((await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? now);
      if (age > 3_600_000) await Deno.remove(path, { recursive: true }).catch(() => {});
      continue;
    }
    const home = await registeredIn(e.name, homes);
    if (home) {
      kept.push({ dir: path, why: `registered in ${home}` });
      continue;
    }
    let lock: Deno.FsFile | undefined;
    try {
      lock = await Deno.open(joinPath(path, COPY_FILES.lock), { read: true, write: true });
      if (!(await lock.tryLock(true))) {
        lock.close();
        kept.push({ dir: path, why: "in use by a running process (a Kimi session's MCP server or a hook)" });
        continue;
      }
    } catch {
      // No lock file: not a complete copy, nothing can hold it.
    }
    try {
      await Deno.remove(path, { recursive: true });
      removed.push(path);
    } catch (error) {
      kept.push({ dir: path, why: `it could not be removed (${describeFsError(error)})` });
    } finally {
      lock?.close();
    }
  }
  return { removed, kept };
}

/** The messages of a sweep: one line per version removed, and a note per version kept. */
function sweepMessages(sweep: { removed: string[]; kept: KeptVersion[] }): string[] {
  return [
    ...sweep.removed.map((d) => `previous version removed: ${d}`),
    ...sweep.kept.map((k) => `kept the previous version ${k.dir}: ${k.why}; a later install removes it`),
  ];
}

/**
 * The last step of a run that changed something: nothing to do until every step succeeded, then the sweep
 * (so a failed run never removes a version it would have to put back).
 */
export function sweepStep(env: Env, options: { keep?: string; kimiHome: string }): Step {
  return {
    describe: `remove the versions in ${versionsDir(env)} that nothing uses any more`,
    run: () => Promise.resolve({ commit: async () => sweepMessages(await sweepVersions(env, options)) }),
  };
}
