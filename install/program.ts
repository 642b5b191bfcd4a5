/**
 * The program install registers (the binary, a program copy of a checkout, or a copy itself) and its steps; the
 * copy's launcher, which finds Deno (the recorded one, PATH, the usual places; `findDeno` the same search) and
 * runs the bundle offline, without it (or its code) a hook silent, every other command saying why; the sweep.
 */

import { readKimiState } from "./detect.ts";
import type { Check } from "./check.ts";
import {
  commandAt,
  commandLauncherPath,
  EXECUTABLE_NAME,
  executableFileName,
  installedBinaryPath,
  type OsFamily,
  pathCommand,
  PLUGIN_ID,
  sameBytes,
} from "./spec.ts";
import {
  checkCreatable,
  type Context,
  describeFsError,
  fileStep,
  type Note,
  type Plan,
  type Step,
  swapStep,
  type TreeFile,
  writeTree,
} from "./transaction.ts";
import { parseJsonOrUndefined, readTextIfExists } from "../lib/fs.ts";
import { asRecord } from "../lib/parsed.ts";
import { sha256Hex } from "../lib/hash.ts";
import { dirName, type Env, homesFile, integrationDir, joinPath, kimiHome, orNoHome } from "../lib/paths.ts";
import { COPY_FILES, COPY_RUN_FLAGS, productionFlags, releaseCopyLock, shellQuote } from "../lib/self.ts";
import { VERSION } from "../lib/version.ts";

/** The program the registrations run, once in place. */
export interface Program {
  /** What config mode's hooks and `mcp.json` run: the binary's place, or a program copy's launcher. */
  command: string;
  /** The plugin directory's `bin/` file: the binary, or the launcher. */
  pluginBin: TreeFile;
  /** Where the plugin came from (the registry record's `originalSource`). */
  source: string;
  /** A note on what runs. */
  note: Note;
  /** The program copy's id (the sweep keeps it). */
  keep?: string;
  /** A copy's launcher text, which the PATH command's launcher (commandLauncherPath) repeats. */
  launcherText?: string;
}

/** The compiled binary: config mode and the PATH command run its copy in `…/kimicode/bin/`. */
async function binaryProgram(
  ctx: Context,
  self: { execPath: string },
  mode: "config" | "plugin",
  plan: Plan,
): Promise<Program> {
  const target = installedBinaryPath(ctx.env, ctx.os);
  const same = await sameBytes(self.execPath, target);
  const used = mode === "config" || pathCommand(ctx.env, ctx.os) !== undefined;
  if (used && !same) {
    plan.steps.push(swapStep({
      describe: `copy ${self.execPath} to ${target}`,
      path: target,
      make: async (tmp) => {
        await Deno.copyFile(self.execPath, tmp);
        if (ctx.os === "posix") await Deno.chmod(tmp, 0o755);
      },
      privateDir: true,
      message: `executable copied to ${target}`,
      check: () => checkCreatable(target),
    }));
  }
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
async function ownCopyProgram(dir: string): Promise<Program | string> {
  const launcher = joinPath(dir, "bin", EXECUTABLE_NAME);
  const text = await readTextIfExists(launcher).catch(() => undefined);
  if (text === undefined) {
    return `this program copy (${dir}) has no launcher ${launcher}; run install from an openviking-kimi ` +
      "checkout or a release binary";
  }
  return {
    command: launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o700 },
    source: dir,
    note: "",
    keep: dir.slice(dir.lastIndexOf("/") + 1),
    launcherText: text,
  };
}

/** A checkout: a program copy built from it (buildCopy), placed unless the same one is in place. */
async function checkoutProgram(ctx: Context, root: string, plan: Plan): Promise<Program | string> {
  const deno = ctx.deno ?? Deno.execPath();
  let copy, flags;
  try {
    flags = await productionFlags(root);
    // Built by the Deno running install (whose `deno bundle` this relies on); run by the recorded one.
    copy = await buildCopy(root, flags);
  } catch (error) {
    return `cannot install from the checkout ${root}: ${(error as Error).message}`;
  }
  const placement = await planCopy(ctx, copy, { root, deno, flags }, plan);
  return {
    command: placement.launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: placement.launcherText, mode: 0o700 },
    source: placement.source,
    note: (p) =>
      `The hooks ${p ? "would run" : "run"} the program copy ${placement.dir} with ${deno}, not this ` +
      `checkout: moving or deleting the checkout ${p ? "would change" : "changes"} nothing; run install ` +
      "again to update them.",
    keep: copy.id,
    launcherText: placement.launcherText,
  };
}

