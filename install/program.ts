/**
 * The program install registers (the binary, a program copy of a checkout, or a copy itself), the records of
 * homes and made directories, the sweep of versions, and the copy's launcher with doctor's view of it.
 */

import { readKimiState } from "./detect.ts";
import type { Check } from "./check.ts";
import {
  commandAt,
  commandLauncherPath,
  EXECUTABLE_NAME,
  executableFileName,
  installedBinaryPath,
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

/** The program the registrations run: its command, the plugin's `bin/` file, its source, a note. */
export interface Program {
  command: string;
  pluginBin: TreeFile;
  source: string;
  note: Note;
  /** The program copy's id (the sweep keeps it). */
  keep?: string;
  /** A copy's launcher text, which the PATH command's launcher (commandLauncherPath) repeats. */
  launcherText?: string;
}

const read = (path: string) => readTextIfExists(path).catch(() => undefined);
const launcherOf = (dir: string) => joinPath(dir, "bin", EXECUTABLE_NAME);

/** Plans putting the program in place, however this process runs, and the PATH command; or why not. */
export async function planProgram(
  ctx: Context,
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const { self, env, os } = ctx;
  let program: Program;
  if (self.kind === "compiled") {
    const target = installedBinaryPath(env, os);
    if (pathCommand(env, os) && !(await sameBytes(self.execPath, target))) {
      plan.steps.push(swapStep({
        describe: `copy ${self.execPath} to ${target}`,
        path: target,
        make: async (tmp) => {
          await Deno.copyFile(self.execPath, tmp);
          if (os === "posix") await Deno.chmod(tmp, 0o755);
        },
        privateDir: true,
        message: `executable copied to ${target}`,
        check: () => checkCreatable(target),
      }));
    }
    const pluginBin = {
      path: `bin/${executableFileName(os)}`,
      content: { copyFrom: self.execPath },
      mode: 0o700,
    };
    program = { command: target, pluginBin, source: self.execPath, note: "" };
  } else if (self.kind === "copy") {
    const launcher = launcherOf(self.dir);
    const text = await read(launcher);
    if (text === undefined) {
      return `this program copy (${self.dir}) has no launcher ${launcher}; run install from an openviking-kimi ` +
        "checkout or a release binary";
    }
    const pluginBin = { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o700 };
    program = {
      command: launcher,
      pluginBin,
      source: self.dir,
      note: "",
      keep: self.dir.slice(self.dir.lastIndexOf("/") + 1),
      launcherText: text,
    };
  } else {
    const deno = ctx.deno ?? Deno.execPath();
    let copy, flags;
    try {
      flags = await productionFlags(self.root);
      // Bundled by the Deno running install, run by the recorded one; the wait said first.
      copy = await buildCopy(self.root, flags, () => ctx.out.info(BUILDING));
    } catch (error) {
      return `cannot install from the checkout ${self.root}: ${(error as Error).message}`;
    }
    const placed = await planCopy(ctx, copy, { root: self.root, deno, flags }, plan);
    program = {
      command: placed.launcher,
      pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: placed.text, mode: 0o700 },
      source: placed.source,
      note: (p) =>
        `The hooks ${p ? "would run" : "run"} the program copy ${placed.dir} with ${deno}, not this ` +
        `checkout: moving or deleting the checkout ${p ? "would change" : "changes"} nothing; run install ` +
        "again to update them.",
      keep: copy.id,
      launcherText: placed.text,
    };
  }
  const step = await recordStep(homesFile(env), adding([home]), `record ${home} in ${homesFile(env)}`);
  if (step) plan.steps.push(step);
  await planPathCommand(ctx, program, plan);
  return program;
}

/**
 * Plans the PATH command as our link to what runs (made, or moved when ours); never over a file not ours. A copy
 * is linked through the launcher kept beside `versions/`, which says what to run once the copy is gone.
 */
