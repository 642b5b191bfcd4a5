/**
 * The offline queues on disk. Ours: `<pending>/kimicode/<session>/` holds one file per queued request — a batch
 * of up to 100 messages or one commit — named `<seq>-m<count>.json` / `<seq>-c.json` by a per-session sequence
 * number, so a session's writes replay in the order they were queued and listing a queue reads no file; each
 * file is created whole or not at all, and replay (replay.ts) claims one by renaming it to
 * `<seq>-<tag>.<pid>.claim`. Writes OpenViking refused for good (or that waited past the age limit) are kept,
 * bounded, in the same form under `<pending>/kimicode-rejected/<session>/`. The shared queue of OpenViking's
 * other plugins (`<pending>/<sha256>_<retries>.json`) is replayed, never written.
 */

import * as z from "zod/mini";
import {
  createExclusive,
  ensurePrivateDir,
  isAlreadyExists,
  listDir,
  readJson,
  removeAbandonedTemps,
} from "../lib/fs.ts";
import { sha256Hex, stableStringify } from "../lib/hash.ts";
import { isRecord } from "../lib/parsed.ts";
import { dirName, joinPath, safeId } from "../lib/paths.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure, type OvResponse } from "./client.ts";

/** Subdirectory of the shared pending directory that holds our queue. */
export const QUEUE_SUBDIR = "kimicode";

/** Subdirectory of the shared pending directory that keeps the writes OpenViking refused (`replay --rejected`). */
export const REJECTED_SUBDIR = "kimicode-rejected";

/** A shared-queue claim older than this, or dated this far ahead (a clock set back), was abandoned. */
const ABANDONED_AFTER_MS = 10 * 60_000;
const FUTURE_SLACK_MS = 60_000;

/** A message as the server takes it. */
const MessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  turn_id: z.optional(z.string()),
});

/**
 * What every queued request has: the format version, its session, its place in the session's queue, its time;
 * `unsure` when a request of it may have reached the server without the reply reaching us (no reply came, or
 * the replay sending it died), with the time from which the session's answer counts (`true` in older
 * entries: at once): replay asks the session what it holds then, before sending it again.
 */
const ENTRY_BASE = {
  version: z.literal(1),
  sessionId: z.string().check(z.minLength(1)),
  seq: z.int().check(z.positive()),
  createdAt: z.number(),
  unsure: z.optional(z.union([z.literal(true), z.number()])),
};

/** One queued request: a batch of messages, or a commit. */
export const QueueEntrySchema = z.discriminatedUnion("kind", [
  z.object({
    ...ENTRY_BASE,
    kind: z.literal("messages"),
    messages: z.array(z.object({ key: z.string(), payload: MessageSchema })).check(z.minLength(1)),
  }),
  z.object({ ...ENTRY_BASE, kind: z.literal("commit"), key: z.string() }),
]);
export type QueueEntry = z.infer<typeof QueueEntrySchema>;
export type MessagePayload = z.infer<typeof MessageSchema>;

/** Why a kept write was refused: the server's HTTP status (0: it never reached it) and words, and when. */
const RejectionSchema = z.object({ at: z.number(), status: z.number(), message: z.string() });
export type Rejection = z.infer<typeof RejectionSchema>;

/**
 * `<seq>-<tag>.json`, tag `m<count>` (messages) or `c` (a commit), so listing a queue reads no file; claimed
 * by replay process `pid`: `<seq>-<tag>.<pid>.claim`.
 */
const QUEUE_FILE = /^(\d{10})-(m\d+|c)(?:\.json|\.(\d+)\.claim)$/;

/** The dedupe key of a message: sha256 of session id and the payload with sorted keys. */
export async function messageKey(sessionId: string, payload: MessagePayload): Promise<string> {
  return await sha256Hex(`addMessage\n${sessionId}\n${stableStringify(payload)}`);
}

