/**
 * The offline queues on disk: ours (`<pending>/kimicode/<session>/<seq>-m<count>.json | <seq>-c.json`, one
 * file per request, created whole), and the rejected place (`kimicode-rejected/`, same form, bounded).
 */

import * as z from "zod/mini";
import {
  createExclusive,
  ensurePrivateDir,
  isAlreadyExists,
  listDir,
  parseJsonOrUndefined,
  readTextIfExists,
  removeAbandonedTemps,
} from "../lib/fs.ts";
import { sha256Hex, stableStringify } from "../lib/hash.ts";
import { isRecord } from "../lib/parsed.ts";
import { dirName, joinPath, safeId } from "../lib/paths.ts";
import { commandName } from "../lib/self.ts";

/** Our queue's and the rejected place's subdirectories of the pending directory. */
export const QUEUE_SUBDIR = "kimicode";
export const REJECTED_SUBDIR = "kimicode-rejected";

const MessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  turn_id: z.optional(z.string()),
});

/** Where a write is meant to go: the server's base URL and the identity (never the key). */
const DestinationSchema = z.object({ url: z.string(), account: z.string(), user: z.string() });
export type Destination = z.infer<typeof DestinationSchema>;

/** The destination of a client's writes: its base URL without userinfo or trailing slash, account, user. */
export function destinationOf(o: { baseUrl: string; account?: string; user?: string }): Destination {
  const url = URL.parse(o.baseUrl);
  if (url) url.username = url.password = "";
  return { url: (url?.href ?? o.baseUrl).replace(/\/+$/, ""), account: o.account ?? "", user: o.user ?? "" };
}

/** Whether an entry queued for `to` (none: written before destinations were kept) may go to `here`. */
export const goesTo = (to: Destination | undefined, here: Destination): boolean =>
  !to || (to.url === here.url && to.account === here.account && to.user === here.user);

/** Queued or refused writes in words, as status and doctor say them: "2 message(s), 1 commit(s) of 1 session(s)". */
export const countWords = (c: { messages: number; commits: number; sessions?: number }): string =>
  `${c.messages} message(s), ${c.commits} commit(s)` +
  (c.sessions === undefined ? "" : ` of ${c.sessions} session(s)`);

/** What queue files hold. */
export const countOf = (files: readonly { tag: string }[]) => ({
  messages: files.reduce((n, f) => n + (f.tag === "c" ? 0 : Number(f.tag.slice(1))), 0),
  commits: files.filter((f) => f.tag === "c").length,
});

