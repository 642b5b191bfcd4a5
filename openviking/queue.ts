/**
 * Writing our offline queue (the files are described in pending-files.ts): a session's writes are appended
 * after its last one, each file created whole or not at all (exclusive create, fsync), so a session's
 * writes replay in the order they were queued and asking "has this session unsent writes?" reads one small
 * directory. Queueing a message that is already queued is a no-op. Replay (replay.ts) only removes files.
 * A write OpenViking refuses for good is kept in the rejected place (`keepRejected`), bounded, never dropped
 * before the bound; nothing else spends anything.
 */

import { createExclusive, ensurePrivateDir, isAlreadyExists, removeAbandonedTemps } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";
import { type MessagePayload, nextBatchEnd } from "./deliver.ts";
import {
  entryFile,
  messageKey,
  messagesIn,
  QUEUE_SUBDIR,
  type QueueEntry,
  type QueueFile,
  queueFiles,
  readEntry,
  readRejection,
  REJECTED_SUBDIR,
  type Rejection,
  sessionDirs,
  sessionQueueDir,
} from "./queue-files.ts";

export {
  QUEUE_SUBDIR,
  type QueueEntry,
  QueueEntrySchema,
  REJECTED_SUBDIR,
  sessionQueueDir,
} from "./queue-files.ts";

/** The rejected place keeps at most this many writes; past it the oldest are dropped. */
export const REJECTED_MAX_ENTRIES = 1000;
/** … and at most this many bytes. */
export const REJECTED_MAX_BYTES = 16 * 1024 * 1024;

/** Writes entries after the session's last one; returns the files stored (stops at the first failure). */
async function appendEntries(
  dir: string,
  entries: ((seq: number) => QueueEntry & { rejection?: Rejection })[],
  files: QueueFile[],
): Promise<QueueFile[]> {
  const stored: QueueFile[] = [];
  if (entries.length === 0) return stored;
  await ensurePrivateDir(dir);
  let seq = files.at(-1)?.seq ?? 0;
  for (const make of entries) {
    for (let attempt = 0;; attempt++) {
      seq++;
      const entry = make(seq);
      const file = entryFile(seq, entry);
      try {
        await createExclusive(joinPath(dir, file.name), `${JSON.stringify(entry)}\n`);
        stored.push(file);
        break;
      } catch (error) {
        if (isAlreadyExists(error) && attempt < 100) continue;
        return stored;
      }
    }
  }
  return stored;
}

/** Keys of every message queued (or being replayed) for a session. */
async function queuedKeys(dir: string, files: QueueFile[]): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const f of files) {
    const entry = await readEntry(joinPath(dir, f.name));
    if (entry?.kind === "messages") { for (const m of entry.messages) keys.add(m.key); }
    if (entry?.kind === "commit") keys.add(`commit:${entry.key}`);
  }
  return keys;
}

/**
 * One session's queue, opened for appending: the dedupe keys and the last sequence number are read once, so a
 * capture that queues a long backlog in many steps never re-reads what it queued itself. Only the holder of the
 * session's lock appends (capture); replay only removes, which never invalidates what is remembered here.
 */
export class SessionQueue {
  private constructor(
    readonly dir: string,
    readonly sessionId: string,
    private files: QueueFile[],
    private readonly keys: Set<string>,
  ) {}

  /** Opens the queue of `sessionId` under `pendingDir`. */
  static async open(pendingDir: string, sessionId: string): Promise<SessionQueue> {
    const dir = await sessionQueueDir(pendingDir, sessionId);
    await removeAbandonedTemps(dir); // what a killed capture of this session left mid-write
    const files = await queueFiles(dir);
    return new SessionQueue(dir, sessionId, files, await queuedKeys(dir, files));
  }

  /** Whether writes of the session wait in the queue (as of opening, plus what was appended since). */
  get waiting(): boolean {
    return this.files.length > 0;
  }

  private async append(makers: ((seq: number) => QueueEntry)[]): Promise<number> {
    const stored = await appendEntries(this.dir, makers, this.files);
    this.files.push(...stored);
    return stored.length;
  }