/** The queue directory of one OpenViking session (its rejected writes' with `subdir` REJECTED_SUBDIR). */
export async function sessionQueueDir(
  pendingDir: string,
  sessionId: string,
  subdir = QUEUE_SUBDIR,
): Promise<string> {
  return joinPath(pendingDir, subdir, await safeId(sessionId));
}

/** A file of a session's queue. */
export interface QueueFile {
  name: string;
  seq: number;
  /** `m<count>` or `c`. */
  tag: string;
  /** The pid of the replay that claimed it (claims only). */
  claimedBy?: number;
}

/** The tag of what an entry holds: `c` for a commit, `m<count>` for messages. */
const tagOf = (entry: QueueEntry): string => entry.kind === "commit" ? "c" : `m${entry.messages.length}`;

/** The file name of entry `seq` holding `holds` (an entry, or its tag); claimed by replay `pid`, if given. */
export function entryName(seq: number, holds: QueueEntry | string, pid?: number): string {
  const tag = typeof holds === "string" ? holds : tagOf(holds);
  return `${String(seq).padStart(10, "0")}-${tag}${pid === undefined ? ".json" : `.${pid}.claim`}`;
}

/** The queue directories of one session, or of every session that has one (none when there is no queue). */
export async function sessionDirs(
  pendingDir: string,
  sessionId?: string,
  subdir = QUEUE_SUBDIR,
): Promise<string[]> {
  if (sessionId !== undefined) return [await sessionQueueDir(pendingDir, sessionId, subdir)];
  const root = joinPath(pendingDir, subdir);
  return (await listDir(root)).filter((e) => e.isDirectory).map((e) => joinPath(root, e.name));
}

/** The entries and claims of a session's queue directory, in sequence order (none when it does not exist). */
export async function queueFiles(dir: string): Promise<QueueFile[]> {
  const out: QueueFile[] = [];
  for (const e of await listDir(dir)) {
    if (e.isDirectory) continue;
    const m = QUEUE_FILE.exec(e.name);
    if (m) {
      out.push({ name: e.name, seq: Number(m[1]), tag: m[2], ...(m[3] ? { claimedBy: Number(m[3]) } : {}) });
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** A queue file's JSON; undefined when it is not a regular file, never opened (reading a FIFO blocks). */
async function readQueueJson(path: string): Promise<unknown> {
  return await Deno.lstat(path).then((i) => i.isFile ? readJson(path) : undefined, () => undefined);
}

/** An entry file, parsed; undefined when it is gone, no regular file or not an entry this version understands. */
export async function readEntry(path: string): Promise<QueueEntry | undefined> {
  return QueueEntrySchema.safeParse(await readQueueJson(path)).data;
}

/** What replay appends to the name of a queue file it cannot read: set aside, kept for the user. */
export const UNREADABLE = ".unreadable";

/** The files set aside as unreadable in our queue and the rejected place. */
export async function setAsideFiles(pendingDir: string): Promise<string[]> {
  const out: string[] = [];
  for (const subdir of [QUEUE_SUBDIR, REJECTED_SUBDIR]) {
    for (const dir of await sessionDirs(pendingDir, undefined, subdir)) {
      for (const e of await listDir(dir)) if (e.name.endsWith(UNREADABLE)) out.push(joinPath(dir, e.name));
    }
  }
  return out.sort();
}

/** The set-aside files in words: how many, where, what to do (status, doctor, replay); none: undefined. */
export function setAsideWords(files: readonly string[]): { summary: string; fix: string } | undefined {
  if (!files.length) return undefined;
  const dirs = [...new Set(files.map(dirName))];
  const more = dirs.length > 1 ? ` and ${dirs.length - 1} other folder(s)` : "";
  return {
    summary: `${files.length} queued write(s) could not be read and are never sent: set aside in ${
      dirs[0]
    }${more}`,
    fix: `they are yours: look at them (*${UNREADABLE}); put one you repaired back under its name without ` +
      `${UNREADABLE}, or delete it`,
  };
}

/** Largest batch the server accepts. */
export const BATCH_LIMIT = 100;

/** Largest batch body we send (a proxy in front of OpenViking often refuses bodies over 1 MB). */
export const BATCH_MAX_BYTES = 512 * 1024;

/** Byte size of a message in a JSON body (close enough for batching). */
function payloadBytes(p: MessagePayload): number {
  return new TextEncoder().encode(JSON.stringify(p)).length + 1;
}

/** Splits `payloads[from…]` into the next batch: ≤ `BATCH_LIMIT` messages and ≤ `BATCH_MAX_BYTES` (≥ 1 message). */
export function nextBatchEnd(payloads: readonly MessagePayload[], from: number): number {
  let bytes = 0;
  let end = from;
  while (end < payloads.length && end - from < BATCH_LIMIT) {
    bytes += payloadBytes(payloads[end]);
    if (end > from && bytes > BATCH_MAX_BYTES) break;
    end++;
  }
  return end;
}

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
      const file = { name: entryName(seq, entry), seq, tag: tagOf(entry) };
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
   * is one whose request may have arrived, and when we stopped waiting for it (replay asks the session first).
   */
  async messages(
    payloads: readonly MessagePayload[],
    options: { now?: number; unsure?: number } = {},
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
        ...(i === 0 && options.unsure !== undefined ? { unsure: options.unsure } : {}),
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
    const raw = newest && await readQueueJson(joinPath(dir, newest.name));
    const why = RejectionSchema.safeParse(isRecord(raw) ? raw.rejection : undefined).data;
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
      messages: files.reduce((n, f) => n + (f.tag === "c" ? 0 : Number(f.tag.slice(1))), 0),
      commits: files.filter((f) => f.tag === "c").length,
      oldest: first?.createdAt ?? Date.now(),
    });
    out.entries += files.length;
  }
  out.sessions.sort((a, b) => a.oldest - b.oldest);
  return out;
}

