/** A cross-process mutex: an exclusive kernel lock on a lock file, tried until a deadline. */

import { ensurePrivateDir, isNotFound, removeQuietly } from "./fs.ts";
import { dirName } from "./paths.ts";

/** The wait (default 5 s; 0: one try), the poll (50 ms); `makeDir: false`: a missing directory throws. */
export type LockOptions = { waitMs?: number; pollMs?: number; makeDir?: boolean };

/** The outcome of `withLock`: the callback's value, or `acquired: false` when the wait ran out. */
export type LockResult<T> = { acquired: true; value: T } | { acquired: false };

/** The lock file at `path`, opened (created 0600 in a 0700 directory when missing). */
async function openLockFile(path: string, makeDir = true): Promise<Deno.FsFile> {
  const open = () => Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
  try {
    return open();
  } catch (error) {
    const info = await Deno.lstat(path).catch(() => undefined);
    // A link at the lock's place (dangling, or to a directory) is no lock of ours: it goes, not what it names.
    if (info?.isSymlink) await Deno.remove(path);
    else if (isNotFound(error) && makeDir) await ensurePrivateDir(dirName(path));
    else throw error;
    return open();
  }
}

/** Whether the open `file` is still the one at `path` (always, without inode numbers). */
export function stillAtPath(file: Deno.FsFile, path: string): boolean {
  try {
    const [held, now] = [file.statSync(), Deno.statSync(path)];
    return held.ino === null || now.ino === null || (held.ino === now.ino && held.dev === now.dev);
  } catch {
    return false;
  }
}

/**
 * Runs `fn` holding the lock at `lockPath`; never runs it when the lock cannot be had in time, nor when the
 * lock's directory went while it waited (a purge: what it guarded is gone, and is not made again).
 */
export async function withLock<T>(
  lockPath: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<LockResult<T>> {
  const [deadline, pollMs] = [Date.now() + (options.waitMs ?? 5_000), options.pollMs ?? 50];
  for (let first = true;; first = false) {
    // Only the first open makes a missing directory: one gone since went with what the lock guarded.
    const opened = await openLockFile(lockPath, first && options.makeDir !== false).catch((error) => {
      if (first || !isNotFound(error)) throw error;
    });
    if (!opened) return { acquired: false };
    using file = opened; // its close releases the lock
    if (file.tryLockSync(true)) {
      if (!stillAtPath(file, lockPath)) continue;
      try {
        return { acquired: true, value: await fn() };
      } finally {
        removeQuietly(lockPath); // still held: whoever opens the path next makes a new one
      }
    }
    if (Date.now() >= deadline) return { acquired: false };
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - Date.now()))));
  }
}
