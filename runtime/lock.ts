/**
 * A cross-process mutex: a lock directory created with a non-recursive mkdir, holding the owner's pid and a
 * token. A lock is taken over at once when its owner is dead, when it has no owner for a moment (or its time is
 * in the future), and when it is stale (untouched for `staleMs`) and its owner cannot be probed; a live owner
 * that stopped refreshing is waited for up to `LIVE_STALE_MS`. Holders check their token (`Lease.held`) before
 * they write, so a holder whose lock was taken over never writes over the new holder's work.
 */

import { ensurePrivateDir, isAlreadyExists, isNotFound } from "./fs.ts";
import { dirName } from "./paths.ts";
import { isProcessGone } from "./process.ts";

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

/** What a holder can ask about its lock. */
export interface Lease {
  /** Whether the lock is still ours (not taken over as stale while we worked). */
  held(): Promise<boolean>;
}

/** A lock whose live owner stopped refreshing it for this long is taken over anyway (the owner hangs). */
const LIVE_STALE_MS = 10 * 60_000;

/** A lock directory without a readable owner this old (or this far in the future) was abandoned mid-create. */
const OWNERLESS_MS = 2_000;

/** Runs `fn` while holding the lock at `lockPath`; never runs it when the lock cannot be had in time. */
export async function withLock<T>(
  lockPath: string,
  fn: (lease: Lease) => Promise<T>,
  options: LockOptions = {},
): Promise<LockResult<T>> {
  const waitMs = options.waitMs ?? 5_000;
  const staleMs = options.staleMs ?? 60_000;
  const pollMs = options.pollMs ?? 50;
  const deadline = Date.now() + waitMs;
  const token = `${Deno.pid}:${crypto.randomUUID()}`;
  for (;;) {
    if (await tryAcquire(lockPath, token)) break;
    await removeIfStale(lockPath, staleMs);
    if (Date.now() >= deadline) return { acquired: false };
    await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(1, deadline - Date.now()))));
  }
  const heartbeat = startHeartbeat(lockPath, Math.max(1_000, Math.floor(staleMs / 4)));
  const held = () => readOwner(lockPath).token === token;
  const lease: Lease = { held: () => Promise.resolve(held()) };
  try {
    return { acquired: true, value: await fn(lease) };
  } finally {
    heartbeat.stop();
    // Only our own lock is removed: one taken over meanwhile belongs to its new holder.
    if (held()) removeLockDir(lockPath);
  }
}

/**
 * Keeps the lock fresh while a long holder works, so nobody mistakes it for a dead one. The first beat waits
 * on an AbortSignal timer, the later ones on an unref'd interval: a short hold (every prompt) never touches
 * Deno 2.9's setInterval/clearInterval, whose first use loads Node's timers module (~4 ms per hook run).
 */
function startHeartbeat(lockPath: string, everyMs: number): { stop(): void } {
  const touch = () => {
    const now = new Date();
    Deno.utime(lockPath, now, now).catch(() => {});
  };
  let interval: ReturnType<typeof setInterval> | undefined;
  const first = AbortSignal.timeout(everyMs);
  const start = () => {
    touch();
    const beat = setInterval(touch, everyMs);
    Deno.unrefTimer(beat);
    interval = beat;
  };
  first.addEventListener("abort", start, { once: true });
  return {
    stop() {
      first.removeEventListener("abort", start);
      if (interval !== undefined) clearInterval(interval);
    },
  };
}

const OWNER_FILE = "owner";

/** Removes a lock directory with its owner file; one gone already is no error. */
function removeLockDir(lockPath: string): void {
  try {
    Deno.removeSync(lockPath, { recursive: true });
  } catch {
    // gone already
  }
}

/** The owner recorded in a lock directory: `<pid>:<uuid>` (or a bare pid, as older versions wrote it). */
function readOwner(lockPath: string): { pid?: number; token?: string } {
  let text = "";
  try {
    text = Deno.readTextFileSync(`${lockPath}/${OWNER_FILE}`).trim();
  } catch {
    // no owner (yet), or no lock
  }
  const m = /^(\d+)(:[0-9a-f-]{36})?$/.exec(text);
  return m ? { pid: Number(m[1]), token: m[2] ? text : undefined } : {};
}

function makeLockDir(lockPath: string, token: string): boolean {
  try {
    Deno.mkdirSync(lockPath, { mode: 0o700 });
  } catch (error) {
    if (isAlreadyExists(error)) return false;
    throw error;
  }
  // Written in place (not renamed in): a reader sees no owner for a moment, never a torn one it trusts.
  try {
    Deno.writeTextFileSync(`${lockPath}/${OWNER_FILE}`, token, { mode: 0o600 });
  } catch {
    // an ownerless lock: taken over once it is OWNERLESS_MS old
  }
  return true;
}

async function tryAcquire(lockPath: string, token: string): Promise<boolean> {
  try {
    return makeLockDir(lockPath, token);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    // Parent directory missing: create it and try once more.
    await ensurePrivateDir(dirName(lockPath));
    return makeLockDir(lockPath, token);
  }
}

/** What is known of a lock's owner: none recorded, dead, alive, or not probeable here (Windows). */
export type OwnerState = "none" | "dead" | "alive" | "unknown";

/** Why a lock found held may be taken over now ("" = wait for it). Pure. */
export function staleReason(lock: { ageMs: number; owner: OwnerState }, staleMs: number): string {
  if (lock.owner === "dead") return "owner-dead";
  if (lock.owner === "none" && Math.abs(lock.ageMs) > OWNERLESS_MS) return "ownerless";
  const limit = lock.owner === "alive" ? Math.max(staleMs, LIVE_STALE_MS) : staleMs;
  return lock.ageMs > limit ? "stale" : "";
}

async function removeIfStale(lockPath: string, staleMs: number): Promise<void> {
  try {
    const info = await Deno.stat(lockPath);
    const ageMs = Date.now() - (info.mtime?.getTime() ?? Date.now());
    const { pid } = readOwner(lockPath);
    const owner: OwnerState = pid === undefined
      ? "none"
      : Deno.build.os === "windows"
      ? "unknown"
      : isProcessGone(pid)
      ? "dead"
      : "alive";
    // A holder killed with -9 leaves its lock behind: it is taken at once, not after it goes stale.
    if (!staleReason({ ageMs, owner }, staleMs)) return;
    // Rename first so two processes never both delete a lock one of them just re-created.
    const aside = `${lockPath}.stale-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
    await Deno.rename(lockPath, aside);
    await Deno.remove(aside, { recursive: true });
  } catch {
    // Gone already, or another process is handling it.
  }
}
