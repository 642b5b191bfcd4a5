/**
 * The offline write queue, in the format OpenViking's other plugins use (`~/.openviking/pending/`):
 * one file `<sha256 dedupe key>_<retries>.json` per write, `{type, sessionId, payload, createdAt, retries, dedupKey}`.
 * Writes are exclusive and atomic; replay claims a file by renaming it to `.processing`, so only one process
 * ever sends an entry.
 */

import * as z from "zod/mini";
import { sha256Hex, stableStringify } from "./hash.ts";
import { ensurePrivateDir, isAlreadyExists, isNotFound, tempSibling, writeFileAtomic } from "./fs.ts";
import { joinPath } from "./paths.ts";
import type { Budget, OpenVikingClient, OvResponse } from "./http.ts";

/** Kinds of queued writes. */
export type PendingType = "addMessage" | "commitSession";

/** One queued write. */
export const PendingEntrySchema = z.object({
  type: z.enum(["addMessage", "commitSession"]),
  sessionId: z.string().check(z.minLength(1)),
  payload: z.unknown(),
  createdAt: z.number(),
  retries: z.catch(z.int().check(z.nonnegative()), 0),
  dedupKey: z.optional(z.string()),
});
export type PendingEntry = z.infer<typeof PendingEntrySchema>;

/** A `.processing` file older than this was abandoned by a dead process and is put back. */
export const ABANDONED_AFTER_MS = 10 * 60_000;

const ENTRY_NAME = /^([0-9a-f]{64})_(\d+)\.(json|processing)$/;

/** The dedupe key: sha256 of type, session id and the payload with sorted keys. */
export async function dedupKey(type: PendingType, sessionId: string, payload: unknown): Promise<string> {
  return await sha256Hex(`${type}\n${sessionId}\n${stableStringify(payload ?? {})}`);
}

/** A write to queue. */
export interface PendingWrite {
  type: PendingType;
  sessionId: string;
  payload: unknown;
}

async function existingKeys(dir: string): Promise<Set<string>> {
  const keys = new Set<string>();
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = ENTRY_NAME.exec(e.name);
      if (m) keys.add(m[1]);
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return keys;
}

/** The last `createdAt` this process gave out: later writes of the process always sort after earlier ones. */
let lastCreatedAt = 0;

/**
 * Queues writes in order, with strictly increasing `createdAt` within the process (so the commit queued after
 * its messages in the same millisecond still sorts after them). Stops at the first write that cannot be
 * stored and returns how many of the leading writes are durably queued (duplicates of queued entries count
 * as queued).
 */
export async function enqueueAll(dir: string, writes: PendingWrite[], now = Date.now()): Promise<number> {
  if (writes.length === 0) return 0;
  await ensurePrivateDir(dir);
  const keys = await existingKeys(dir);
  let stored = 0;
  for (const [i, w] of writes.entries()) {
    try {
      const key = await dedupKey(w.type, w.sessionId, w.payload);
      if (!keys.has(key)) {
        // Only nudge when this process queued something in the last second (an explicit older `now` stays).
        const createdAt = now + i <= lastCreatedAt && lastCreatedAt - (now + i) < 1000
          ? lastCreatedAt + 1
          : now + i;
        lastCreatedAt = createdAt;
        const entry: PendingEntry = { ...w, createdAt, retries: 0, dedupKey: key };
        await createExclusive(joinPath(dir, `${key}_0.json`), `${JSON.stringify(entry)}\n`);
        keys.add(key);
      }
      stored++;
    } catch {
      break;
    }
  }
  return stored;
}

