/**
 * The program install registers, however this process runs: the compiled binary (config mode runs its copy
 * in `…/kimicode/bin/`), an installed program copy installing itself (its own launcher), or a checkout (a
 * program copy built from it, placed, recorded per Kimi home and swept); the steps that put it in place.
 */

import { readKimiState } from "./detect.ts";
import { launcherName, type LauncherSpec, launcherText } from "./launcher.ts";
import {
  commandAt,
  executableFileName,
  installedBinaryPath,
  type OsFamily,
  pathCommand,
  sameBytes,
  sameFile,
} from "./placement.ts";
import type { PluginFile } from "./kimi-home.ts";
import { EXECUTABLE_NAME, PLUGIN_ID } from "./spec.ts";
import {
  attempt,
  checkCreatable,
  type Context,
  describeFsError,
  type Done,
  makeDirs,
  type Note,
  type Plan,
  type Step,
  swapIn,
  swapStep,
} from "./transaction.ts";
import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { sha256Hex } from "../lib/hash.ts";
import { dirName, type Env, integrationDir, joinPath, kimiHome, orNoHome } from "../lib/paths.ts";
import { COPY_FILES, COPY_RUN_FLAGS, productionFlags, releaseCopyLock } from "../lib/self.ts";
import { VERSION } from "../lib/version.ts";

/** The program the registrations run, once in place. */
export interface Program {
  /** What config mode's hooks and `mcp.json` run: the binary's place, or a program copy's launcher. */
  command: string;
  /** The plugin directory's `bin/` file: the binary, or the launcher. */
  pluginBin: PluginFile;
  /** Where the plugin came from (the registry record's `originalSource`). */
  source: string;
  /** A note on what runs. */
  note: Note;
  /** The program copy's id (the sweep keeps it). */
  keep?: string;
}

/**
 * The compiled binary: config mode and the PATH command run its copy in `…/kimicode/bin/` (copied unless the
 * same bytes are there); the Kimi home is recorded among those installed into.
 */
async function binaryProgram(
  ctx: Context,
  self: { execPath: string },
  mode: "config" | "plugin",
  home: string,
  plan: Plan,
): Promise<Program> {
  const target = installedBinaryPath(ctx.env, ctx.os);
  const same = (await sameFile(self.execPath, target)) || (await sameBytes(self.execPath, target));
  const used = mode === "config" || pathCommand(ctx.env, ctx.os) !== undefined;
  if (used && !same) plan.steps.push(copyStep(self.execPath, target, ctx.os));
  const step = await homeStep(ctx.env, home);
  if (step) plan.steps.push(step);
  return {
    command: target,
    pluginBin: {
      path: `bin/${executableFileName(ctx.os)}`,
      content: { copyFrom: self.execPath },
      mode: 0o700,
    },
    source: self.execPath,
    note: "",
  };
}

/** An installed program copy installing itself (say, into another mode): it registers its own launcher. */
async function ownCopyProgram(
  ctx: Context,
  dir: string,
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const launcher = joinPath(dir, "bin", launcherName(ctx.os));
  const text = await readTextIfExists(launcher).catch(() => undefined);
  if (text === undefined) {
    return `this program copy (${dir}) has no launcher ${launcher}; run install from an openviking-kimi ` +
      "checkout or a release binary";
  }
  const step = await homeStep(ctx.env, home);
  if (step) plan.steps.push(step);
  return {
    command: launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o700 },
    source: dir,
    note: "",
    keep: dir.slice(dir.lastIndexOf("/") + 1),
  };
}