/** Where the PATH command is, and what to add to PATH when its directory is not there. */
function pathNote(env: Env, path: string): Note {
  const dir = dirName(path);
  const where = (env.PATH ?? "").split(":").includes(dir)
    ? `(${dir} is on PATH)`
    : `— ${dir} is not on PATH: add it (\`export PATH="${dir}:$PATH"\` in ~/.profile or your shell's rc ` +
      `file), or run ${path}`;
  return (p) => `Command: openviking-kimi ${p ? "would be" : "is"} ${path} ${where}.`;
}

/**
 * Plans the PATH command as our link to what runs (made, or moved when ours); never over a file not ours. A copy
 * is linked through the launcher kept beside `versions/`, which says what to run once the copy is gone.
 */
async function planPathCommand(ctx: Context, program: Program, plan: Plan): Promise<void> {
  const path = pathCommand(ctx.env, ctx.os);
  if (!path) return;
  const at = await commandAt(path, ctx.env);
  if (at.kind === "other" || (await checkCreatable(path))) {
    plan.notes.push(
      `Note: no openviking-kimi command placed at ${path} (${
        at.kind === "other" ? "a file that is not ours is there" : `${dirName(path)} cannot be made`
      }; set OPENVIKING_KIMI_BIN_DIR for another place); run ${program.command}.`,
    );
    return;
  }
  const text = program.launcherText;
  const target = text === undefined ? program.command : commandLauncherPath(ctx.env);
  if (text !== undefined && (await readTextIfExists(target).catch(() => undefined)) !== text) {
    plan.steps.push(swapStep({
      describe: `write the launcher ${target}`,
      path: target,
      make: async (tmp) => {
        await Deno.writeTextFile(tmp, text, { mode: 0o700 });
        await Deno.chmod(tmp, 0o700);
      },
      privateDir: true,
      message: "",
      check: () => checkCreatable(target),
    }));
  }
  if (at.kind === "absent" || at.target !== target) {
    plan.steps.push(swapStep({
      describe: `link ${path} to ${target}`,
      path,
      make: (tmp) => Deno.symlink(target, tmp),
      message: `command in place: ${path} (runs ${program.command})`,
    }));
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
    ? await binaryProgram(ctx, self, mode, plan)
    : self.kind === "copy"
    ? await ownCopyProgram(self.dir)
    : await checkoutProgram(ctx, self.root, plan);
  if (typeof program === "string") return program;
  const step = await recordStep(
    homesFile(ctx.env),
    adding([home]),
    `record ${home} in ${homesFile(ctx.env)}`,
  );
  if (step) plan.steps.push(step);
  await planPathCommand(ctx, program, plan);
  return program;
}

/** The note naming the command the hooks run (would run, in a dry run). */
export function hooksRun(command: string): Note {
  return (p) => `Hooks ${p ? "would run" : "run"}: ${command}`;
}

/** The entry points bundled, and the file each becomes. */
const ENTRIES: readonly { source: string; out: string }[] = [
  { source: "main.ts", out: COPY_FILES.main },
  { source: "cli/hook.ts", out: COPY_FILES.hook },
];

/** A built program copy: its id and its files (not yet placed anywhere). */
interface BuiltCopy {
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

/** Runs `deno <args>`: what it printed, or why it failed. */
async function runDeno(
  deno: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ ok: true; stdout: string } | { ok: false; why: string }> {
  const io = { stdin: "null", stdout: "piped", stderr: "piped" } as const;
  const out = await new Deno.Command(deno, { args, ...options, ...io }).output();
  if (out.success) return { ok: true, stdout: new TextDecoder().decode(out.stdout).trim() };
  return { ok: false, why: cause(out.stderr) || `exit ${out.code}` };
}

/** Bundles the checkout at `root` into `out` and checks the result runs offline under the production flags. */
async function bundleInto(
  root: string,
  deno: string,
  flags: readonly string[],
  out: string,
): Promise<string> {
  const config = joinPath(root, "deno.json");
  for (const e of ENTRIES) {
    const run = () =>
      runDeno(deno, [
        ...["bundle", "--quiet", "--platform", "deno", "--frozen-lockfile", "--config", config],
        ...["--output", joinPath(out, e.out), joinPath(root, e.source)],
      ], { cwd: root }); // the bundle names modules relative to its cwd: our own ones the same in any checkout
    // Deno's first bundle on a machine installs esbuild into its cache, which a bundle started at the same
    // moment (another install) can trip over: a failed bundle is tried once more.
    const made = await run().then((first) => (first.ok ? first : run()));
    if (!made.ok) {
      return `could not bundle the program (\`deno bundle\`, Deno ${Deno.version.deno}): ${made.why}. Run ` +
        "`deno task check` in the checkout, or install a release binary";
    }
  }
  const main = joinPath(out, COPY_FILES.main);
  const env = { DENO_DIR: joinPath(out, COPY_FILES.denoDir) };
  const ran = await runDeno(deno, ["run", ...flags, ...COPY_RUN_FLAGS, main, "version"], { env });
  if (ran.ok && ran.stdout === VERSION) return "";
  const said = ran.ok ? `said ${JSON.stringify(ran.stdout)}` : `failed: ${ran.why}`;
  return `the bundled program does not run (\`version\` ${said})`;
}

/** An npm package's path in Deno's cache as a bundle names it (relative to the checkout: `../../…/npm/registry.npmjs.org/`). */
const NPM_CACHE_PATH = /(?:\.\.\/)*[^\s"'`]*?\/npm\/registry\.npmjs\.org\//g;

/** The bundles' text with where Deno's npm cache is left out: what the version hashes (same code, same id). */
const comparable = (bytes: Uint8Array) => new TextDecoder().decode(bytes).replace(NPM_CACHE_PATH, "<npm>/");

const builds = new Map<string, Promise<BuiltCopy>>();

/** Builds (once per process and checkout) the program copy of the checkout at `root`. */
function buildCopy(root: string, flags: readonly string[]): Promise<BuiltCopy> {
  const key = [root, ...flags].join("\0");
  let build = builds.get(key);
  if (!build) {
    build = (async () => {
      const tmp = await Deno.makeTempDir({ prefix: "openviking-kimi-copy-" });
      try {
        const failed = await bundleInto(root, Deno.execPath(), flags, tmp);
        if (failed) throw new Error(failed);
        const files = await Promise.all(
          ENTRIES.map(async (e) => ({ name: e.out, bytes: await Deno.readFile(joinPath(tmp, e.out)) })),
        );
        const all = await new Blob(files.flatMap((f) => [f.bytes, new Uint8Array(1)])).bytes();
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

/**
 * Plans the program copy in place, run by `deno`: placed whole (over a wreck), or only its launcher and record
 * rewritten (the same code), or nothing; a version keeps the checkout it recorded.
 */
async function planCopy(
  ctx: Context,
  copy: BuiltCopy,
  spec: { root: string; deno: string; flags: string[] },
  plan: Plan,
): Promise<{ dir: string; launcher: string; launcherText: string; source: string }> {
  const { deno, flags } = spec;
  const dir = joinPath(versionsDir(ctx.env), copy.id);
  const [info, launcher] = [joinPath(dir, COPY_FILES.info), joinPath(dir, "bin", EXECUTABLE_NAME)];
  const [infoBefore, launcherBefore] = await Promise.all(
    [info, launcher].map((f) => readTextIfExists(f).catch(() => undefined)),
  );
  const recorded = asRecord(parseJsonOrUndefined(infoBefore)).source;
  const source = typeof recorded === "string" && recorded !== "" ? recorded : spec.root;
  const text = launcherText({ dir, deno, flags, source, id: copy.id, version: VERSION });
  // `deno bundle` is experimental in Deno 2.9: the builder is recorded.
  const record = {
    version: VERSION,
    id: copy.id,
    flags,
    deno,
    source,
    bundledBy: `deno ${Deno.version.deno}`,
  };
  const infoText = `${JSON.stringify(record, null, 2)}\n`;
  const placed = { dir, launcher, launcherText: text, source };
  const intact = await Deno.stat(joinPath(dir, COPY_FILES.lock)).then((s) => s.isFile, () => false) &&
    (await Promise.all(
      copy.files.map((f) =>
        Deno.readFile(joinPath(dir, f.name)).then((b) => comparable(b) === comparable(f.bytes), () => false)
      ),
    )).every(Boolean);
  if (intact) {
    const rewrites = [
      { path: launcher, before: launcherBefore, after: text, what: "launcher" },
      { path: info, before: infoBefore, after: infoText, what: "record" },
    ];
    for (const { what, ...change } of rewrites.filter((r) => r.before !== r.after)) {
      plan.steps.push(fileStep({ ...change, backup: "none" }, `${what} of the program copy updated`));
    }
    return placed;
  }
  const files: TreeFile[] = [
    ...copy.files.map((f) => ({ path: f.name, content: f.bytes, mode: 0o600 })),
    { path: COPY_FILES.info, content: infoText, mode: 0o600 },
    { path: COPY_FILES.lock, content: "", mode: 0o600 },
    { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o700 },
  ];
  const size = `${Math.round(copy.bytes / 1024)} KB`;
  plan.steps.push(swapStep({
    describe: `place the program copy ${dir} (${size})`,
    path: dir,
    make: (tmp) => writeTree(tmp, files, ["bin", COPY_FILES.denoDir]),
    privateDir: true,
    message: `program copy in place: ${dir} (${size}; it runs without the checkout)`,
    check: () => checkCreatable(dir),
  }));
  return placed;
}

/** The lines of record text (one a line), blank ones left out. */
const linesOf = (text: string | undefined) => (text ?? "").split("\n").filter((l) => l.trim() !== "");

/**
 * The silent step giving the record file `path` the lines `edit` makes of its lines (deleted when none is
 * left; a missing or unreadable one has none); none when they stay as they are.
 */
export async function recordStep(
  path: string,
  edit: (lines: string[]) => string[],
  describe: string,
): Promise<Step | undefined> {
  const before = await readTextIfExists(path).catch(() => undefined);
  const [listed, lines] = [linesOf(before), edit(linesOf(before))];
  if (lines.length === listed.length && lines.every((l, i) => l === listed[i])) return undefined;
  const after = lines.length ? `${lines.join("\n")}\n` : undefined;
  const step = fileStep({ path, before, after, backup: "none" }, describe, { describe, message: "" });
  return { ...step, check: () => checkCreatable(path) };
}

/** An edit of a record's lines adding `lines` not there yet. */
const adding = (lines: string[]) => (listed: string[]) => [
  ...listed,
  ...[...new Set(lines)].filter((l) => !listed.includes(l)),
];

/** The record of the directories install made (one a line), which a `--purge` removes when left empty. */
export function madeDirsFile(env: Env): string {
  return joinPath(integrationDir(env), "made-dirs");
}

/** The step recording which of `dirs` (and their parents up to the home) this install makes; none when all are there. */
export async function madeDirsStep(env: Env, dirs: string[]): Promise<Step | undefined> {
  const home = env.HOME ?? env.USERPROFILE;
  const missing: string[] = [];
  for (const dir of dirs) {
    for (
      let d = dir;
      d !== home && dirName(d) !== d && !(await Deno.lstat(d).then(() => true, () => false));
      d = dirName(d)
    ) {
      missing.push(d);
    }
  }
  const path = madeDirsFile(env);
  return await recordStep(path, adding(missing), `record the directories this install makes in ${path}`);
}

/** The directories install recorded making. */
export async function madeDirList(env: Env): Promise<string[]> {
  return linesOf(await readTextIfExists(madeDirsFile(env)).catch(() => undefined));
}

/** The Kimi homes installed into (absolute paths only), and `also`. */
async function knownHomes(env: Env, also: string[]): Promise<string[]> {
  const listed = linesOf(await readTextIfExists(homesFile(env)).catch(() => undefined));
  const lines = [...listed, ...also].map((l) => l.trim());
  return [...new Set(lines.filter((l) => l.startsWith("/") || /^[A-Za-z]:/.test(l)))];
}

/** The homes other than `except` still registering openviking-kimi (unreadable counts), the default one too. */
export async function installedHomes(env: Env, except: string): Promise<string[]> {
  const installed: string[] = [];
  for (const home of await knownHomes(env, [orNoHome(() => kimiHome(env)) ?? ""])) {
    if (home === except) continue;
    const state = await readKimiState(home);
    if (
      state.blocks.some((b) => b.owner === "ours") || state.mcpOwner === "ours" ||
      state.plugin?.owner === "ours" || state.unreadable.length > 0
    ) installed.push(home);
  }
  return installed;
}

/**
 * What still uses version `id`, in words: a home of `homes` naming it, or (given `env`) the PATH command, linked
 * to it or to the launcher that runs it.
 */
async function usedBy(id: string, homes: string[], env?: Env): Promise<string | undefined> {
  const command = env && pathCommand(env, "posix");
  const target = command ? await Deno.readLink(command).catch(() => "") : "";
  const launcher = env && target === commandLauncherPath(env)
    ? launcherInfo(await readTextIfExists(target).catch(() => undefined) ?? "")
    : undefined;
  if (target.includes(`/${id}/`) || launcher?.id === id) return `the command ${command} runs it`;
  for (const home of homes) {
    const bin = joinPath(home, "plugins", "managed", PLUGIN_ID, "bin");
    for (
      const f of [joinPath(home, "config.toml"), joinPath(home, "mcp.json"), joinPath(bin, EXECUTABLE_NAME)]
    ) {
      if ((await readTextIfExists(f).catch(() => undefined))?.includes(id)) {
        return `the Kimi home ${home} runs it`;
      }
    }
  }
  return undefined;
}

/** The version directories in place other than `keep` (leftovers of placements start with "."). */
async function otherVersions(env: Env, keep: string | undefined): Promise<string[]> {
  const names = await Array.fromAsync(Deno.readDir(versionsDir(env)), (e) => e.isDirectory ? e.name : "")
    .catch(() => []);
  return names.filter((n) => n !== "" && n !== keep);
}

/** How long a purge waits for a copy to be let go: our idle watch ends within a second of the hook state going. */
const PURGE_WAIT_MS = 3000;

/** Removes the version at `path` unless a process holds its in-use.lock; returns why it stays. */
async function removeUnlocked(path: string, purge = false): Promise<string | undefined> {
  const lock = await Deno.open(joinPath(path, COPY_FILES.lock), { read: true, write: true }).catch(() =>
    undefined
  );
  try {
    let free = !lock || await lock.tryLock(true);
    for (const until = Date.now() + (purge ? PURGE_WAIT_MS : 0); !free && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 100));
      free = await lock!.tryLock(true);
    }
    if (!free) {
      const busy = "a running process uses it (a Kimi session's MCP server or a hook)";
      // A purge leaves no command of ours on PATH: the copy's own launcher finishes the job.
      return purge
        ? `${busy}; once it has ended, run ${joinPath(path, "bin", EXECUTABLE_NAME)} uninstall --purge`
        : `${busy}; a later install removes it`;
    }
    await Deno.remove(path, { recursive: true });
    return undefined;
  } catch (error) {
    return `it could not be removed (${describeFsError(error)}); a later install removes it`;
  } finally {
    lock?.close();
  }
}

/**
 * Removes every version but `keep` nothing uses, and placement leftovers over an hour old; says what it removed
 * and which it did not, and why.
 */
async function sweep(
  env: Env,
  options: { keep?: string; kimiHome: string; purge?: boolean },
): Promise<{ done: string[]; notes: string[] }> {
  const homes = await knownHomes(env, [options.kimiHome]);
  const said = { done: [] as string[], notes: [] as string[] };
  releaseCopyLock(); // this run only exits afterwards: its own copy is not "in use" by it
  for (const name of await otherVersions(env, options.keep)) {
    const path = joinPath(versionsDir(env), name);
    if (name.startsWith(".")) {
      const made = (await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? Date.now();
      if (Date.now() - made > 3_600_000) await Deno.remove(path, { recursive: true }).catch(() => {});
      continue;
    }
    const why = await usedBy(name, homes, env) ??
      await removeUnlocked(path, options.purge);
    // Next to the one installed, a "previous version"; else one another home runs may be anybody's current.
    const version = options.keep ? "previous version" : "version";
    if (why) said.notes.push(`the ${version} ${path} was not removed: ${why}`);
    else said.done.push(`${version} removed: ${path}`);
  }
  return said;
}

/**
 * What a last purge leaves (its sweep keeps them): each version a home of the record other than `except` still
 * runs — one uninstalled without --purge, whose plugin directory stayed — with the command that removes both.
 */
export async function versionsLeftFor(env: Env, except: string): Promise<string[]> {
  const out: string[] = [];
  for (const home of (await knownHomes(env, [])).filter((h) => h !== except)) {
    for (const name of await otherVersions(env, undefined)) {
      const copy = joinPath(versionsDir(env), name);
      if (!name.startsWith(".") && await usedBy(name, [home])) {
        out.push(
          `${copy}, which ${home} still runs (\`${joinPath(copy, "bin", EXECUTABLE_NAME)} uninstall ` +
            `--purge --kimi-home ${home}\` removes both)`,
        );
      }
    }
  }
  return out;
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
 * The sweep, at the end of a run that changed something (a failed run never removes a version it would put
 * back); none when only `keep` and versions other homes register are there.
 */
export async function sweepStep(
  env: Env,
  options: { keep?: string; kimiHome: string; purge?: boolean },
): Promise<Step | undefined> {
  const homes = (await knownHomes(env, [])).filter((h) => h !== options.kimiHome);
  for (const name of await otherVersions(env, options.keep)) {
    if (!name.startsWith(".") && await usedBy(name, homes)) continue;
    return {
      describe: `remove the versions in ${versionsDir(env)} that nothing uses any more`,
      run: () => Promise.resolve({ commit: () => sweep(env, options) }),
    };
  }
  return undefined;
}

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

/** Where the copy came from and what reinstalls it: in that checkout, or (`gone`) in a clone, since it is gone. */
type Source = Pick<LauncherSpec, "source"> & { mode?: "config" | "plugin"; gone?: boolean };

/** The install command that works for `s`, in words (after "run"): in its checkout, or in a clone when that is gone. */
function reinstall(s: Source): string {
  const command = `deno task -q install${s.mode === "plugin" ? " --mode plugin" : ""}`;
  const modes = s.mode === undefined ? " (with `--mode plugin` for plugin mode)" : "";
  const binary = "install a release binary, which needs no Deno";
  return s.gone
    ? `the checkout this copy was built from, ${s.source}, is gone: run \`${command}\` in a clone of ` +
      `openviking-kimi${modes}, or ${binary}`
    : `\`cd ${
      shellQuote(s.source)
    } && ${command}\` (the checkout this copy was built from)${modes}; or ${binary}`;
}

/** The failing check of a copy whose Deno is gone: what is missing and how to get it back. */
export function denoNotFound(spec: Pick<LauncherSpec, "deno"> & Source): Failing {
  return {
    id: "deno",
    status: "fail",
    summary: `Deno not found at ${spec.deno} (the one install used), on PATH or in the usual places ` +
      `(${USUAL_WORDS}): the hooks do nothing and the MCP server cannot start`,
    fix: `reinstall with: install Deno 2 (\`npm install -g deno\`, or see https://deno.com), then ${
      spec.gone ? "" : "run "
    }${reinstall(spec)}`,
  };
}

/** What a launcher whose copy lost its code (the version directory moved or deleted, a bundle missing) says. */
const copyIncomplete = (spec: Pick<LauncherSpec, "dir"> & Source) =>
  `the program copy ${spec.dir} is gone or incomplete (${COPY_FILES.main} or ${COPY_FILES.hook} is missing); ` +
  `run install again: ${reinstall(spec)}`;

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
  # A file size limit (ulimit -f) reached: EFBIG, as on a full disk, not a kill (Deno's caches are written
  # before our code runs); an ignored signal stays ignored across exec.
  trap '' XFSZ
  DENO_DIR="$dir/${COPY_FILES.denoDir}" exec "$deno" run ${run} "$dir/$entry" "$@"
fi
# No Deno, or the copy's code is gone: a hook stays silent (Kimi must never break); the rest say why, and
# the install that works (in the checkout the copy was built from, or in a clone when it is gone).
if [ -f ${shellQuote(joinPath(spec.source, "deno.json"))} ]; then
  if [ -z "$deno" ]; then why=${shellQuote(oneLine(denoNotFound(spec)))}
  else why=${shellQuote(copyIncomplete(spec))}; fi
elif [ -z "$deno" ]; then why=${shellQuote(oneLine(denoNotFound({ ...spec, gone: true })))}
else why=${shellQuote(copyIncomplete({ ...spec, gone: true }))}; fi
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