/** Writes held for other destinations (per session), in words: what waits where and how to deliver it there. */
export function elsewhereWords(held: readonly (Destination & ReturnType<typeof countOf>)[]) {
  const byPlace = new Map<string, ReturnType<typeof countOf>>();
  for (const d of held) {
    const where = Object.entries({ URL: d.url, ACCOUNT: d.account, USER: d.user }).filter(([, v]) => v)
      .map(([k, v]) => `OPENVIKING_${k}=${v}`).join(" ");
    const n = byPlace.get(where) ?? { messages: 0, commits: 0 };
    byPlace.set(where, { messages: n.messages + d.messages, commits: n.commits + d.commits });
  }
  if (!byPlace.size) return undefined;
  const places = [...byPlace];
  return {
    summary: places.map(([where, n]) => `${countWords(n)} are for another server or identity (${where})`)
      .join("; "),
    fix:
      `they are sent only there: run ${
        places.map(([where]) => `\`${where} ${commandName()} replay\``).join(", ")
      }` +
      " (with that server's key in OPENVIKING_API_KEY if it needs one); they stay queued until then",
  };
}

/** The sessions' writes queued for another destination than `here`, in words; undefined when there are none. */
export function elsewhereOf(sessions: QueueSummary["sessions"], here: Destination) {
  return elsewhereWords(
    sessions.flatMap((s) => goesTo(s.to, here) ? [] : [{ ...s, ...s.to! }]),
  );
}

/** `unsure`: it may have reached the server; from then (`true`: at once) the session is asked before a resend; `to`: where it goes. */
const ENTRY_BASE = {
  version: z.literal(1),
  sessionId: z.string().check(z.minLength(1)),
  seq: z.int().check(z.positive()),
  createdAt: z.number(),
  unsure: z.optional(z.union([z.literal(true), z.number()])),
  to: z.optional(DestinationSchema),
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

/** Why a kept write was refused (status 0: never reached the server). */
const RejectionSchema = z.object({ at: z.number(), status: z.number(), message: z.string() });
export type Rejection = z.infer<typeof RejectionSchema>;

/** `<seq>-<tag>.json`, or `<seq>-<tag>.<pid>.claim` when claimed by replay `pid`. */
const QUEUE_FILE = /^(\d{10})-(m\d+|c)(?:\.json|\.(\d+)\.claim)$/;

/** The dedupe key of a message: sha256 of session id and the payload with sorted keys. */
export async function messageKey(sessionId: string, payload: MessagePayload): Promise<string> {
  return await sha256Hex(`addMessage\n${sessionId}\n${stableStringify(payload)}`);
}

/** The queue directory of one session (in `subdir`). */
export async function sessionQueueDir(
  pendingDir: string,
  sessionId: string,
  subdir = QUEUE_SUBDIR,
): Promise<string> {
  return joinPath(pendingDir, subdir, await safeId(sessionId));
}

/** A file of a session's queue: tag `m<count>` or `c`; `claimedBy` the replay's pid. */
export interface QueueFile {
  name: string;
  seq: number;
  tag: string;
  claimedBy?: number;
}

const tagOf = (entry: QueueEntry): string => entry.kind === "commit" ? "c" : `m${entry.messages.length}`;

/** The file name of entry `seq` holding `holds` (an entry or its tag), claimed by `pid` if given. */
export function entryName(seq: number, holds: QueueEntry | string, pid?: number): string {
  const tag = typeof holds === "string" ? holds : tagOf(holds);
  return `${String(seq).padStart(10, "0")}-${tag}${pid === undefined ? ".json" : `.${pid}.claim`}`;
}

/** The queue directories of one session, or of every session. */
export async function sessionDirs(
  pendingDir: string,
  sessionId?: string,
  subdir = QUEUE_SUBDIR,
): Promise<string[]> {
  if (sessionId !== undefined) return [await sessionQueueDir(pendingDir, sessionId, subdir)];
  const root = joinPath(pendingDir, subdir);
  return (await listDir(root)).filter((e) => e.isDirectory).map((e) => joinPath(root, e.name));
}

/** The entries and claims of a queue directory, in sequence order. */
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

/** The most a queue file is read: above any entry we write (a message may be 10 M characters). */
const ENTRY_MAX_BYTES = 128 * 1024 * 1024;

/** A queue file's JSON; undefined when missing, not a regular file, too large, unreadable or not JSON. */
async function readQueueJson(path: string): Promise<unknown> {
  return parseJsonOrUndefined(await readTextIfExists(path, ENTRY_MAX_BYTES).catch(() => undefined));
}

/** An entry file, parsed; undefined when gone or not an entry. */
export async function readEntry(path: string): Promise<QueueEntry | undefined> {
  return QueueEntrySchema.safeParse(await readQueueJson(path)).data;
}

/** The suffix replay gives a queue file it cannot read (kept for the user). */
export const UNREADABLE = ".unreadable";

/** The files set aside as unreadable. */
export async function setAsideFiles(pendingDir: string): Promise<string[]> {
  const out: string[] = [];
  for (const subdir of [QUEUE_SUBDIR, REJECTED_SUBDIR]) {
    for (const dir of await sessionDirs(pendingDir, undefined, subdir)) {
      for (const e of await listDir(dir)) if (e.name.endsWith(UNREADABLE)) out.push(joinPath(dir, e.name));
    }
  }
  return out.sort();
}

/** The set-aside files in words (status, doctor, replay). */
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

/** Largest batch: the server's count limit, and a body size proxies accept. */
export const BATCH_LIMIT = 100;
export const BATCH_MAX_BYTES = 512 * 1024;

function payloadBytes(p: MessagePayload): number {
  return new TextEncoder().encode(JSON.stringify(p)).length + 1;
}

/** The end of the next batch from `from` (at least one message). */
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

/** The rejected place's bounds; past them the oldest writes go. */
export const REJECTED_MAX_ENTRIES = 1000;
export const REJECTED_MAX_BYTES = 16 * 1024 * 1024;

/** A new entry of `sessionId` numbered `seq`, for `to`, holding `body` (a batch, a commit, a rejection). */
function newEntry(body: object, sessionId: string, seq: number, createdAt: number, to?: Destination) {
  return { version: 1, sessionId, seq, createdAt, ...(to && { to }), ...body } as QueueEntry;
}

/** Writes one entry per maker after the last of `files`; returns those stored (stops at the first failure). */
async function appendEntries(dir: string, makers: ((seq: number) => QueueEntry)[], files: QueueFile[]) {
  const stored: QueueFile[] = [];
  if (makers.length) await ensurePrivateDir(dir);
  let seq = files.at(-1)?.seq ?? 0;
  for (const make of makers) {
    for (let attempts = 1;; attempts++) {
      const entry = make(++seq);
      const name = entryName(seq, entry);
      try {
        await createExclusive(joinPath(dir, name), `${JSON.stringify(entry)}\n`);
        stored.push({ name, seq, tag: tagOf(entry) });
        break;
      } catch (error) {
        if (!isAlreadyExists(error) || attempts > 100) return stored;
      }
    }
  }
  return stored;
}

/** Keys of every message (and `commit:<key>` of every commit) in a session's queue files. */
async function queuedKeys(dir: string, files: QueueFile[]): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const f of files) {
    const entry = await readEntry(joinPath(dir, f.name));
    for (const m of entry?.kind === "messages" ? entry.messages : []) keys.add(m.key);
    if (entry?.kind === "commit") keys.add(`commit:${entry.key}`);
  }
  return keys;
}

/** One session's queue, opened for appending (by the session lock's holder): keys and last seq read once. */
export class SessionQueue {
  private constructor(
    readonly dir: string,
    readonly sessionId: string,
    private readonly to: Destination | undefined,
    private files: QueueFile[],
    private readonly keys: Set<string>,
  ) {}

  /** Opens the queue of `sessionId` under `pendingDir`; its new entries are for `to`. */
  static async open(pendingDir: string, sessionId: string, to: Destination | undefined) {
    const dir = await sessionQueueDir(pendingDir, sessionId);
    await removeAbandonedTemps(dir);
    const files = await queueFiles(dir);
    return new SessionQueue(dir, sessionId, to, files, await queuedKeys(dir, files));
  }

  /** Whether writes of the session wait in the queue. */
  get waiting(): boolean {
    return this.files.length > 0;
  }

  /** Appends an entry per body (`keys`: what each adds); returns how many were stored. */
  private async append(now: number, bodies: object[], keys: string[][]): Promise<number> {
    const makers = bodies.map((body) => (seq: number) => newEntry(body, this.sessionId, seq, now, this.to));
    const stored = await appendEntries(this.dir, makers, this.files).catch(() => []);
    this.files.push(...stored);
    for (const k of keys.slice(0, stored.length).flat()) this.keys.add(k);
    return stored.length;
  }

  /** Queues new messages in batches (the first `unsure`, if given); returns the durably queued prefix. */
  async messages(payloads: readonly MessagePayload[], options: { now?: number; unsure?: number } = {}) {
    try {
      const keyed = await Promise.all(payloads.map(async (payload, index) => ({
        key: await messageKey(this.sessionId, payload),
        payload,
        index,
      })));
      const fresh = keyed.filter((m) => !this.keys.has(m.key));
      const batches: (typeof fresh)[] = [];
      for (let i = 0; i < fresh.length; i += batches.at(-1)!.length) {
        batches.push(fresh.slice(i, nextBatchEnd(fresh.map((m) => m.payload), i)));
      }
      const unsure = options.unsure === undefined ? {} : { unsure: options.unsure };
      const bodies = batches.map((b, i) => ({
        kind: "messages",
        ...(i === 0 && unsure),
        messages: b.map(({ key, payload }) => ({ key, payload })),
      }));
      const keys = batches.map((b) => b.map((m) => m.key));
      const stored = await this.append(options.now ?? Date.now(), bodies, keys);
      return stored === batches.length ? payloads.length : batches[stored][0].index;
    } catch {
      return 0;
    }
  }

  /** Queues the commit named `key` behind what is queued; false when it could not be stored. */
  async commit(key: string, now = Date.now()): Promise<boolean> {
    return this.keys.has(`commit:${key}`) ||
      await this.append(now, [{ kind: "commit", key }], [[`commit:${key}`]]) === 1;
  }
}

/** Dedupe keys of a session's queued and rejected messages. */
export async function queuedMessageKeys(pendingDir: string, sessionId: string): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const subdir of [QUEUE_SUBDIR, REJECTED_SUBDIR]) {
    const dir = await sessionQueueDir(pendingDir, sessionId, subdir);
    for (const k of await queuedKeys(dir, await queueFiles(dir))) keys.add(k);
  }
  return keys;
}

/** A write to keep in the rejected place, and where it was meant to go. */
export type KeptWrite = ({ messages: readonly MessagePayload[] } | { commit: string }) & { to?: Destination };

/** Keeps a refused (or expired) write in the rejected place, then trims it; throws when it cannot. */
export async function keepRejected(
  pendingDir: string,
  sessionId: string,
  write: KeptWrite,
  why: { status: number; message: string },
  createdAt = Date.now(),
): Promise<void> {
  const dir = await sessionQueueDir(pendingDir, sessionId, REJECTED_SUBDIR);
  const body = "commit" in write ? { kind: "commit", key: write.commit } : {
    kind: "messages",
    messages: await Promise.all(write.messages.map(async (payload) => ({
      key: await messageKey(sessionId, payload),
      payload,
    }))),
  };
  const rejection = { at: Date.now(), status: why.status, message: why.message };
  const make = (seq: number) => newEntry({ ...body, rejection }, sessionId, seq, createdAt, write.to);
  const stored = await appendEntries(dir, [make], await queueFiles(dir)).catch(() => []);
  if (stored.length !== 1) throw new Error(`${dir} could not keep a write OpenViking refused`);
  await trimRejected(pendingDir, joinPath(dir, stored[0].name));
}

/** A file of the rejected place. */
interface KeptFile {
  path: string;
  bytes: number;
  at: number;
}

/** Every unclaimed write the rejected place keeps, oldest first. */
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

/** The rejected place per pending directory, listed once, then updated by this process's own writes. */
const knownPlaces = new Map<string, { files: KeptFile[]; bytes: number }>();

/** Adds `added` to the rejected place and drops its oldest writes past the bounds (never `added`). */
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
  while (
    place.files.length > 1 && (place.files.length > REJECTED_MAX_ENTRIES || place.bytes > REJECTED_MAX_BYTES)
  ) {
    const oldest = place.files.shift()!;
    await Deno.remove(oldest.path).catch(() => {});
    place.bytes -= oldest.bytes;
  }
}

/** Whether a session has writes queued or being replayed (new writes queue behind them). */
export async function hasUnsent(pendingDir: string, sessionId: string): Promise<boolean> {
  return (await queueFiles(await sessionQueueDir(pendingDir, sessionId))).length > 0;
}

/** What waits in our queue (or the rejected place, with its newest refusal); `to`: where a session's oldest entry goes. */
export interface QueueSummary {
  sessions: {
    sessionId: string;
    entries: number;
    messages: number;
    commits: number;
    oldest: number;
    to?: Destination;
  }[];
  entries: number;
  last?: Rejection;
}

/** Every session's queued entries in `subdir` (reads each session's first entry, and in the rejected place its newest). */
export async function queueSummary(pendingDir: string, subdir = QUEUE_SUBDIR): Promise<QueueSummary> {
  const out: QueueSummary = { sessions: [], entries: 0 };
  for (const dir of await sessionDirs(pendingDir, undefined, subdir)) {
    const files = await queueFiles(dir);
    if (!files.length) continue;
    const first = await readEntry(joinPath(dir, files[0].name));
    out.sessions.push({
      sessionId: first?.sessionId ?? dir.slice(dir.lastIndexOf("/") + 1),
      entries: files.length,
      ...countOf(files),
      oldest: first?.createdAt ?? Date.now(),
      ...(first?.to && { to: first.to }),
    });
    out.entries += files.length;
    if (subdir !== REJECTED_SUBDIR) continue;
    const raw = await readQueueJson(joinPath(dir, files.at(-1)!.name));
    const why = RejectionSchema.safeParse(isRecord(raw) ? raw.rejection : undefined).data;
    if (why && why.at >= (out.last?.at ?? 0)) out.last = why;
  }
  out.sessions.sort((a, b) => a.oldest - b.oldest);
  return out;
}

/** The rejected place as doctor, status and uninstall tell it. */
export const rejectedSummary = (pendingDir: string): Promise<QueueSummary> =>
  queueSummary(pendingDir, REJECTED_SUBDIR);

/** The API path of a session. */
export const sessionPath = (sid: string): string => `/api/v1/sessions/${encodeURIComponent(sid)}`;