  /**
   * Queues messages in order, in batches; messages already queued are skipped. Returns how many of the leading
   * messages are durably queued (a failure stops it: the rest is not acknowledged). `unsure`: the first batch
   * is one whose request may have arrived (replay asks the session before sending it).
   */
  async messages(
    payloads: readonly MessagePayload[],
    options: { now?: number; unsure?: boolean } = {},
  ): Promise<number> {
    const now = options.now ?? Date.now();
    if (payloads.length === 0) return 0;
    try {
      const keyed = await Promise.all(payloads.map(async (payload, index) => ({
        key: await messageKey(this.sessionId, payload),
        payload,
        index,
      })));
      const fresh = keyed.filter((m) => !this.keys.has(m.key));
      const batches: (typeof fresh)[] = [];
      for (let i = 0; i < fresh.length;) {
        const end = nextBatchEnd(fresh.map((m) => m.payload), i);
        batches.push(fresh.slice(i, end));
        i = end;
      }
      const sessionId = this.sessionId;
      const stored = await this.append(batches.map((b, i) => (seq) => ({
        version: 1,
        kind: "messages",
        sessionId,
        seq,
        createdAt: now,
        ...(i === 0 && options.unsure ? { unsure: true as const } : {}),
        messages: b.map(({ key, payload }) => ({ key, payload })),
      })));
      for (const b of batches.slice(0, stored)) for (const m of b) this.keys.add(m.key);
      // Everything before the first batch that could not be stored is settled.
      return stored === batches.length ? payloads.length : batches[stored][0].index;
    } catch {
      return 0;
    }
  }

  /** Queues the commit named `key` behind what is queued; false when it could not be stored. */
  async commit(key: string, now = Date.now()): Promise<boolean> {
    if (this.keys.has(`commit:${key}`)) return true;
    const sessionId = this.sessionId;
    try {
      const ok = (await this.append([
        (seq) => ({ version: 1, kind: "commit", sessionId, seq, createdAt: now, key }),
      ])) === 1;
      if (ok) this.keys.add(`commit:${key}`);
      return ok;
    } catch {
      return false;
    }
  }
}

/** Queues messages of session `sessionId` in order (see `SessionQueue.messages`). */
export async function enqueueMessages(
  pendingDir: string,
  sessionId: string,
  payloads: readonly MessagePayload[],
  now = Date.now(),
): Promise<number> {
  try {
    return await (await SessionQueue.open(pendingDir, sessionId)).messages(payloads, { now });
  } catch {
    return 0;
  }
}

/** Queues the commit named `key` behind the session's queued writes; false when it could not be stored. */
export async function enqueueCommit(
  pendingDir: string,
  sessionId: string,
  key: string,
  now = Date.now(),
): Promise<boolean> {
  try {
    return await (await SessionQueue.open(pendingDir, sessionId)).commit(key, now);
  } catch {
    return false;
  }
}

/** Dedupe keys of every message queued (or being replayed) for a session, or kept as refused. */
export async function queuedMessageKeys(pendingDir: string, sessionId: string): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const subdir of [QUEUE_SUBDIR, REJECTED_SUBDIR]) {
    const dir = await sessionQueueDir(pendingDir, sessionId, subdir);
    for (const k of await queuedKeys(dir, await queueFiles(dir))) keys.add(k);
  }
  return keys;
}

/** A write to keep in the rejected place: messages, or the commit named `commit`. */
export type KeptWrite = { messages: readonly MessagePayload[] } | { commit: string };

/**
 * Keeps a write OpenViking refused for good (`why`: its status and words) — or one that waited past the queue's
 * age limit — in the rejected place, after the session's last one there, then drops the oldest kept writes
 * past the bounds. `replay --rejected` sends them again. Throws when it cannot be stored: the caller must not
 * count the write as settled.
 */
export async function keepRejected(
  pendingDir: string,
  sessionId: string,
  write: KeptWrite,
  why: { status: number; message: string },
  createdAt = Date.now(),
): Promise<void> {
  const dir = await sessionQueueDir(pendingDir, sessionId, REJECTED_SUBDIR);
  const body = "commit" in write ? { kind: "commit" as const, key: write.commit } : {
    kind: "messages" as const,
    messages: await Promise.all(write.messages.map(async (payload) => ({
      key: await messageKey(sessionId, payload),
      payload,
    }))),
  };
  const rejection = { at: Date.now(), status: why.status, message: why.message };
  const make = (seq: number) => ({ version: 1 as const, sessionId, seq, createdAt, ...body, rejection });
  const stored = await appendEntries(dir, [make], await queueFiles(dir)).catch(() => []);
  if (stored.length !== 1) throw new Error(`${dir} could not keep a write OpenViking refused`);
  await trimRejected(pendingDir, joinPath(dir, stored[0].name));
}

