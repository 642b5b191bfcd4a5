/**
 * Putting a built program copy (install/copy.ts) in place: where it goes and what its launcher and copy.json
 * say, what is at that place now (compared as the version hashes its code), and the step that writes it whole
 * through a staging directory, or only rewrites its launcher for a new Deno path, with the undo of either.
 */

import { COPY_FILES } from "../lib/self.ts";
import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { type Env, joinPath } from "../lib/paths.ts";
import { VERSION } from "../lib/version.ts";
import { attempt, checkCreatable, type Done, makeDirs, type Step, swapIn } from "./transaction.ts";
import type { OsFamily } from "./placement.ts";
import { launcherName, type LauncherSpec, launcherText } from "./launcher.ts";
import { type BuiltCopy, sameCode, versionsDir } from "./copy.ts";
import { homesFile, listedHomes, recordHome } from "./copy-homes.ts";

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