/** A checkout: a program copy built from it (buildCopy), placed unless the same one is in place. */
async function checkoutProgram(
  ctx: Context,
  root: string,
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const deno = ctx.deno ?? Deno.execPath();
  let placement;
  try {
    const flags = await productionFlags(root);
    // Built by the Deno running install (whose `deno bundle` this relies on); run by the recorded one.
    const copy = await buildCopy(root, Deno.execPath(), flags);
    // The same code placed from another clone keeps the origin it recorded: nothing of it is rewritten.
    const source = (await placedSource(ctx.env, copy.id)) ?? root;
    placement = copyPlacement(copy, ctx.env, ctx.os, { deno, flags, source });
  } catch (error) {
    return `cannot install from the checkout ${root}: ${(error as Error).message}`;
  }
  const step = await placeCopyStep(placement, ctx.env, ctx.os, home);
  if (step) plan.steps.push(step);
  return {
    command: placement.launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: placement.launcherText, mode: 0o700 },
    source: placement.source,
    note: {
      done: `The hooks run the program copy ${placement.dir} with ${deno}, not this checkout: moving or ` +
        "deleting the checkout changes nothing; run install again to update them.",
      planned: `The hooks would run the program copy ${placement.dir} with ${deno}, not this checkout: ` +
        "moving or deleting the checkout would change nothing; run install again to update them.",
    },
    keep: placement.copy.id,
  };
}

/** Where the PATH command is, and what to add to PATH when its directory is not there. */
function pathNote(env: Env, path: string): Note {
  const dir = dirName(path);
  const where = (env.PATH ?? "").split(":").includes(dir)
    ? `(${dir} is on PATH)`
    : `— ${dir} is not on PATH: add it (\`export PATH="${dir}:$PATH"\` in ~/.profile or your shell's rc ` +
      `file), or run ${path}`;
  return {
    done: `Command: openviking-kimi is ${path} ${where}.`,
    planned: `Command: openviking-kimi would be ${path} ${where}.`,
  };
}

/**
 * Plans the `openviking-kimi` the user's shell finds (placement.ts pathCommand) as a link to `target`: made,
 * or moved to a new target when the link there is ours; never over a file that is not ours.
 */
async function planPathCommand(ctx: Context, target: string, plan: Plan): Promise<void> {
  const path = pathCommand(ctx.env, ctx.os);
  if (!path) return;
  const at = await commandAt(path, ctx.env);
  if (at.kind === "other" || (await checkCreatable(path))) {
    plan.notes.push(
      `Note: no openviking-kimi command placed at ${path} (${
        at.kind === "other" ? "a file that is not ours is there" : `${dirName(path)} cannot be made`
      }; set OPENVIKING_KIMI_BIN_DIR for another place); run ${target}.`,
    );
    return;
  }
  if (at.kind === "absent" || at.target !== target) {
    plan.steps.push(linkStep(path, target));
  }
  plan.notes.push(pathNote(ctx.env, path));
}

/** Plans putting the program in place, however this process runs; returns why it cannot, as a string. */
export async function planProgram(
  ctx: Context,
  mode: "config" | "plugin",
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const self = ctx.self;
  const program = self.kind === "compiled"
    ? await binaryProgram(ctx, self, mode, home, plan)
    : self.kind === "copy"
    ? await ownCopyProgram(ctx, self.dir, home, plan)
    : await checkoutProgram(ctx, self.root, home, plan);
  if (typeof program !== "string") await planPathCommand(ctx, program.command, plan);
  return program;
}

/** The note naming the command the hooks run (would run, in a dry run). */
export function hooksRun(command: string): Note {
  return { done: `Hooks run: ${command}`, planned: `Hooks would run: ${command}` };
}

/** `swapIn` after making `path`'s directory (`private`: 0700); the undo takes both back. */
async function swapInDir(
  path: string,
  make: (tmp: string) => Promise<void>,
  options: { private?: boolean } = {},
) {
  const dir = await makeDirs(dirName(path), options);
  const swap = await swapIn(path, make).catch(async (error) => {
    await dir().catch(() => {});
    throw error;
  });
  return { undo: async () => (await swap.undo(), await dir()), end: swap.end };
}

/** Copies the executable to `target` (mode 0755); the undo puts the one it replaced back. */
function copyStep(from: string, target: string, os: OsFamily): Step {
  const copy = async (tmp: string) => {
    await Deno.copyFile(from, tmp);
    if (os === "posix") await Deno.chmod(tmp, 0o755);
  };
  return swapStep(
    `copy ${from} to ${target}`,
    `copy the executable to ${target}`,
    target,
    () => swapInDir(target, copy, { private: true }),
    `executable copied to ${target}`,
    () => checkCreatable(target),
  );
}