/** A file of the rejected place: where it is, its size and when it was kept. */
interface KeptFile {
  path: string;
  bytes: number;
  at: number;
}

/** Every write the rejected place keeps (claims of a running `replay --rejected` left out), oldest first. */
async function keptFiles(pendingDir: string): Promise<KeptFile[]> {
  const out: KeptFile[] = [];
  for (const dir of await sessionDirs(pendingDir, undefined, REJECTED_SUBDIR)) {
    for (const f of await queueFiles(dir)) {
      if (f.claimedBy !== undefined) continue;
      const path = joinPath(dir, f.name);
      const info = await Deno.stat(path).catch(() => undefined);
      if (info) out.push({ path, bytes: info.size, at: info.mtime?.getTime() ?? 0 });
    }
  }
  return out.sort((a, b) => a.at - b.at || (a.path < b.path ? -1 : 1));
}

/**
 * The rejected place as this process knows it, per pending directory: listed at its first write there, then
 * kept up to date by its own writes, so a capture keeping many refused messages stats each file once. Another
 * process's writes since are not in it: the bound is then kept loosely, never by dropping more than it says.
 */
const knownPlaces = new Map<string, { files: KeptFile[]; bytes: number }>();

/** Adds `added` to what the rejected place keeps and drops its oldest writes while it is past its bounds. */
async function trimRejected(pendingDir: string, added: string): Promise<void> {
  let place = knownPlaces.get(pendingDir);
  if (!place) {
    const files = await keptFiles(pendingDir);
    knownPlaces.set(pendingDir, place = { files, bytes: files.reduce((n, f) => n + f.bytes, 0) });
  } else {
    const info = await Deno.stat(added).catch(() => undefined);
    if (info) place.files.push({ path: added, bytes: info.size, at: Date.now() });
    place.bytes += info?.size ?? 0;
  }
  // Never the write just kept: a single write larger than the bound stays alone.
  while (
    place.files.length > 1 && (place.files.length > REJECTED_MAX_ENTRIES || place.bytes > REJECTED_MAX_BYTES)
  ) {
    const oldest = place.files.shift()!;
    await Deno.remove(oldest.path).catch(() => {});
    place.bytes -= oldest.bytes;
  }
}

/** What the rejected place keeps: per session, in all, and the newest refusal's words. */
export interface RejectedSummary extends QueueSummary {
  last?: Rejection;
}

/** The rejected place as doctor, status and uninstall tell it; reads each session's first and newest file. */
export async function rejectedSummary(pendingDir: string): Promise<RejectedSummary> {
  const out: RejectedSummary = await queueSummary(pendingDir, REJECTED_SUBDIR);
  for (const dir of await sessionDirs(pendingDir, undefined, REJECTED_SUBDIR)) {
    const newest = (await queueFiles(dir)).at(-1);
    const why = newest && await readRejection(joinPath(dir, newest.name));
    if (why && why.at >= (out.last?.at ?? 0)) out.last = why;
  }
  return out;
}

/** Whether session `sessionId` has writes queued or being replayed right now (new writes must queue behind them). */
export async function hasUnsent(pendingDir: string, sessionId: string): Promise<boolean> {
  return (await queueFiles(await sessionQueueDir(pendingDir, sessionId))).length > 0;
}

/** What is waiting in our queue. */
export interface QueueSummary {
  sessions: { sessionId: string; entries: number; messages: number; commits: number; oldest: number }[];
  entries: number;
}

/**
 * Every session's queued entries (for doctor and status; the rejected place's with `subdir` REJECTED_SUBDIR);
 * reads only each session's first entry.
 */
export async function queueSummary(pendingDir: string, subdir = QUEUE_SUBDIR): Promise<QueueSummary> {
  const out: QueueSummary = { sessions: [], entries: 0 };
  for (const dir of await sessionDirs(pendingDir, undefined, subdir)) {
    const files = await queueFiles(dir);
    if (!files.length) continue;
    const first = await readEntry(joinPath(dir, files[0].name));
    out.sessions.push({
      sessionId: first?.sessionId ?? dir.slice(dir.lastIndexOf("/") + 1),
      entries: files.length,
      messages: files.reduce((n, f) => n + messagesIn(f.tag), 0),
      commits: files.filter((f) => f.tag === "c").length,
      oldest: first?.createdAt ?? Date.now(),
    });
    out.entries += files.length;
  }
  out.sessions.sort((a, b) => a.oldest - b.oldest);
  return out;
}
