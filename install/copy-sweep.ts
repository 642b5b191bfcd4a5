/**
 * Removing the program copies nothing uses any more, as the last step of a run that changed something: a
 * version goes only when no process of it runs (its in-use.lock can be locked exclusively) and no Kimi home
 * installed into registers it; leftovers of interrupted placements go after an hour.
 */

import { COPY_FILES } from "../runtime/self.ts";
import { type Env, joinPath } from "../runtime/paths.ts";
import { describeFsError } from "./files.ts";
import type { Step } from "./steps.ts";
import { versionsDir } from "./copy.ts";
import { knownHomes, registeredIn } from "./copy-homes.ts";

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
