/**
 * Removing the program copies nothing uses any more, as the last step of a run that changed something: a
 * version goes only when no process of it runs (its in-use.lock can be locked exclusively), no Kimi home
 * installed into registers it and the PATH command does not run it; leftovers of interrupted placements go
 * after an hour.
 */

import { COPY_FILES } from "../lib/self.ts";
import { type Env, joinPath } from "../lib/paths.ts";
import { describeFsError, type Step } from "./transaction.ts";
import { versionsDir } from "./copy.ts";
import { knownHomes, usedBy } from "./copy-homes.ts";
import { pathCommand } from "./placement.ts";

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