// The shared queue of OpenViking's other plugins.

/** The API path of a session. */
export const sessionPath = (sid: string): string => `/api/v1/sessions/${encodeURIComponent(sid)}`;

/** One queued write. */
export const SharedEntrySchema = z.object({
  type: z.enum(["addMessage", "commitSession"]),
  sessionId: z.string().check(z.minLength(1)),
  payload: z.unknown(),
  createdAt: z.number(),
  retries: z.catch(z.int().check(z.nonnegative()), 0),
  dedupKey: z.optional(z.string()),
});
export type SharedEntry = z.infer<typeof SharedEntrySchema>;

const ENTRY_NAME = /^([0-9a-f]{64})_(\d+)\.(json|processing)$/;

/** A queued entry as found on disk. */
export interface SharedFile {
  name: string;
  key: string;
  entry: SharedEntry;
}

/** Lists parseable `.json` entries, oldest first. Unparseable files older than a minute are deleted. */
export async function listShared(dir: string): Promise<SharedFile[]> {
  const out: SharedFile[] = [];
  for (const name of (await listDir(dir)).filter((e) => e.isFile).map((e) => e.name).sort()) {
    const m = ENTRY_NAME.exec(name);
    if (!m || m[3] !== "json") continue;
    const path = joinPath(dir, name);
    const raw = await readJson(path);
    if (raw === undefined) { // unparseable (gone: no stat either)
      const info = await Deno.stat(path).catch(() => undefined);
      if (info?.mtime && Date.now() - info.mtime.getTime() > 60_000) await Deno.remove(path).catch(() => {});
      continue;
    }
    const parsed = SharedEntrySchema.safeParse(raw);
    if (!parsed.success) continue;
    out.push({
      name,
      key: m[1],
      entry: { ...parsed.data, retries: Math.max(parsed.data.retries, Number(m[2])) },
    });
  }
  return out.sort((a, b) => a.entry.createdAt - b.entry.createdAt || (a.name < b.name ? -1 : 1));
}