async function planPathCommand(ctx: Context, program: Program, plan: Plan): Promise<void> {
  const path = pathCommand(ctx.env, ctx.os);
  if (!path) return;
  const at = await commandAt(path, ctx.env);
  const dir = dirName(path);
  if (at.kind === "other" || (await checkCreatable(path))) {
    const why = at.kind === "other" ? "a file that is not ours is there" : `${dir} cannot be made`;
    plan.notes.push(
      `Note: no openviking-kimi command placed at ${path} (${why}; set OPENVIKING_KIMI_BIN_DIR for another place); run ${program.command}.`,
    );
    return;
  }
  const text = program.launcherText;
  const target = text === undefined ? program.command : commandLauncherPath(ctx.env);
  if (text !== undefined && (await read(target)) !== text) {
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
  const where = (ctx.env.PATH ?? "").split(":").includes(dir)
    ? `(${dir} is on PATH)`
    : `— ${dir} is not on PATH: add it (\`export PATH="${dir}:$PATH"\` in ~/.profile or your shell's rc ` +
      `file), or run ${path}`;
  plan.notes.push((p) => `Command: openviking-kimi ${p ? "would be" : "is"} ${path} ${where}.`);
}

/** Where the versions live: `~/.openviking/agent-integrations/kimicode/versions`. */
export const versionsDir = (env: Env): string => joinPath(integrationDir(env), "versions");

/** A built program copy: its id, its files, their size. */
type BuiltCopy = { id: string; files: { name: string; bytes: Uint8Array }[]; bytes: number };

/** Runs `deno <args>`: what it printed, or why it failed (the first lines of its stderr, colours removed). */
async function runDeno(
  deno: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string },
) {
  const out = await new Deno.Command(deno, {
    args,
    ...options,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (out.success) return { ok: true as const, stdout: new TextDecoder().decode(out.stdout).trim() };
  // deno-lint-ignore no-control-regex
  const text = new TextDecoder().decode(out.stderr).replace(/\u001b\[[0-9;]*m/g, "");
  const why = text.split("\n").map((l) => l.trim()).filter(Boolean).slice(0, 4).join(" / ");
  return { ok: false as const, why: why || `exit ${out.code}` };
}

/** The bundles' text with where Deno's npm cache is left out: what the version hashes (same code, same id). */
const comparable = (bytes: Uint8Array) =>
  new TextDecoder().decode(bytes).replace(/(?:\.\.\/)*[^\s"'`]*?\/npm\/registry\.npmjs\.org\//g, "<npm>/");

const builds = new Map<string, Promise<BuiltCopy>>();

/** What install says before it bundles (only then: a run refused earlier, or a copy's, builds nothing). */
const BUILDING = "openviking-kimi: building the program copy (deno bundle, a few seconds)…";

/** Builds (once per process and checkout) the program copy of the checkout at `root`: both bundles, checked to run. */
function buildCopy(root: string, flags: readonly string[], starting: () => void): Promise<BuiltCopy> {
  const key = [root, ...flags].join("\0");
  const built = builds.get(key) ?? (async () => {
    starting();
    const tmp = await Deno.makeTempDir({ prefix: "openviking-kimi-copy-" });
    const deno = Deno.execPath();
    try {
      const entries = [["main.ts", COPY_FILES.main], ["cli/hook.ts", COPY_FILES.hook]];
      for (const [source, out] of entries) {
        const args = ["bundle", "--quiet", "--platform", "deno", "--frozen-lockfile", "--config"];
        const files = [joinPath(root, "deno.json"), "--output", joinPath(tmp, out), joinPath(root, source)];
        // In the checkout, so modules are named alike in any; a first bundle installing esbuild is tried twice.
        const run = () => runDeno(deno, [...args, ...files], { cwd: root });
        const made = await run().then((first) => (first.ok ? first : run()));
        if (!made.ok) {
          throw new Error(
            `could not bundle the program (\`deno bundle\`, Deno ${Deno.version.deno}): ${made.why}. Run ` +
              "`deno task check` in the checkout, or install a release binary",
          );
        }
      }
      const env = { DENO_DIR: joinPath(tmp, COPY_FILES.denoDir) };
      const main = joinPath(tmp, COPY_FILES.main);
      const ran = await runDeno(deno, ["run", ...flags, ...COPY_RUN_FLAGS, main, "version"], { env });
      if (!ran.ok || ran.stdout !== VERSION) {
        const said = ran.ok ? `said ${JSON.stringify(ran.stdout)}` : `failed: ${ran.why}`;
        throw new Error(`the bundled program does not run (\`version\` ${said})`);
      }
      const files = await Promise.all(
        entries.map(async ([, name]) => ({ name, bytes: await Deno.readFile(joinPath(tmp, name)) })),
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
  builds.set(key, built);
  built.catch(() => builds.delete(key));
  return built;
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
) {
  const { deno, flags } = spec;
  const dir = joinPath(versionsDir(ctx.env), copy.id);
  const [info, launcher] = [joinPath(dir, COPY_FILES.info), launcherOf(dir)];
  const [infoBefore, launcherBefore] = await Promise.all([read(info), read(launcher)]);
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
  const same = (f: BuiltCopy["files"][number]) =>
    Deno.readFile(joinPath(dir, f.name)).then((b) => comparable(b) === comparable(f.bytes), () => false);
  const intact = await Deno.stat(joinPath(dir, COPY_FILES.lock)).then((s) => s.isFile, () => false) &&
    (await Promise.all(copy.files.map(same))).every(Boolean);
  if (intact) {
    for (
      const [what, path, before, after] of [
        ["launcher", launcher, launcherBefore, text],
        ["record", info, infoBefore, infoText],
      ] as const
    ) {
      if (before !== after) {
        plan.steps.push(
          fileStep({ path, before, after, backup: "none" }, `${what} of the program copy updated`),
        );
      }
    }
  } else {
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
  }
  return { dir, launcher, text, source };
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
  const before = await read(path);
  const [listed, lines] = [linesOf(before), edit(linesOf(before))];
  if (lines.join("\n") === listed.join("\n")) return undefined;
  const after = lines.length ? `${lines.join("\n")}\n` : undefined;
  const step = fileStep({ path, before, after, backup: "none" }, describe, { describe, message: "" });
  return { ...step, check: () => checkCreatable(path) };
}

/** An edit of a record's lines adding `lines` not there yet. */
const adding = (lines: string[]) => (listed: string[]) => [...new Set([...listed, ...lines])];

/** The record of the directories install made (one a line), which a `--purge` removes when left empty. */
export const madeDirsFile = (env: Env): string => joinPath(integrationDir(env), "made-dirs");

/** The step recording which of `dirs` (and their parents up to the home) this install makes; none when all are there. */
export async function madeDirsStep(env: Env, dirs: string[]): Promise<Step | undefined> {
  const home = env.HOME ?? env.USERPROFILE;
  const missing: string[] = [];
  for (const dir of dirs) {
    for (let d = dir; d !== home && dirName(d) !== d && !(await exists(d)); d = dirName(d)) missing.push(d);
  }
  const path = madeDirsFile(env);
  return await recordStep(path, adding(missing), `record the directories this install makes in ${path}`);
}

/** The directories install recorded making. */
export const madeDirList = async (env: Env): Promise<string[]> => linesOf(await read(madeDirsFile(env)));

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

/** The Kimi homes installed into (absolute paths only), and `also`. */
async function knownHomes(env: Env, also: string[]): Promise<string[]> {
  const lines = [...linesOf(await read(homesFile(env))), ...also].map((l) => l.trim());
  return [...new Set(lines.filter((l) => l.startsWith("/") || /^[A-Za-z]:/.test(l)))];
}

/** The homes other than `except` still registering openviking-kimi (unreadable counts), the default one too. */
export async function installedHomes(env: Env, except: string): Promise<string[]> {
  const installed: string[] = [];
  for (const home of await knownHomes(env, [orNoHome(() => kimiHome(env)) ?? ""])) {
    const s = home === except ? undefined : await readKimiState(home);
    if (
      s && (s.blocks.some((b) => b.owner === "ours") || s.mcpOwner === "ours" || s.plugin?.owner === "ours" ||
        s.unreadable.length > 0)
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
    ? launcherInfo(await read(target) ?? "")
    : undefined;
  if (target.includes(`/${id}/`) || launcher?.id === id) return `the command ${command} runs it`;
  for (const home of homes) {
    const bin = launcherOf(joinPath(home, "plugins", "managed", PLUGIN_ID));
    for (const f of [joinPath(home, "config.toml"), joinPath(home, "mcp.json"), bin]) {
      if ((await read(f))?.includes(id)) return `the Kimi home ${home} runs it`;
    }
  }
  return undefined;
}

/** The version directories in place other than `keep` (leftovers of placements start with "."). */
async function otherVersions(env: Env, keep?: string): Promise<string[]> {
  const names = await Array.fromAsync(Deno.readDir(versionsDir(env)), (e) => e.isDirectory ? e.name : "")
    .catch(() => []);
  return names.filter((n) => n !== "" && n !== keep);
}

/** Each version a home of `homes` registers: `[its directory, which home runs it]`. */
async function versionsOf(env: Env, homes: string[]): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const name of await otherVersions(env)) {
    const user = name.startsWith(".") ? undefined : await usedBy(name, homes);
    if (user) out.push([joinPath(versionsDir(env), name), user]);
  }
  return out;
}

/** Removes the version at `path` unless a process holds its in-use.lock (a purge waits 3 s); returns why it stays. */
async function removeUnlocked(path: string, purge = false): Promise<string | undefined> {
  const lock = await Deno.open(joinPath(path, COPY_FILES.lock), { read: true, write: true }).catch(() =>
    undefined
  );
  try {
    let free = !lock || await lock.tryLock(true);
    for (const until = Date.now() + (purge ? 3000 : 0); !free && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 100));
      free = await lock!.tryLock(true);
    }
    if (!free) {
      const busy = "a running process uses it (a Kimi session's MCP server or a hook)";
      // A purge leaves no command of ours on PATH: the copy's own launcher finishes the job.
      return purge
        ? `${busy}; once it has ended, run ${launcherOf(path)} uninstall --purge`
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
 * What a last purge leaves (its sweep keeps them): each version a home of the record other than `except` still
 * runs — one uninstalled without --purge, whose plugin directory stayed — with the command that removes both.
 */
export async function versionsLeftFor(env: Env, except: string): Promise<string[]> {
  const out: string[] = [];
  for (const home of (await knownHomes(env, [])).filter((h) => h !== except)) {
    for (const [copy] of await versionsOf(env, [home])) {
      out.push(
        `${copy}, which the plugin directory ${home} kept (uninstalled without --purge) still runs (\`${
          launcherOf(copy)
        } uninstall --purge --kimi-home ${home}\` removes both)`,
      );
    }
  }
  return out;
}

/** The versions a Kimi home of `homes` registers, each as "<its directory> (<which home runs it>)". */
export const versionsUsedBy = async (env: Env, homes: string[]): Promise<string[]> =>
  (await versionsOf(env, homes)).map(([dir, user]) => `${dir} (${user})`);

/**
 * The sweep, at the end of a run that changed something (a failed run never removes a version it would put
 * back): every version but `keep` nothing uses, and placement leftovers over an hour old; none when only
 * `keep` and versions other homes register are there.
 */
export async function sweepStep(
  env: Env,
  options: { keep?: string; kimiHome: string; purge?: boolean },
): Promise<Step | undefined> {
  const others = (await knownHomes(env, [])).filter((h) => h !== options.kimiHome);
  const names = await otherVersions(env, options.keep);
  const used = new Set((await versionsOf(env, others)).map(([dir]) => dir));
  if (names.every((n) => used.has(joinPath(versionsDir(env), n)))) return undefined;
  const commit = async () => {
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
  };
  return {
    describe: `remove the versions in ${versionsDir(env)} that nothing uses any more`,
    run: () => Promise.resolve({ commit }),
  };
}

/** What a launcher needs to know: the copy's directory, the Deno install used, the production flags, the source checkout. */
interface LauncherSpec {
  dir: string;
  deno: string;
  flags: readonly string[];
  version: string;
  id: string;
  source: string;
}

const MARKER = "# openviking-kimi copy ";

/** Where else Deno usually lives, in search order: `$VAR/path` (an absolute VAR only) or a fixed path; `*` a glob. */
const USUAL: readonly (readonly ["DENO_INSTALL" | "HOME" | "NVM_DIR" | undefined, string])[] = [
  ["DENO_INSTALL", "bin/deno"],
  ["HOME", ".deno/bin/deno"],
  ["HOME", ".local/bin/deno"],
  [undefined, "/opt/homebrew/bin/deno"],
  [undefined, "/usr/local/bin/deno"],
  [undefined, "/usr/bin/deno"],
  ["NVM_DIR", "versions/node/*/bin/deno"],
];

/** Where the copy came from and what reinstalls it: in that checkout, or (`gone`) in a clone, since it is gone. */
type Source = { source: string; gone?: boolean };

/** The install command that works for `s`, in words (after "run"). */
function reinstall(s: Source): string {
  const command = "deno task -q install";
  const binary = "install a release binary, which needs no Deno";
  return s.gone
    ? `the checkout this copy was built from, ${s.source}, is gone: run \`${command}\` in a clone of ` +
      `openviking-kimi, or ${binary}`
    : `\`cd ${shellQuote(s.source)} && ${command}\` (the checkout this copy was built from); or ${binary}`;
}

/** The failing check of a copy whose Deno is gone: what is missing and how to get it back. */
export function denoNotFound(spec: { deno: string } & Source): Check & { fix: string } {
  return {
    id: "deno",
    status: "fail",
    summary: `Deno not found at ${spec.deno} (the one install used), on PATH or in the usual places ` +
      "(~/.deno/bin, ~/.local/bin, $DENO_INSTALL/bin, /opt/homebrew/bin, /usr/local/bin, /usr/bin, nvm's Node " +
      "versions): the hooks do nothing and the MCP server cannot start",
    fix: `reinstall with: install Deno 2 (\`npm install -g deno\`, or see https://deno.com), then ${
      spec.gone ? "" : "run "
    }${reinstall(spec)}`,
  };
}

/** The launcher's text: a POSIX sh script (a checkout installs on POSIX systems only). */
export function launcherText(spec: LauncherSpec): string {
  const marker = JSON.stringify({ dir: spec.dir, deno: spec.deno, id: spec.id });
  const run = [...spec.flags, ...COPY_RUN_FLAGS].map(shellQuote).join(" ");
  const usual = USUAL.map(([base, path]) => (base ? `"$${base[0].toLowerCase()}"/${path}` : path)).join(" ");
  // Why it cannot run, in one line, and the install that works (in the checkout, or in a clone when it is gone).
  const why = (gone: boolean, deno: boolean) => {
    if (!deno) {
      const c = denoNotFound({ ...spec, gone });
      return shellQuote(`${c.summary.replace(/: the hooks do nothing.*$/, "")}; ${c.fix}`);
    }
    return shellQuote(
      `the program copy ${spec.dir} is gone or incomplete (${COPY_FILES.main} or ${COPY_FILES.hook} is ` +
        `missing); run install again: ${reinstall({ ...spec, gone })}`,
    );
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
  # A file size limit (ulimit -f) reached: EFBIG, as on a full disk, not a kill (Deno's caches are written
  # before our code runs); an ignored signal stays ignored across exec.
  trap '' XFSZ
  DENO_DIR="$dir/${COPY_FILES.denoDir}" exec "$deno" run ${run} "$dir/$entry" "$@"
fi
# No Deno, or the copy's code is gone: a hook stays silent (Kimi must never break); the rest say why.
if [ -f ${shellQuote(joinPath(spec.source, "deno.json"))} ]; then
  if [ -z "$deno" ]; then why=${why(false, false)}
  else why=${why(false, true)}; fi
elif [ -z "$deno" ]; then why=${why(true, false)}
else why=${why(true, true)}; fi
if [ "$1" = hook ]; then [ -t 0 ] || cat >/dev/null 2>&1; exit 0; fi
printf 'openviking-kimi: %s\\n' "$why" >&2
exit 1
`;
}

/** What a launcher says of its copy (its marker line), or undefined when the text is not a launcher. */
export function launcherInfo(text: string): { dir: string; deno: string; id: string } | undefined {
  const line = text.split(/\r?\n/).find((l) => l.startsWith(MARKER));
  const info = asRecord(parseJsonOrUndefined(line?.slice(MARKER.length)));
  const { dir, deno, id } = info;
  return typeof dir === "string" && typeof deno === "string" && typeof id === "string"
    ? { dir, deno, id }
    : undefined;
}

/** Whether `path` is an executable file. */
export async function isExecutable(path: string, os: "posix" | "windows"): Promise<boolean> {
  const info = await Deno.stat(path).catch(() => undefined);
  return !!info?.isFile && (os === "windows" || ((info.mode ?? 0) & 0o111) !== 0);
}

/** The Deno the launcher would run: the recorded one, then PATH, then the usual places; undefined: none. */
export async function findDeno(recorded: string, env: Env): Promise<string | undefined> {
  const absolute = (v: string | undefined) => (v?.startsWith("/") ? v : undefined);
  const bases = {
    DENO_INSTALL: absolute(env.DENO_INSTALL),
    HOME: absolute(env.HOME),
    NVM_DIR: absolute(env.NVM_DIR) ?? `${absolute(env.HOME) ?? "/nonexistent"}/.nvm`,
  };
  const usual = USUAL.flatMap(([base, path]) =>
    !base ? [path] : bases[base] === undefined ? [] : [joinPath(bases[base], path)]
  );
  const path = (env.PATH ?? "").split(":").filter(Boolean).map((d) => joinPath(d, "deno"));
  for (const candidate of [recorded, ...path, ...usual]) {
    const [head, tail] = candidate.split("/*/");
    const names = tail === undefined
      ? [""]
      : (await Array.fromAsync(Deno.readDir(head), (e) => e.name).catch(() => [] as string[])).sort();
    for (const n of names) {
      const f = tail === undefined ? candidate : `${head}/${n}/${tail}`;
      if (await isExecutable(f, "posix")) return f;
    }
  }
  return undefined;
}
