/**
 * Our offline write queue: `<pending>/kimicode/<session>/` holds one file per queued request — a batch of up to
 * 100 messages (`kind: "messages"`) or one commit (`kind: "commit"`) — named by a per-session sequence
 * number, so a session's writes replay in the order they were queued whatever the clock says, and asking
 * "has this session unsent writes?" reads one small directory. Messages carry a dedupe key, so queueing a
 * message that is already queued is a no-op. File names carry the kind and size (`<seq>-m<count>.json`,
 * `<seq>-c.json`), so listing a queue reads no file. Replay claims a file by renaming it to
 * `<seq>-<tag>.<pid>.claim`; a claim whose process is gone (or that is older than `ABANDONED_AFTER_MS`, or dated
 * in the future) is put back.
 * Only OpenViking's own rejection drops a message; nothing else spends anything.
 */

import * as z from "zod/mini";
import { sha256Hex, stableStringify } from "./hash.ts";
import { ensurePrivateDir, isAlreadyExists, isNotFound, tempSibling, writeFileAtomic } from "./fs.ts";
import type { Budget, OpenVikingClient, OvFailure } from "./http.ts";
import { isProcessGone } from "./lock.ts";
import { joinPath } from "./paths.ts";
import { safeId } from "./state.ts";
import { deliverMessages, type MessagePayload, nextBatchEnd } from "./deliver.ts";
import { replayShared, type SharedReplayReport } from "./pending-shared.ts";

/** Subdirectory of the shared pending directory that holds our queue. */
export const QUEUE_SUBDIR = "kimicode";

/** A claim older than this, or dated this far in the future, was abandoned and is put back. */
export const ABANDONED_AFTER_MS = 10 * 60_000;
const FUTURE_SLACK_MS = 60_000;

const MessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  turn_id: z.optional(z.string()),
});

/** One queued request. */
export const QueueEntrySchema = z.discriminatedUnion("kind", [
  z.object({
    version: z.literal(1),
    kind: z.literal("messages"),
    sessionId: z.string().check(z.minLength(1)),
    seq: z.int().check(z.positive()),
    createdAt: z.number(),
    messages: z.array(z.object({ key: z.string(), payload: MessageSchema })).check(z.minLength(1)),
  }),
  z.object({
    version: z.literal(1),
    kind: z.literal("commit"),
    sessionId: z.string().check(z.minLength(1)),
    seq: z.int().check(z.positive()),
    createdAt: z.number(),
    key: z.string(),
  }),
]);
export type QueueEntry = z.infer<typeof QueueEntrySchema>;

/** `<seq>-<tag>.json`, tag `m<count>` (messages) or `c` (a commit): listing a queue never reads its files. */
const ENTRY = /^(\d{10})-(m\d+|c)\.json$/;
/** `<seq>-<tag>.<pid>.claim`: claimed by replay process `pid`. */
const CLAIM = /^(\d{10})-(m\d+|c)\.(\d+)\.claim$/;

/** The dedupe key of a message: sha256 of session id and the payload with sorted keys. */
export async function messageKey(sessionId: string, payload: MessagePayload): Promise<string> {
  return await sha256Hex(`addMessage\n${sessionId}\n${stableStringify(payload)}`);
}

/** The queue directory of one OpenViking session. */
export async function sessionQueueDir(pendingDir: string, sessionId: string): Promise<string> {
  return joinPath(pendingDir, QUEUE_SUBDIR, await safeId(sessionId));
}

/** A file of a session's queue. */
interface QueueFile {
  name: string;
  seq: number;
  /** `m<count>` or `c`. */
  tag: string;
  /** The pid of the replay that claimed it (claims only). */
  claimedBy?: number;
}