/** Links `path` to `target` (over our link there, atomically); the undo puts back the link it replaced. */
function linkStep(path: string, target: string): Step {
  return swapStep(
    `link ${path} to ${target}`,
    `link ${path}`,
    path,
    () => swapInDir(path, (tmp) => Deno.symlink(target, tmp)),
    `command in place: ${path} (runs ${target})`,
  );
}

/** The entry points bundled, and the file each becomes. */
const ENTRIES: readonly { source: string; out: string }[] = [
  { source: "main.ts", out: COPY_FILES.main },
  { source: "cli/hook-main.ts", out: COPY_FILES.hook },
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

/** What is at a copy's place now. */
type PlacedState = "absent" | "same" | "relaunch" | "broken";

/**
 * What is at a copy's place now: nothing, the same copy, the same code with another launcher, or a wreck.
 * The code is compared as the version hashes it, so the same program built in another clone (another path
 * to Deno's npm cache inside the bundles) is the copy in place, not a wreck to write again.
 */
async function placedState(p: CopyPlacement): Promise<PlacedState> {
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
  const listed = await listedHomes(env);
  if (state === "same" && listed.includes(kimiHome)) return undefined;
  const size = `${Math.round(p.copy.bytes / 1024)} KB`;
  return {
    describe: state === "same"
      ? `record ${kimiHome} in ${homesFile(env)}`
      : `${state === "relaunch" ? "update the launcher of" : "place"} the program copy ${p.dir} (${size})`,
    check: () => checkCreatable(p.dir),
    run: () =>
      attempt(
        `place the program copy ${p.dir}`,
        () => placeCopy(p, { env, os, kimiHome, listed, state, size }),
      ),
  };
}

/** Does what `state` calls for (the home recorded, the launcher rewritten, the copy written); the undo of all. */
async function placeCopy(
  p: CopyPlacement,
  at: { env: Env; os: OsFamily; kimiHome: string; listed: string[]; state: PlacedState; size: string },
): Promise<Done> {
  const { env, os, state } = at;
  const dirs = await makeDirs(versionsDir(env), { private: true });
  const undos: (() => Promise<void>)[] = [dirs];
  try {
    undos.unshift(await recordHome(env, at.kimiHome, at.listed));
    if (state === "relaunch") undos.unshift(await rewriteLauncher(p, os));
    const aside = state === "broken" ? await swapIn(p.dir) : undefined;
    if (state === "broken" || state === "absent") {
      await writeCopy(p, os);
      undos.unshift(async () => {
        await Deno.remove(p.dir, { recursive: true });
        await aside?.undo();
      });
    }
    return {
      message: state === "same"
        ? undefined
        : state === "relaunch"
        ? `launcher of the program copy updated: ${p.launcher}`
        : `program copy in place: ${p.dir} (${at.size}; it runs without the checkout)`,
      changed: p.dir,
      undo: async () => {
        for (const u of undos) await u();
      },
      commit: async () => await aside?.end(),
    };
  } catch (error) {
    for (const u of undos) await u().catch(() => {});
    throw error;
  }
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

/** The file listing the Kimi homes installed into (one absolute path a line), for the removal rule. */
export function homesFile(env: Env): string {
  return joinPath(integrationDir(env), "kimi-homes");
}

/** The lines of the homes file as they are (none when it is missing or unreadable). */
export async function listedHomes(env: Env): Promise<string[]> {
  return (await readTextIfExists(homesFile(env)).catch(() => undefined))?.split("\n") ?? [];
}

/** The step that records `kimiHome` among the homes installed into (none when it is listed already). */
export async function homeStep(env: Env, kimiHome: string): Promise<Step | undefined> {
  const listed = await listedHomes(env);
  if (listed.includes(kimiHome)) return undefined;
  return {
    describe: `record ${kimiHome} in ${homesFile(env)}`,
    check: () => checkCreatable(homesFile(env)),
    run: () =>
      attempt(`record ${kimiHome} in ${homesFile(env)}`, async () => {
        const dirs = await makeDirs(integrationDir(env), { private: true });
        const undo = await recordHome(env, kimiHome, listed);
        return { changed: homesFile(env), undo: async () => (await undo(), await dirs()) };
      }),
  };
}

/** Adds `home` to the list of Kimi homes installed into (`listed`: the list as read); returns the undo. */
export async function recordHome(env: Env, home: string, listed: string[]): Promise<() => Promise<void>> {
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

/** The record of the directories install made (one a line), which the last `--purge` removes when left empty. */
export function madeDirsFile(env: Env): string {
  return joinPath(integrationDir(env), "made-dirs");
}

/**
 * The step recording which of `dirs` (and their parents up to the home) this install makes, as they are not
 * there yet; none when all are.
 */
export async function madeDirsStep(env: Env, dirs: string[]): Promise<Step | undefined> {
  const home = env.HOME ?? env.USERPROFILE;
  const missing = new Set<string>();
  for (const dir of dirs) {
    for (
      let d = dir;
      d !== home && dirName(d) !== d && !(await Deno.lstat(d).then(() => true, () => false));
      d = dirName(d)
    ) {
      missing.add(d);
    }
  }
  if (!missing.size) return undefined;
  const path = madeDirsFile(env);
  return {
    describe: `record the directories this install makes in ${path}`,
    check: () => checkCreatable(path),
    run: () =>
      attempt(`write ${path}`, async () => {
        const before = await readTextIfExists(path);
        const lines = new Set([...(before ?? "").split("\n").filter((l) => l !== ""), ...missing]);
        const dirs = await makeDirs(integrationDir(env), { private: true });
        await writeFileAtomic(path, `${[...lines].join("\n")}\n`, { privateDir: false });
        const undo = async () => {
          if (before === undefined) await Deno.remove(path).catch(() => {});
          else await writeFileAtomic(path, before, { privateDir: false });
          await dirs();
        };
        return { changed: path, undo };
      }),
  };
}

/**
 * Takes the record of the directories install made; the function it returns removes them, deepest first, each
 * only when left empty (called once what was in them is gone).
 */
export async function madeDirs(env: Env): Promise<() => Promise<void>> {
  const path = madeDirsFile(env);
  const dirs = ((await readTextIfExists(path).catch(() => undefined)) ?? "").split("\n").filter((l) => l);
  await Deno.remove(path).catch(() => {});
  return async () => {
    for (const dir of dirs.sort((a, b) => b.length - a.length)) await Deno.remove(dir).catch(() => {});
  };
}

/** The Kimi homes of `env` installed into, and `also`. */
export async function knownHomes(env: Env, also: string[]): Promise<string[]> {
  const listed = await listedHomes(env);
  return [
    ...new Set(
      [...listed, ...also].map((l) => l.trim()).filter((l) => l.startsWith("/") || /^[A-Za-z]:/.test(l)),
    ),
  ];
}

/**
 * The Kimi homes other than `except` where openviking-kimi is still registered (our block, our `mcp.json`
 * entry or our plugin): they share what purging `except` would otherwise delete. The homes installed into,
 * and the default one (an install from before the list was kept).
 */
export async function installedHomes(env: Env, except: string): Promise<string[]> {
  const homes = await knownHomes(env, [orNoHome(() => kimiHome(env)) ?? ""]);
  const installed: string[] = [];
  for (const home of homes.filter((h) => h !== except)) {
    const state = await readKimiState(home);
    // A home whose files cannot be read may have it: what it may use stays.
    const ours = state.blocks.some((b) => b.owner === "ours") || state.mcpOwner === "ours" ||
      state.plugin?.owner === "ours" || state.unreadable.length > 0;
    if (ours) installed.push(home);
  }
  return installed;
}

/**
 * What still uses version `id`, in words: the `command` linked to it (the PATH command, when given), or the
 * first Kimi home whose registration (config.toml, mcp.json, plugin launcher) names it; undefined: nothing.
 */
export async function usedBy(id: string, homes: string[], command?: string): Promise<string | undefined> {
  if (command && (await Deno.readLink(command).catch(() => "")).includes(`/${id}/`)) {
    return `the command ${command} runs it`;
  }
  for (const home of homes) {
    const plugin = joinPath(home, "plugins", "managed", PLUGIN_ID, "bin");
    const files = [
      joinPath(home, "config.toml"),
      joinPath(home, "mcp.json"),
      joinPath(plugin, launcherName("posix")),
      joinPath(plugin, launcherName("windows")),
    ];
    for (const f of files) {
      if ((await readTextIfExists(f).catch(() => undefined))?.includes(id)) {
        return `the Kimi home ${home} runs it`;
      }
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
  releaseCopyLock(); // this run only exits afterwards: its own copy is not "in use" by it
  for (const e of entries) {
    const path = joinPath(dir, e.name);
    if (!e.isDirectory || e.name === options.keep) continue;
    if (e.name.startsWith(".")) {
      const age = now - ((await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? now);
      if (age > 3_600_000) await Deno.remove(path, { recursive: true }).catch(() => {});
      continue;
    }
    const user = await usedBy(e.name, homes, pathCommand(env, "posix"));
    if (user) {
      kept.push({ dir: path, why: user });
      continue;
    }
    let lock: Deno.FsFile | undefined;
    try {
      lock = await Deno.open(joinPath(path, COPY_FILES.lock), { read: true, write: true });
      if (!(await lock.tryLock(true))) {
        lock.close();
        kept.push({
          dir: path,
          why:
            "a running process uses it (a Kimi session's MCP server or a hook); a later install removes it",
        });
        continue;
      }
    } catch {
      // No lock file: not a complete copy, nothing can hold it.
    }
    try {
      await Deno.remove(path, { recursive: true });
      removed.push(path);
    } catch (error) {
      kept.push({
        dir: path,
        why: `it could not be removed (${describeFsError(error)}); a later install removes it`,
      });
    } finally {
      lock?.close();
    }
  }
  return { removed, kept };
}

/**
 * The messages of a sweep: one line per version removed, and a note per version kept (next to the one
 * installed, `previous`; else just a version: one another home or a process runs may be anybody's current).
 */
function sweepMessages(sweep: { removed: string[]; kept: KeptVersion[] }, previous: boolean): string[] {
  const what = previous ? "previous version" : "version";
  return [
    ...sweep.removed.map((d) => `${what} removed: ${d}`),
    ...sweep.kept.map((k) => `kept the version ${k.dir}: ${k.why}`),
  ];
}

/** The versions in place other than `keep`: their names (leftovers of placements start with "."). */
async function otherVersions(env: Env, keep: string | undefined): Promise<string[]> {
  const names = await Array.fromAsync(Deno.readDir(versionsDir(env)), (e) => e.isDirectory ? e.name : "")
    .catch(() => []);
  return names.filter((n) => n !== "" && n !== keep);
}

/** The versions a Kimi home of `homes` registers, each as "<its directory> (<which home runs it>)". */
export async function versionsUsedBy(env: Env, homes: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const name of await otherVersions(env, undefined)) {
    const user = name.startsWith(".") ? undefined : await usedBy(name, homes);
    if (user) out.push(`${joinPath(versionsDir(env), name)} (${user})`);
  }
  return out;
}

/**
 * The last step of a run that changed something: nothing to do until every step succeeded, then the sweep
 * (so a failed run never removes a version it would have to put back). None when no version but `keep` is
 * there, or only ones another Kimi home installed into registers (a run in `kimiHome` cannot free those).
 */
export async function sweepStep(
  env: Env,
  options: { keep?: string; kimiHome: string },
): Promise<Step | undefined> {
  const homes = (await knownHomes(env, [])).filter((h) => h !== options.kimiHome);
  let any = false;
  for (const name of await otherVersions(env, options.keep)) {
    if (name.startsWith(".") || !(await usedBy(name, homes))) any = true;
  }
  if (!any) return undefined;
  return {
    describe: `remove the versions in ${versionsDir(env)} that nothing uses any more`,
    run: () =>
      Promise.resolve({
        commit: async () => sweepMessages(await sweepVersions(env, options), options.keep !== undefined),
      }),
  };
}