/**
 * The sessions with a write claimed (`.processing`) by a replay sending it now or killed while doing so, each
 * with the `createdAt` of its oldest claimed write; a claim abandoned (older than ABANDONED_AFTER_MS, or dated
 * past FUTURE_SLACK_MS ahead) is put back into the queue first.
 */
async function liveClaims(dir: string, now: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of await listDir(dir)) {
    const m = ENTRY_NAME.exec(e.name);
    if (!m || m[3] !== "processing") continue;
    const path = joinPath(dir, e.name);
    const age = now - ((await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? now);
    if (age > ABANDONED_AFTER_MS || -age > FUTURE_SLACK_MS) {
      await Deno.rename(path, joinPath(dir, `${m[1]}_${m[2]}.json`)).catch(() => {});
      continue;
    }
    const entry = SharedEntrySchema.safeParse(await readQueueJson(path)).data;
    if (entry) out.set(entry.sessionId, Math.min(entry.createdAt, out.get(entry.sessionId) ?? Infinity));
  }
  return out;
}

/** Limits of one replay run. */
export interface SharedReplayOptions {
  /** At most this many entries are sent per run. */
  limit: number;
  /** Entries whose retries (spent by other plugins' replays) reached this are dropped. */
  maxRetries: number;
  /** Entries older than this are dropped. */
  ttlDays: number;
  budget: Budget;
  now?: number;
}

/** What a replay run did. */
export interface SharedReplayReport {
  replayed: number;
  /** Entries dropped: rejected by OpenViking, retries spent elsewhere, or too old. */
  dropped: number;
  /** Entries left for a later run (limit, budget, a failure, or a session busy elsewhere). */
  deferred: number;
  /** The failure that stopped the run, if any. */
  cause?: OvFailure;
}

/** Sends one queued write. */
function sendEntry(
  client: OpenVikingClient,
  entry: SharedEntry,
  budget: Budget,
): Promise<OvResponse<unknown>> {
  const path = `${sessionPath(entry.sessionId)}/${entry.type === "commitSession" ? "commit" : "messages"}`;
  return client.request("POST", path, AnyResult, { body: entry.payload ?? {}, budget, peerId: null });
}

/**
 * Replays the shared queue oldest first, bounded in count and time. A failure that is not OpenViking's
 * rejection puts the entry back untouched and stops the run, so order is kept and nothing is spent.
 */
export async function replayShared(
  dir: string,
  client: OpenVikingClient,
  options: SharedReplayOptions,
): Promise<SharedReplayReport> {
  const report: SharedReplayReport = { replayed: 0, dropped: 0, deferred: 0 };
  const now = options.now ?? Date.now();
  // While another run holds a write of a session, that session's later writes stay queued: the server sees
  // each session's writes in order.
  const claimed = await liveClaims(dir, now);
  const ttlMs = options.ttlDays * 86_400_000;
  const queue: SharedFile[] = [];
  for (const f of await listShared(dir)) {
    if (now - f.entry.createdAt > ttlMs || f.entry.retries >= options.maxRetries) {
      await Deno.remove(joinPath(dir, f.name)).then(() => report.dropped++, () => {});
    } else queue.push(f);
  }
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
      waiting++;
      claimed.set(f.entry.sessionId, Math.min(f.entry.createdAt, claimed.get(f.entry.sessionId) ?? Infinity));
      continue;
    }
    const res = await sendEntry(client, f.entry, options.budget);
    if (res.ok || res.kind === "rejected") {
      await Deno.remove(processing).catch(() => {});
      if (res.ok) report.replayed++;
      else report.dropped++;
      continue;
    }
    report.cause = res;
    await Deno.rename(processing, joinPath(dir, f.name)).catch(() => {});
    break;
  }
  report.deferred = queue.length - i + waiting;
  return report;
}

/** Number of entries in the shared queue. */
export async function countShared(dir: string): Promise<number> {
  return (await listShared(dir)).length;
}