/** Creates a file with complete content or not at all, never replacing an existing one (temp + fsync + hard link). */
async function createExclusive(path: string, text: string): Promise<void> {
  const tmp = tempSibling(path);
  const file = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
  try {
    const bytes = new TextEncoder().encode(text);
    for (let written = 0; written < bytes.length;) written += await file.write(bytes.subarray(written));
    await file.sync(); // a queued turn must survive more than a killed process
  } finally {
    file.close();
  }
  try {
    await Deno.link(tmp, path);
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/** A queued entry as found on disk. */
export interface QueuedFile {
  name: string;
  key: string;
  entry: PendingEntry;
}

/** Lists parseable `.json` entries, oldest first. Unparseable files older than a minute are deleted. */
export async function listPending(dir: string): Promise<QueuedFile[]> {
  const out: QueuedFile[] = [];
  let names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile) names.push(e.name);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  names = names.sort();
  for (const name of names) {
    const m = ENTRY_NAME.exec(name);
    if (!m || m[3] !== "json") continue;
    const path = joinPath(dir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(await Deno.readTextFile(path));
    } catch (error) {
      if (isNotFound(error)) continue;
      const info = await Deno.stat(path).catch(() => undefined);
      if (info?.mtime && Date.now() - info.mtime.getTime() > 60_000) await Deno.remove(path).catch(() => {});
      continue;
    }
    const parsed = PendingEntrySchema.safeParse(raw);
    if (!parsed.success) continue;
    out.push({
      name,
      key: m[1],
      entry: { ...parsed.data, retries: Math.max(parsed.data.retries, Number(m[2])) },
    });
  }
  return out.sort((a, b) => a.entry.createdAt - b.entry.createdAt || (a.name < b.name ? -1 : 1));
}

/** Puts `.processing` files abandoned for longer than `ABANDONED_AFTER_MS` back into the queue. */
export async function recoverAbandoned(dir: string, now = Date.now()): Promise<number> {
  let recovered = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = ENTRY_NAME.exec(e.name);
      if (!m || m[3] !== "processing") continue;
      const path = joinPath(dir, e.name);
      const info = await Deno.stat(path).catch(() => undefined);
      if (!info?.mtime || now - info.mtime.getTime() <= ABANDONED_AFTER_MS) continue;
      await Deno.rename(path, joinPath(dir, `${m[1]}_${m[2]}.json`)).then(() => recovered++, () => {});
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return recovered;
}

/** Limits of one replay run. */
export interface ReplayOptions {
  /** At most this many entries are sent per run. */
  limit: number;
  /** Entries that failed this often on a reachable server are dropped. */
  maxRetries: number;
  /** Entries older than this are dropped. */
  ttlDays: number;
  budget: Budget;
  /** Only entries of this OpenViking session. */
  sessionId?: string;
  now?: number;
}

/** What a replay run did. */
export interface ReplayReport {
  replayed: number;
  /** Entries put back after a retryable failure (the run stopped there). */
  failed: number;
  /** Entries dropped: rejected by the server, too many retries, or too old. */
  dropped: number;
  /** Entries left for a later run (limit, budget, or the run stopped early). */
  deferred: number;
  /** Entries another process claimed first. */
  skipped: number;
}

/** Sends one queued write. */
export function sendEntry(
  client: OpenVikingClient,
  entry: PendingEntry,
  budget: Budget,
): Promise<OvResponse<unknown>> {
  const sid = encodeURIComponent(entry.sessionId);
  const path = entry.type === "commitSession"
    ? `/api/v1/sessions/${sid}/commit`
    : `/api/v1/sessions/${sid}/messages`;
  return client.request("POST", path, { body: entry.payload ?? {}, budget, peerId: null });
}

/**
 * Replays the queue oldest first, bounded in count and time. Stops at the first retryable failure so order is
 * kept; an outage (no answer, 429, 502/503/504) does not count as a retry, so a long outage loses nothing.
 */
export async function replayPending(
  dir: string,
  client: OpenVikingClient,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const report: ReplayReport = { replayed: 0, failed: 0, dropped: 0, deferred: 0, skipped: 0 };
  const now = options.now ?? Date.now();
  await recoverAbandoned(dir, now);
  const ttlMs = options.ttlDays * 86_400_000;
  const all = await listPending(dir);
  const queue: QueuedFile[] = [];
  for (const f of all) {
    if (options.sessionId !== undefined && f.entry.sessionId !== options.sessionId) continue;
    if (now - f.entry.createdAt > ttlMs || f.entry.retries >= options.maxRetries) {
      await Deno.remove(joinPath(dir, f.name)).then(() => report.dropped++, () => {});
      continue;
    }
    queue.push(f);
  }
  // While another run holds a write of a session (sending it now, or killed while doing so), that session's
  // later writes stay queued: the server sees each session's writes in order.
  const claimed = await claimedSessions(dir);
  let waiting = 0;
  let i = 0;
  for (; i < queue.length; i++) {
    if (i >= options.limit || options.budget.remaining() < 100) break;
    const f = queue[i];
    if (f.entry.createdAt > (claimed.get(f.entry.sessionId) ?? Infinity)) {
      waiting++;
      continue;
    }
    const processing = joinPath(dir, f.name.replace(/\.json$/, ".processing"));
    try {
      await Deno.rename(joinPath(dir, f.name), processing);
    } catch {
      report.skipped++;
      claimed.set(f.entry.sessionId, Math.min(f.entry.createdAt, claimed.get(f.entry.sessionId) ?? Infinity));
      continue;
    }
    const res = await sendEntry(client, f.entry, options.budget);
    if (res.ok || !res.retryable) {
      await Deno.remove(processing).catch(() => {});
      if (res.ok) report.replayed++;
      else report.dropped++;
      continue;
    }
    report.failed++;
    i++;
    if (isOutage(res.status)) {
      // Server unreachable or saying "not now": put the entry back untouched, it is not the entry's fault.
      await Deno.rename(processing, joinPath(dir, f.name)).catch(() => {});
      break;
    }
    const retries = f.entry.retries + 1;
    if (retries < options.maxRetries) {
      await writeFileAtomic(
        joinPath(dir, `${f.key}_${retries}.json`),
        `${JSON.stringify({ ...f.entry, retries })}\n`,
        { privateDir: false, durable: true },
      ).catch(() => Deno.rename(processing, joinPath(dir, f.name)));
    } else {
      report.failed--;
      report.dropped++;
    }
    await Deno.remove(processing).catch(() => {});
    break;
  }
  report.deferred = queue.length - i + waiting;
  return report;
}

/**
 * Failures that say the server is away rather than that the write is bad: no answer, 429, 502, 503, 504.
 * They never count as a retry, so an outage of any length drops nothing (the TTL still applies).
 */
export function isOutage(status: number): boolean {
  return status === 0 || status === 429 || status === 502 || status === 503 || status === 504;
}

/** Number of queued entries, optionally only of one session. */
export async function countPending(dir: string, sessionId?: string): Promise<number> {
  const all = await listPending(dir);
  return sessionId === undefined ? all.length : all.filter((f) => f.entry.sessionId === sessionId).length;
}

/**
 * Whether session `sessionId` has writes still on their way: queued, or claimed by a replay that is sending
 * them right now. New writes of that session must then queue behind them to keep the server's order.
 */
export async function hasUnsent(dir: string, sessionId: string): Promise<boolean> {
  if ((await countPending(dir, sessionId)) > 0) return true;
  return (await claimedSessions(dir)).has(sessionId);
}

/**
 * Sessions with a write claimed (`.processing`) by a replay sending it now or by one killed while doing so,
 * each with the `createdAt` of its oldest claimed write.
 */
export async function claimedSessions(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = ENTRY_NAME.exec(e.name);
      if (!m || m[3] !== "processing") continue;
      const raw = await Deno.readTextFile(joinPath(dir, e.name)).catch(() => "");
      const entry = PendingEntrySchema.safeParse(parseOrNull(raw)).data;
      if (entry) out.set(entry.sessionId, Math.min(entry.createdAt, out.get(entry.sessionId) ?? Infinity));
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return out;
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