const pad = (seq: number) => String(seq).padStart(10, "0");
const entryName = (seq: number, tag: string) => `${pad(seq)}-${tag}.json`;
const claimName = (seq: number, tag: string, pid: number) => `${pad(seq)}-${tag}.${pid}.claim`;
const tagOf = (entry: QueueEntry) => entry.kind === "commit" ? "c" : `m${entry.messages.length}`;
const messagesIn = (tag: string) => tag.startsWith("m") ? Number(tag.slice(1)) : 0;

async function queueFiles(dir: string): Promise<QueueFile[]> {
  const out: QueueFile[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) continue;
      const m = ENTRY.exec(e.name);
      if (m) out.push({ name: e.name, seq: Number(m[1]), tag: m[2] });
      const c = CLAIM.exec(e.name);
      if (c) out.push({ name: e.name, seq: Number(c[1]), tag: c[2], claimedBy: Number(c[3]) });
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return out.sort((a, b) => a.seq - b.seq);
}

async function readEntry(path: string): Promise<QueueEntry | undefined> {
  try {
    return QueueEntrySchema.safeParse(JSON.parse(await Deno.readTextFile(path))).data;
  } catch {
    return undefined;
  }
}

/** Creates a file with complete content or not at all, never replacing one (temp + fsync + hard link). */
async function createExclusive(path: string, text: string): Promise<void> {
  const tmp = tempSibling(path);
  try {
    const file = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
    try {
      const bytes = new TextEncoder().encode(text);
      for (let written = 0; written < bytes.length;) written += await file.write(bytes.subarray(written));
      await file.sync(); // a queued turn must survive more than a killed process
    } finally {
      file.close();
    }
    await Deno.link(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/** Writes entries after the session's last one; returns the files stored (stops at the first failure). */
async function appendEntries(
  dir: string,
  entries: ((seq: number) => QueueEntry)[],
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
      const name = entryName(seq, tagOf(entry));
      try {
        await createExclusive(joinPath(dir, name), `${JSON.stringify(entry)}\n`);
        stored.push({ name, seq, tag: tagOf(entry) });
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
    const files = await queueFiles(dir);
    return new SessionQueue(dir, sessionId, files, await queuedKeys(dir, files));
  }

  private async append(makers: ((seq: number) => QueueEntry)[]): Promise<number> {
    const stored = await appendEntries(this.dir, makers, this.files);
    this.files.push(...stored);
    return stored.length;
  }

  /**
   * Queues messages in order, in batches; messages already queued are skipped. Returns how many of the leading
   * messages are durably queued (a failure stops it: the rest is not acknowledged).
   */
  async messages(payloads: readonly MessagePayload[], now = Date.now()): Promise<number> {
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
      const stored = await this.append(batches.map((b) => (seq) => ({
        version: 1,
        kind: "messages",
        sessionId,
        seq,
        createdAt: now,
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
    return await (await SessionQueue.open(pendingDir, sessionId)).messages(payloads, now);
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

/** Dedupe keys of every message queued (or being replayed) for a session. */
export async function queuedMessageKeys(pendingDir: string, sessionId: string): Promise<Set<string>> {
  const dir = await sessionQueueDir(pendingDir, sessionId);
  return await queuedKeys(dir, await queueFiles(dir));
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

/** Every session's queued entries (for doctor and status); reads only each session's first entry. */
export async function queueSummary(pendingDir: string): Promise<QueueSummary> {
  const root = joinPath(pendingDir, QUEUE_SUBDIR);
  const out: QueueSummary = { sessions: [], entries: 0 };
  try {
    for await (const e of Deno.readDir(root)) {
      if (!e.isDirectory) continue;
      const dir = joinPath(root, e.name);
      const files = await queueFiles(dir);
      if (!files.length) continue;
      const first = await readEntry(joinPath(dir, files[0].name));
      out.sessions.push({
        sessionId: first?.sessionId ?? e.name,
        entries: files.length,
        messages: files.reduce((n, f) => n + messagesIn(f.tag), 0),
        commits: files.filter((f) => f.tag === "c").length,
        oldest: first?.createdAt ?? Date.now(),
      });
      out.entries += files.length;
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  out.sessions.sort((a, b) => a.oldest - b.oldest);
  return out;
}

/** Puts claims back whose replay process is gone, that are older than `ABANDONED_AFTER_MS`, or future-dated. */
async function recoverClaims(dir: string, files: QueueFile[], now: number): Promise<QueueFile[]> {
  const out: QueueFile[] = [];
  for (const f of files) {
    if (f.claimedBy === undefined) {
      out.push(f);
      continue;
    }
    const path = joinPath(dir, f.name);
    const mtime = (await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? now;
    const abandoned = isProcessGone(f.claimedBy) || now - mtime > ABANDONED_AFTER_MS ||
      mtime - now > FUTURE_SLACK_MS;
    // Progress inside a claim shrinks its content, not its name: name it after what is left.
    const left = abandoned ? await readEntry(path) : undefined;
    const back = entryName(f.seq, left ? tagOf(left) : f.tag);
    if (abandoned && await Deno.rename(path, joinPath(dir, back)).then(() => true, () => false)) {
      out.push({ name: back, seq: f.seq, tag: left ? tagOf(left) : f.tag });
    } else out.push(f);
  }
  return out;
}

/** Limits of one replay run. */
export interface ReplayOptions {
  /** At most this many entries are sent per run. */
  limit: number;
  /** Entries older than this are dropped. */
  ttlDays: number;
  budget: Budget;
  /** Only this OpenViking session. */
  sessionId?: string;
  now?: number;
}

/** What a replay run did. */
export interface ReplayReport {
  /** Entries delivered (all their messages sent or rejected, or the commit accepted). */
  replayed: number;
  /** Messages sent (of replayed or partly replayed entries). */
  messages: number;
  /** Messages (or commits) OpenViking rejected: dropped. */
  rejected: number;
  /** Entries dropped for age (TTL). */
  expired: number;
  /** Entries left for a later run (limit, budget, a failure, or a session busy elsewhere). */
  deferred: number;
  /** Task ids of the commits replayed. */
  commitTasks: string[];
  /** The failure that stopped the run (or a session), if any. */
  cause?: OvFailure;
}

/** A failure that says the server as a whole cannot be used now (every session would fail the same way). */
function stopsEverything(res: OvFailure): boolean {
  return res.kind === "unreachable" || res.kind === "auth" || res.kind === "redirect" ||
    res.kind === "not-openviking" || res.kind === "missing-route";
}

/** Replays one claimed entry; returns the failure that stopped it, if any (progress is kept in the claim). */
async function replayEntry(
  client: OpenVikingClient,
  claimPath: string,
  entry: QueueEntry,
  budget: Budget,
  report: ReplayReport,
): Promise<OvFailure | undefined> {
  const sid = encodeURIComponent(entry.sessionId);
  if (entry.kind === "commit") {
    const res = await client.request("POST", `/api/v1/sessions/${sid}/commit`, {
      body: {},
      budget,
      peerId: null,
    });
    if (res.ok) {
      const task = (res.result as Record<string, unknown> | undefined)?.task_id;
      if (typeof task === "string") report.commitTasks.push(task);
      return undefined;
    }
    if (res.kind === "rejected") {
      report.rejected++;
      return undefined;
    }
    return res;
  }
  const messages = entry.messages;
  const d = await deliverMessages(client, entry.sessionId, messages.map((m) => m.payload), {
    budget,
    onSettled: async (settled) => {
      // Progress is kept in the claim: a replay killed later never sends these again.
      if (settled < messages.length) {
        await writeFileAtomic(
          claimPath,
          `${JSON.stringify({ ...entry, messages: messages.slice(settled) })}\n`,
          {
            privateDir: false,
            durable: true,
          },
        );
      }
    },
  });
  report.messages += d.sent;
  report.rejected += d.rejections.length;
  return d.stop;
}

/** Replays our queue: sessions oldest first, each in sequence order, bounded in entries and time. */
export async function replayQueue(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const report: ReplayReport = {
    replayed: 0,
    messages: 0,
    rejected: 0,
    expired: 0,
    deferred: 0,
    commitTasks: [],
  };
  const now = options.now ?? Date.now();
  const ttlMs = options.ttlDays * 86_400_000;
  const root = joinPath(pendingDir, QUEUE_SUBDIR);
  const dirs: string[] = [];
  if (options.sessionId !== undefined) dirs.push(await sessionQueueDir(pendingDir, options.sessionId));
  else {
    try {
      for await (const e of Deno.readDir(root)) if (e.isDirectory) dirs.push(joinPath(root, e.name));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  const sessions: { dir: string; files: QueueFile[]; first: number }[] = [];
  for (const dir of dirs) {
    const files = await recoverClaims(dir, await queueFiles(dir), now);
    if (!files.length) {
      await Deno.remove(dir).catch(() => {}); // an empty session directory is not kept
      continue;
    }
    const first = files[0].claimedBy === undefined
      ? (await readEntry(joinPath(dir, files[0].name)))?.createdAt ?? now
      : now;
    sessions.push({ dir, files, first });
  }
  sessions.sort((a, b) => a.first - b.first);
  let sent = 0;
  let stopAll = false;
  for (const s of sessions) {
    let i = 0;
    for (; i < s.files.length && !stopAll; i++) {
      const f = s.files[i];
      // A claimed entry is being sent by another replay: this session's later writes wait for it.
      if (f.claimedBy !== undefined) break;
      if (sent >= options.limit || options.budget.remaining() < 100) {
        stopAll = true;
        break;
      }
      const path = joinPath(s.dir, f.name);
      const claim = joinPath(s.dir, claimName(f.seq, f.tag, Deno.pid));
      if (!(await Deno.rename(path, claim).then(() => true, () => false))) break;
      const entry = await readEntry(claim);
      if (!entry) {
        // Not ours to understand (torn by hand, or a newer format): keep it aside rather than block the session.
        await Deno.rename(claim, `${path}.unreadable`).catch(() => {});
        continue;
      }
      if (now - entry.createdAt > ttlMs) {
        await Deno.remove(claim).catch(() => {});
        report.expired++;
        continue;
      }
      sent++;
      const stop = await replayEntry(client, claim, entry, options.budget, report);
      if (!stop) {
        await Deno.remove(claim).catch(() => {});
        report.replayed++;
        continue;
      }
      report.cause = stop;
      const left = await readEntry(claim);
      await Deno.rename(claim, joinPath(s.dir, entryName(f.seq, left ? tagOf(left) : f.tag))).catch(() => {});
      if (stopsEverything(stop)) stopAll = true;
      break;
    }
    report.deferred += s.files.length - i;
    if (i === s.files.length) await Deno.remove(s.dir).catch(() => {});
  }
  return report;
}

/** Limits of a replay of both queues (ours, then the shared one). */
export interface ReplayAllOptions extends ReplayOptions {
  /** Shared-queue entries whose retries (spent by other plugins) reached this are dropped. */
  maxRetries: number;
}

/** What a replay of both queues did. */
export interface ReplayAllReport extends ReplayReport {
  shared: SharedReplayReport;
}

/**
 * Replays our queue, then (unless limited to one session) what other plugins left in the shared queue, within
 * one entry limit and one budget.
 */
export async function replayAll(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayAllOptions,
): Promise<ReplayAllReport> {
  const ours = await replayQueue(pendingDir, client, options);
  const shared: SharedReplayReport = { replayed: 0, dropped: 0, deferred: 0 };
  const stopped = ours.cause !== undefined && stopsEverything(ours.cause);
  if (options.sessionId === undefined && !stopped) {
    Object.assign(
      shared,
      await replayShared(pendingDir, client, {
        ...options,
        limit: Math.max(0, options.limit - ours.replayed),
      }),
    );
  }
  return { ...ours, cause: ours.cause ?? shared.cause, shared };
}
