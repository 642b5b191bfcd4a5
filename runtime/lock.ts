/**
 * A cross-process mutex: a lock directory created with a non-recursive mkdir, holding the owner's pid.
 * A lock is taken over when it is stale (untouched for `staleMs`; holders refresh it) or its owner is dead.
 */

import { ensurePrivateDir, isAlreadyExists, isNotFound } from "./fs.ts";
import { dirName } from "./paths.ts";

/** How long to wait for a lock, when a holder counts as dead, and how often to look. */
export interface LockOptions {
  /** Give up after this long (default 5 s). */
  waitMs?: number;
  /** A lock untouched for this long is taken over (default 60 s). */
  staleMs?: number;
  /** Poll interval while waiting (default 50 ms). */
  pollMs?: number;
}

/** The outcome of `withLock`: the callback's value, or `acquired: false` when the wait ran out. */
export type LockResult<T> = { acquired: true; value: T } | { acquired: false };

/** Runs `fn` while holding the lock at `lockPath`; never runs it when the lock cannot be had in time. */
export async function withLock<T>(
  lockPath: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<LockResult<T>> {
  const waitMs = options.waitMs ?? 5_000;
  const staleMs = options.staleMs ?? 60_000;
  const pollMs = options.pollMs ?? 50;
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await tryAcquire(lockPath)) break;
    await removeIfStale(lockPath, staleMs);
    if (Date.now() >= deadline) return { acquired: false };
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - Date.now()))));
  }
  // Keep the lock fresh while a long holder works, so nobody mistakes it for a dead one.
  const heartbeat = setInterval(() => {
    const now = new Date();
    Deno.utime(lockPath, now, now).catch(() => {});
  }, Math.max(1_000, Math.floor(staleMs / 4)));
  Deno.unrefTimer(heartbeat);
  try {
    return { acquired: true, value: await fn() };
  } finally {
    clearInterval(heartbeat);
    await Deno.remove(lockPath, { recursive: true }).catch(() => {});
  }
}

const OWNER_FILE = "owner";

/**
 * Whether process `pid` is certainly gone. A harmless SIGCONT probes it (it needs only the run permission the
 * production flags grant; /proc would need --allow-all). Anything but "no such process" counts as alive.
 */
export function isProcessGone(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === Deno.pid || Deno.build.os === "windows") return false;
  try {
    Deno.kill(pid, "SIGCONT");
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotFound;
  }
}

async function tryAcquire(lockPath: string): Promise<boolean> {
  try {
    await Deno.mkdir(lockPath, { mode: 0o700 });
    await Deno.writeTextFile(`${lockPath}/${OWNER_FILE}`, String(Deno.pid), { mode: 0o600 }).catch(() => {});
    return true;
  } catch (error) {
    if (isAlreadyExists(error)) return false;
    if (isNotFound(error)) {
      // Parent directory missing: create it and try once more.
      await ensurePrivateDir(dirName(lockPath));
      try {
        await Deno.mkdir(lockPath, { mode: 0o700 });
        await Deno.writeTextFile(`${lockPath}/${OWNER_FILE}`, String(Deno.pid), { mode: 0o600 }).catch(
          () => {},
        );
        return true;
      } catch (again) {
        if (isAlreadyExists(again)) return false;
        throw again;
      }
    }
    throw error;
  }
}

async function removeIfStale(lockPath: string, staleMs: number): Promise<void> {
  try {
    const info = await Deno.stat(lockPath);
    const age = Date.now() - (info.mtime?.getTime() ?? Date.now());
    const owner = Number(await Deno.readTextFile(`${lockPath}/${OWNER_FILE}`).catch(() => ""));
    // A holder that was killed (kill -9 leaves its lock behind) is not waited for until the lock goes stale.
    if (age <= staleMs && !(owner && isProcessGone(owner))) return;
    // Rename first so two processes never both delete a lock one of them just re-created.
    const aside = `${lockPath}.stale-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
    await Deno.rename(lockPath, aside);
    await Deno.remove(aside, { recursive: true });
  } catch {
    // Gone already, or another process is handling it.
  }
}
