/**
 * The steps an install or uninstall takes — a file write, the executable's copy, the plugin directory's
 * placement, a removal — each with the check that finds while planning why it cannot be taken, how it is
 * taken, how it is taken back when a later step fails, and what is finished once every step succeeded.
 */

import { dirName, joinPath } from "../lib/paths.ts";
import { PLUGIN_ID } from "./spec.ts";
import {
  applyChange,
  checkCreatable,
  describeFsError,
  type FileChange,
  isFsError,
  keepCopy,
  makeDirs,
  moveAside,
  type Undo,
  undoAll,
  writeTarget,
} from "./files.ts";
import { copyExecutableAtomic, type OsFamily } from "./placement.ts";
import { placePluginDir, type PluginFile } from "./plugin.ts";

/** What a step did: its message, how to take it back, and what to finish once every step has succeeded. */
export interface Done {
  message?: string;
  /** What it changed, named in a rollback message. */
  changed?: string;
  undo?: Undo;
  /** Finishes the step once every step succeeded; returns lines to report (what it removed, kept). */
  commit?: () => Promise<string[] | void>;
}

/** An action of a run (a file write, the binary copy, the plugin directory, a removal), described for dry runs. */
export interface Step {
  describe: string;
  /** Why the step cannot be taken, found while planning; undefined when it can. */
  check?: () => Promise<string | undefined>;
  run: () => Promise<Done>;
}

/** The error a failed file write reports: the file (and the link leading to it) and the cause in words. */
async function writeFailure(change: FileChange, error: unknown): Promise<Error> {
  if (!isFsError(error)) return error as Error;
  const target = await writeTarget(change.path).catch(() => change.path);
  const via = target === change.path ? "" : ` (${change.path} links there)`;
  return new Error(`could not write ${target}${via}: ${describeFsError(error)}`);
}

/** Runs `action`; a file-system error becomes "could not <what>: <cause>". */
export async function attempt<T>(what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw isFsError(error) ? new Error(`could not ${what}: ${describeFsError(error)}`) : error;
  }
}

/** Writes one planned change (after `makeDir`, when given: the directory it needs, made undoably). */
export function fileStep(change: FileChange, what: string, makeDir?: () => Promise<Undo>): Step {
  return {
    describe: `${
      change.after === undefined ? "delete" : change.before === undefined ? "create" : "update"
    } ${change.path} (${what})`,
    run: async () => {
      const dir = makeDir ? await attempt(`create the directory of ${change.path}`, makeDir) : undefined;
      try {
        const { backup, undo } = await applyChange(change);
        return {
          message: backup
            ? `${what}: ${change.path} (previous copy in ${backup})`
            : `${what}: ${change.path}`,
          changed: change.path,
          undo: { undo: async () => void (await undoAll(dir ? [dir, undo] : [undo]).then(throwIfAny)) },
        };
      } catch (error) {
        await dir?.undo().catch(() => {});
        throw await writeFailure(change, error);
      }
    },
  };
}

/** Copies the executable to `target`; the undo puts the one it replaced back. */
export function copyStep(from: string, target: string, os: OsFamily): Step {
  return {
    describe: `copy ${from} to ${target}`,
    check: () => checkCreatable(target),
    run: () =>
      attempt(`copy the executable to ${target}`, async () => {
        const dir = await makeDirs(dirName(target), { private: true });
        let previous: string | undefined;
        try {
          previous = await keepCopy(target);
          await copyExecutableAtomic(from, target, os);
        } catch (error) {
          if (previous) await Deno.remove(previous).catch(() => {});
          await dir.undo().catch(() => {});
          throw error;
        }
        return {
          message: `executable copied to ${target}`,
          changed: target,
          undo: {
            undo: async () => {
              await (previous ? Deno.rename(previous, target) : Deno.remove(target));
              await dir.undo();
            },
          },
          commit: async () => void (previous && await Deno.remove(previous).catch(() => {})),
        };
      }),
  };
}

/** Links `path` to `target` (over our link there, atomically); the undo puts back the link it replaced. */
export function linkStep(path: string, target: string, previous: string | undefined): Step {
  const swap = async (to: string) => {
    const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
    await Deno.symlink(to, tmp);
    await Deno.rename(tmp, path).catch(async (error) => {
      await Deno.remove(tmp).catch(() => {});
      throw error;
    });
  };
  return {
    describe: `link ${path} to ${target}`,
    run: () =>
      attempt(`link ${path}`, async () => {
        const dirs = await makeDirs(dirName(path));
        await swap(target).catch(async (error) => {
          await dirs.undo().catch(() => {});
          throw error;
        });
        return {
          message: `command in place: ${path} (runs ${target})`,
          changed: path,
          undo: {
            undo: async () => {
              await (previous ? swap(previous) : Deno.remove(path));
              await dirs.undo();
            },
          },
        };
      }),
  };
}

/** Places the plugin directory; the undo takes it out and puts the one it replaced back. */
export function placeStep(
  managedDir: string,
  files: PluginFile[],
  options: { keepPrevious: boolean; now: Date },
  describe: string,
): Step {
  const root = joinPath(managedDir, PLUGIN_ID);
  return {
    describe,
    check: () => checkCreatable(root),
    run: () =>
      attempt(`place the plugin directory ${root}`, async () => {
        const dirs = await makeDirs(managedDir);
        const placed = await placePluginDir(managedDir, files, { ...options, deferRemoval: true }).catch(
          async (error) => {
            await dirs.undo().catch(() => {});
            throw error;
          },
        );
        return {
          message: `plugin directory in place: ${placed.root}${
            placed.keptPrevious ? ` (the one it replaced is kept in ${placed.keptPrevious})` : ""
          }`,
          changed: placed.root,
          undo: {
            undo: async () => {
              const ours = await moveAside(placed.root);
              if (placed.previous) await Deno.rename(placed.previous, placed.root);
              await Deno.remove(ours, { recursive: true });
              await dirs.undo();
            },
          },
          commit: async () => {
            if (placed.previous && !options.keepPrevious) {
              await Deno.remove(placed.previous, { recursive: true }).catch(() => {});
            }
          },
        };
      }),
  };
}

/** Throws one error naming every undo that failed. */
function throwIfAny(failed: string[]): void {
  if (failed.length) throw new Error(failed.join("; "));
}

/** A removal that can be taken back until the run succeeds: moved aside first, deleted at the end. */
export function removalStep(
  path: string,
  describe: string,
  message: string,
  options: { quiet?: boolean } = {},
): Step {
  return {
    describe,
    run: async () => {
      let aside: string;
      try {
        aside = await moveAside(path);
      } catch (error) {
        if (options.quiet) return {};
        throw isFsError(error) ? new Error(`could not remove ${path}: ${describeFsError(error)}`) : error;
      }
      return {
        message,
        changed: path,
        undo: { undo: () => Deno.rename(aside, path) },
        commit: () => Deno.remove(aside, { recursive: true }).catch(() => {}),
      };
    },
  };
}
