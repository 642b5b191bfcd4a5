/** Session writes, the queue behind them (`<pending>/kimicode/<session>/<seq>-<tag>.json`), refusals, replay. */

import * as z from "zod/mini";
import * as fs from "../lib/fs.ts";
import { sha256Hex, stableStringify } from "../lib/hash.ts";
import { withLock } from "../lib/lock.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { dirName, joinPath, safeId } from "../lib/paths.ts";
import { base64Text } from "../lib/redact.ts";
import { commandName } from "../lib/self.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure } from "./client.ts";

/** Our queue's and the rejected place's subdirectories of the pending directory. */
export const QUEUE_SUBDIR = "kimicode";
export const REJECTED_SUBDIR = "kimicode-rejected";
const MessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  turn_id: z.optional(z.string()),
});
export type MessagePayload = z.infer<typeof MessageSchema>;
/** Where a write goes: URL, identity, `key` (a digest of its API key, "": none), `owner` (the user that key names). */
export const DestinationSchema = z.object({
  url: z.string(),
  account: z.string(),
  user: z.string(),
  key: z.optional(z.string()),
  owner: z.optional(z.string()),
});
export type Destination = z.infer<typeof DestinationSchema>;
/** The destination of a client's writes: its base URL without userinfo or trailing slash, account, user. */
export function destinationOf(o: { baseUrl: string; account?: string; user?: string }): Destination {
  const url = URL.parse(o.baseUrl);
  if (url) url.username = url.password = "";
  return { url: (url?.href ?? o.baseUrl).replace(/\/+$/, ""), account: o.account ?? "", user: o.user ?? "" };
}

/** The destination of `o`'s writes, its key's digest and owner (a user key's first two base64url segments). */
export async function destinationFor(
  o: { baseUrl: string; account?: string; user?: string; apiKey?: string },
): Promise<Destination> {
  const parts = o.apiKey?.split(".") ?? [];
  const [account, user] = parts.length === 3 ? parts.map((p) => base64Text(p)) : [];
  const key = o.apiKey ? (await sha256Hex(`openviking-kimi key\n${o.apiKey}`)).slice(0, 16) : "";
  return { ...destinationOf(o), key, ...account && user ? { owner: `${account}/${user}` } : {} };
}

/** Whether an entry for `to` may go `here`: same server and identity; its key, its owner's, or any if none. */
export const goesTo = (to: Destination | undefined, here: Destination): boolean =>
  !to ||
  (to.url === here.url && to.account === here.account && to.user === here.user &&
    (!to.key || to.key === here.key || (to.owner !== undefined && to.owner === here.owner)));
/** Queued or refused writes in words, as status and doctor say them: "2 message(s), 1 commit(s) of 1 session(s)". */
export const countWords = (c: { messages: number; commits: number; sessions?: number }): string =>
  `${c.messages} message(s), ${c.commits} commit(s)` +
  (c.sessions === undefined ? "" : ` of ${c.sessions} session(s)`);
const countOf = (files: readonly { tag: string }[]) => ({
  messages: files.reduce((n, f) => n + (f.tag === "c" ? 0 : Number(f.tag.slice(1))), 0),
  commits: files.filter((f) => f.tag === "c").length,
});
type Counts = ReturnType<typeof countOf>;
const added = (a: Counts = countOf([]), b: Counts): Counts => ({
  messages: a.messages + b.messages,
  commits: a.commits + b.commits,
});
/** A destination as the environment that names it: `OPENVIKING_URL=… OPENVIKING_API_KEY=<acme/coder's key>`. */
export function placeWords(d: Destination): string {
  const key = d.key && `<${d.owner ? `${d.owner}'s key` : "the key they were queued under"}>`;
  return Object.entries({ URL: d.url, ACCOUNT: d.account, USER: d.user, API_KEY: key })
    .filter(([, v]) => v).map(([k, v]) => `OPENVIKING_${k}=${v}`).join(" ");
}
/** Writes held for other destinations, in words: what waits where, and the `command` that delivers it there. */
export function elsewhereWords(held: readonly (Destination & Counts)[], command = commandName()) {
  const byPlace = new Map<string, Counts>();
  for (const d of held) byPlace.set(placeWords(d), added(byPlace.get(placeWords(d)), d));
  if (!byPlace.size) return undefined;
  const commands = [...byPlace.keys()].map((where) => `\`${where} ${command} replay\``).join(", ");
  const summary = [...byPlace].map(([w, n]) => `${countWords(n)} are for another server or identity (${w})`);
  return {
    summary: summary.join("; "),
    fix: `run ${commands} (with that server's key in OPENVIKING_API_KEY if it needs one); they are sent ` +
      "only there and stay queued until then",
  };
}

/** The sessions' writes queued for another destination than `here`, in words, and `here`'s behind them. */
export function elsewhereOf(sessions: QueueSummary["sessions"], here: Destination, command?: string) {
  const away = (r: QueueRun) => !goesTo(r.to, here);
  const runs = sessions.map((s) => s.runs ?? [s]);
  const words = elsewhereWords(runs.flat().flatMap((r) => away(r) ? [{ ...r, ...r.to! }] : []), command);
  const behind = runs.flatMap((rs) => rs.slice(rs.findIndex(away) + 1 || rs.length).filter((r) => !away(r)));
  if (!words || !behind.length) return words;
  const n = behind.reduce(added, countOf([]));
  return { ...words, summary: `${words.summary}; ${countWords(n)} for this server wait behind them` };
}
/** `unsure`: it may have reached the server; the session is asked before a resend from then (true: at once). */
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
/** Why a kept write was refused (status 0: never reached the server), and when. */
const RejectionSchema = z.object({ at: z.number(), status: z.number(), message: z.string() });
type Refusal = { status: number; message: string };
/** A write to send or keep: a queue entry without its place in the queue, made at `createdAt` (none: now). */
type Unqueued<E> = E extends QueueEntry ? Omit<E, "version" | "seq" | "createdAt"> & { createdAt?: number }
  : never;
type Write = Unqueued<QueueEntry>;
/** The dedupe key of a message: sha256 of session id and the payload with sorted keys. */
export async function messageKey(sessionId: string, payload: MessagePayload): Promise<string> {
  return await sha256Hex(`addMessage\n${sessionId}\n${stableStringify(payload)}`);
}

/** The queue directory of one session (in `subdir`). */
export async function sessionQueueDir(pendingDir: string, sessionId: string, subdir = QUEUE_SUBDIR) {
  return joinPath(pendingDir, subdir, await safeId(sessionId));
}

/** A file of a session's queue: tag `m<count>` or `c`; `claimedBy` the replay's pid. */
type QueueFile = { name: string; seq: number; tag: string; claimedBy?: number };
/** The file name of entry `seq` holding `holds` (an entry or its tag): `<seq>-<tag>.json`, or `.<pid>.claim`. */
function entryName(seq: number, holds: QueueEntry | string, pid?: number): string {
  const tag = typeof holds === "string" ? holds : holds.kind === "commit" ? "c" : `m${holds.messages.length}`;
  return `${String(seq).padStart(10, "0")}-${tag}${pid === undefined ? ".json" : `.${pid}.claim`}`;
}

async function queueFiles(dir: string): Promise<QueueFile[]> {
  return (await fs.listDir(dir)).flatMap((e) => {
    const m = e.isDirectory ? null : /^(\d{10})-(m\d+|c)(?:\.json|\.(\d+)\.claim)$/.exec(e.name);
    return m
      ? [{ name: e.name, seq: Number(m[1]), tag: m[2], claimedBy: m[3] ? Number(m[3]) : undefined }]
      : [];
  }).sort((a, b) => a.seq - b.seq);
}

/** A queue file's JSON, up to 128 MiB (a message may be 10 M characters); undefined when it cannot be read. */
const readQueueJson = async (path: string): Promise<unknown> =>
  fs.parseJsonOrUndefined(await fs.readTextIfExists(path, 128 << 20).catch(() => undefined));
const readEntry = async (path: string) => QueueEntrySchema.safeParse(await readQueueJson(path)).data;
async function sessionDirs(pendingDir: string, subdir: string): Promise<string[]> {
  const root = joinPath(pendingDir, subdir);
  return (await fs.listDir(root)).filter((e) => e.isDirectory).map((e) => joinPath(root, e.name));
}

/** Each session directory in `subdir` (only `sessionId`'s if given) with its files and first entry. */
async function sessionHeads(pendingDir: string, subdir: string, sessionId?: string) {
  const one = sessionId === undefined ? undefined : await sessionQueueDir(pendingDir, sessionId, subdir);
  const dirs = one ? await Deno.stat(one).then((i) => i.isDirectory ? [one] : [], () => []) : undefined;
  const out: { dir: string; files: QueueFile[]; first?: QueueEntry }[] = [];
  for (const dir of dirs ?? await sessionDirs(pendingDir, subdir)) { // one at a time: an entry may be 128 MiB
    const files = await queueFiles(dir);
    out.push({ dir, files, first: files.length ? await readEntry(joinPath(dir, files[0].name)) : undefined });
  }
  return out;
}

/** The suffix replay gives a queue file it cannot read (kept for the user). */
const UNREADABLE = ".unreadable";
/** The files set aside as unreadable. */
export async function setAsideFiles(pendingDir: string): Promise<string[]> {
  const dirs = (await Promise.all([QUEUE_SUBDIR, REJECTED_SUBDIR].map((s) => sessionDirs(pendingDir, s))))
    .flat();
  const names = await Promise.all(
    dirs.map(async (dir) => (await fs.listDir(dir)).map((e) => joinPath(dir, e.name))),
  );
  return names.flat().filter((path) => path.endsWith(UNREADABLE)).sort();
}

/** The set-aside files in words (status, doctor, replay). */
export function setAsideWords(files: readonly string[]): { summary: string; fix: string } | undefined {
  if (!files.length) return undefined;
  const dirs = [...new Set(files.map(dirName))];
  const where = dirs.length > 1 ? `${dirs[0]} and ${dirs.length - 1} other folder(s)` : dirs[0];
  return {
    summary: `${files.length} queued write(s) could not be read and are never sent: set aside in ${where}`,
    fix: `they are yours: look at them (*${UNREADABLE}); put one you repaired back under its name without ` +
      `${UNREADABLE}, or delete it`,
  };
}

/** Largest batch: the server's count limit, and a body size proxies accept. */
export const BATCH_LIMIT = 100;
export const BATCH_MAX_BYTES = 512 * 1024;
/** The end of the next batch from `from` (at least one message). */
export function nextBatchEnd(payloads: readonly MessagePayload[], from: number): number {
  let [bytes, end] = [0, from];
  while (end < payloads.length && end - from < BATCH_LIMIT) {
    bytes += new TextEncoder().encode(JSON.stringify(payloads[end])).length + 1;
    if (end > from && bytes > BATCH_MAX_BYTES) break;
    end++;
  }
  return end;
}

/** The rejected place's bounds; past them the oldest writes go. */
export const REJECTED_MAX_ENTRIES = 1000;
export const REJECTED_MAX_BYTES = 16 * 1024 * 1024;
/** Writes an entry per write (`extra` added) after seq `last` in `dir`; returns those stored (to the first failure). */
async function appendEntries(dir: string, last: number, writes: Write[], extra = {}) {
  const stored: QueueEntry[] = [];
  if (writes.length) await fs.ensurePrivateDir(dir);
  let [createdAt, seq] = [Date.now(), last];
  for (const w of writes) {
    const body = w.kind === "commit" ? { kind: w.kind, key: w.key } : { kind: w.kind, messages: w.messages };
    const head = { version: 1, sessionId: w.sessionId, createdAt: w.createdAt ?? createdAt, to: w.to };
    for (let attempts = 1;; attempts++) { // a name taken: the next seq
      const e = { ...head, seq: ++seq, unsure: w.unsure, ...body, ...extra } as QueueEntry;
      try {
        await fs.createExclusive(joinPath(dir, entryName(seq, e)), `${JSON.stringify(e)}\n`);
        stored.push(e);
        break;
      } catch (error) {
        if (!fs.isAlreadyExists(error) || attempts > 100) return stored;
      }
    }
  }
  return stored;
}

/** The dedupe keys an entry holds: its messages' keys, or `commit:<key>`. */
const keysOf = (e: Write) => e.kind === "commit" ? [`commit:${e.key}`] : e.messages.map((m) => m.key);
async function queuedKeys(dir: string, files: QueueFile[]): Promise<string[]> {
  const keys: string[] = [];
  for (const f of files) {
    const entry = await readEntry(joinPath(dir, f.name));
    if (entry) keys.push(...keysOf(entry));
  }
  return keys;
}

/** One session's queue, opened for appending (by the session lock's holder): keys and last seq read once. */
export class SessionQueue {
  private constructor(
    private readonly dir: string,
    private readonly sessionId: string,
    private readonly to: Destination | undefined,
    private seq: number,
    private readonly keys: Set<string>,
  ) {}
  /** Opens the queue of `sessionId` under `pendingDir`; its new entries are for `to`. */
  static async open(pendingDir: string, sessionId: string, to: Destination | undefined) {
    const dir = await sessionQueueDir(pendingDir, sessionId);
    await fs.removeAbandonedTemps(dir);
    const files = await queueFiles(dir);
    const keys = new Set(await queuedKeys(dir, files));
    return new SessionQueue(dir, sessionId, to, files.at(-1)?.seq ?? 0, keys);
  }
  /** Whether writes of the session wait in the queue. */
  get waiting(): boolean {
    return this.seq > 0;
  }
  /** Appends an entry per write (made at `createdAt`); returns how many were stored. */
  private async append(createdAt: number, writes: Write[]): Promise<number> {
    const head = { sessionId: this.sessionId, createdAt, to: this.to };
    const all = writes.map((w) => ({ ...w, ...head }));
    const stored = await appendEntries(this.dir, this.seq, all).catch(() => []);
    for (const e of stored) {
      this.seq = e.seq;
      for (const k of keysOf(e)) this.keys.add(k);
    }
    return stored.length;
  }
  /** Queues new messages in batches (the first `unsure`, if given); returns the durably queued prefix. */
  async messages(payloads: readonly MessagePayload[], options: { now?: number; unsure?: number } = {}) {
    try {
      const keys = await Promise.all(payloads.map((p) => messageKey(this.sessionId, p)));
      const fresh = payloads.map((payload, index) => ({ key: keys[index], payload, index }))
        .filter((m) => !this.keys.has(m.key));
      const [batches, freshPayloads] = [[] as (typeof fresh)[], fresh.map((m) => m.payload)];
      for (let i = 0; i < fresh.length; i = nextBatchEnd(freshPayloads, i)) {
        batches.push(fresh.slice(i, nextBatchEnd(freshPayloads, i)));
      }
      const writes = batches.map((b, i): Write => ({
        sessionId: this.sessionId,
        kind: "messages",
        messages: b.map(({ key, payload }) => ({ key, payload })),
        unsure: i === 0 ? options.unsure : undefined,
      }));
      const stored = await this.append(options.now ?? Date.now(), writes);
      return stored === batches.length ? payloads.length : batches[stored][0].index;
    } catch {
      return 0;
    }
  }
  /** Queues the commit named `key` behind what is queued; false when it could not be stored. */
  async commit(key: string, now = Date.now()): Promise<boolean> {
    return this.keys.has(`commit:${key}`) ||
      await this.append(now, [{ sessionId: this.sessionId, kind: "commit", key }]) === 1;
  }
}

/** Dedupe keys of a session's queued and rejected messages. */
export async function queuedMessageKeys(pendingDir: string, sessionId: string): Promise<Set<string>> {
  const keys = await Promise.all([QUEUE_SUBDIR, REJECTED_SUBDIR].map(async (subdir) => {
    const dir = await sessionQueueDir(pendingDir, sessionId, subdir);
    return await queuedKeys(dir, await queueFiles(dir));
  }));
  return new Set(keys.flat());
}

/** Keeps a refused (or expired) write in the rejected place, then trims it; throws when it cannot. */
export async function keepRejected(pendingDir: string, w: Write, why: Refusal): Promise<void> {
  const dir = await sessionQueueDir(pendingDir, w.sessionId, REJECTED_SUBDIR);
  const rejection = { at: Date.now(), status: why.status, message: why.message };
  const last = (await queueFiles(dir)).at(-1)?.seq ?? 0;
  const [kept] = await appendEntries(dir, last, [{ ...w, unsure: undefined }], { rejection }).catch(() => []);
  if (!kept) throw new Error(`${dir} could not keep a write OpenViking refused`);
  await trimRejected(pendingDir, joinPath(dir, entryName(kept.seq, kept)));
}

/** The rejected place's files per pending directory, listed once, then updated by this process's own writes. */
const knownPlaces = new Map<string, { path: string; bytes: number; at: number }[]>();

/** Adds `added` to the rejected place and drops its oldest unclaimed writes past the bounds (never `added`). */
async function trimRejected(pendingDir: string, added: string): Promise<void> {
  const sized = async (path: string, at?: number) => {
    const info = await Deno.stat(path).catch(() => undefined);
    return info ? [{ path, bytes: info.size, at: at ?? info.mtime?.getTime() ?? 0 }] : [];
  };
  let place = knownPlaces.get(pendingDir);
  if (place) place.push(...await sized(added, Date.now()));
  else {
    place = [];
    for (const dir of await sessionDirs(pendingDir, REJECTED_SUBDIR)) {
      for (const f of await queueFiles(dir)) {
        if (f.claimedBy === undefined) place.push(...await sized(joinPath(dir, f.name)));
      }
    }
    knownPlaces.set(pendingDir, place.sort((a, b) => a.at - b.at || (a.path < b.path ? -1 : 1)));
  }
  let bytes = place.reduce((n, f) => n + f.bytes, 0);
  while (place.length > 1 && (place.length > REJECTED_MAX_ENTRIES || bytes > REJECTED_MAX_BYTES)) {
    const oldest = place.shift()!;
    await Deno.remove(oldest.path).catch(() => {});
    bytes -= oldest.bytes;
  }
}

/** Whether a session has writes queued or being replayed (new writes queue behind them). */
export async function hasUnsent(pendingDir: string, sessionId: string): Promise<boolean> {
  return (await queueFiles(await sessionQueueDir(pendingDir, sessionId))).length > 0;
}

/** Entries of a session that go to one destination (`to`: none kept), one after another. */
export type QueueRun = { to?: Destination } & Counts;

/** What waits in our queue (or the rejected place, with its newest refusal); `to`: where a session's oldest entry goes; `runs`: its entries by destination, in order (the queue only). */
export interface QueueSummary {
  sessions: (
    & { sessionId: string; oldest: number; to?: Destination; runs?: QueueRun[] }
    & Record<"entries" | "messages" | "commits", number>
  )[];
  entries: number;
  last?: z.infer<typeof RejectionSchema>;
}

/** Every session's queued entries in `subdir` (reads every entry of the queue; in the rejected place each session's first and newest). */
export async function queueSummary(pendingDir: string, subdir = QUEUE_SUBDIR): Promise<QueueSummary> {
  const out: QueueSummary = { sessions: [], entries: 0 };
  for (const { dir, files, first } of await sessionHeads(pendingDir, subdir)) {
    if (!files.length) continue;
    out.sessions.push({
      sessionId: first?.sessionId ?? dir.slice(dir.lastIndexOf("/") + 1),
      entries: files.length,
      ...countOf(files),
      oldest: first?.createdAt ?? Date.now(),
      ...(first?.to && { to: first.to }),
    });
    for (const f of subdir === QUEUE_SUBDIR ? files : []) { // one run per change of destination, in order
      const to = f === files[0] ? first?.to : (await readEntry(joinPath(dir, f.name)))?.to;
      const runs = out.sessions.at(-1)!.runs ??= [];
      const last = runs.at(-1);
      if (last && JSON.stringify(last.to) === JSON.stringify(to)) {
        Object.assign(last, added(last, countOf([f])));
      } else runs.push({ ...to && { to }, ...countOf([f]) });
    }
    out.entries += files.length;
    if (subdir !== REJECTED_SUBDIR) continue;
    const raw = await readQueueJson(joinPath(dir, files.at(-1)!.name));
    const why = RejectionSchema.safeParse(isRecord(raw) ? raw.rejection : undefined).data;
    if (why && why.at >= (out.last?.at ?? 0)) out.last = why;
  }
  out.sessions.sort((a, b) => a.oldest - b.oldest);
  return out;
}

const sessionPath = (sid: string): string => `/api/v1/sessions/${encodeURIComponent(sid)}`;
/** From when the session's answer counts about a write that failed this way but may be stored; undefined: it is not. */
export function unsureFrom(f: OvFailure, timeoutMs: number, now = Date.now()): number | undefined {
  const arrived = f.status
    ? f.status >= 500
    : !["CONNECT", "SILENT", "BUDGET_SPENT"].includes(f.error.code ?? "");
  if (!arrived) return undefined;
  return f.error.code === "TIMEOUT" || f.status === 504 ? now + timeoutMs : now;
}

/** What delivering a write did: `settled` prefix (sent or refused; a commit: 1), `sent`, `rejections`, `stop`. */
type Delivery = { settled: number; sent: number; rejections: (Refusal & { index: number })[] } & {
  pendingTokens?: number;
  taskId?: string;
  stop?: OvFailure;
};

/** Delivers `w` in order (batches, else one by one) to a failure other than a refusal (kept; throws if not). */
async function deliver(
  client: OpenVikingClient,
  pendingDir: string,
  w: Write,
  budget: Budget,
  hooks: {
    beforeRequest?: (from: number, to: number) => Promise<void>;
    onSettled?: (n: number) => Promise<void>;
  },
): Promise<Delivery> {
  const d: Delivery = { settled: 0, sent: 0, rejections: [] };
  const payloads = w.kind === "commit" ? [] : w.messages.map((m) => m.payload);
  let serialUntil = 0;
  while (d.settled < (w.kind === "commit" ? 1 : payloads.length)) {
    const from = d.settled;
    const serial = w.kind === "commit" || from < serialUntil;
    const end = serial ? from + 1 : nextBatchEnd(payloads, from);
    await hooks.beforeRequest?.(from, end);
    const [path, body] = w.kind === "commit"
      ? ["/commit", {}]
      : serial
      ? ["/messages", payloads[from]]
      : ["/messages/batch", { messages: payloads.slice(from, end) }];
    const options = { body, budget, peerId: null };
    const res = await client.request("POST", `${sessionPath(w.sessionId)}${path}`, AnyResult, options);
    const missing = !res.ok && (res.kind === "missing-route" ||
      (res.kind === "not-openviking" && (res.status === 404 || res.status === 405)));
    if (res.ok) {
      const { pending_tokens: n, task_id: id } = asRecord(res.result); // n: the session's uncommitted tokens
      const tokens = typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined;
      if (w.kind === "commit") d.taskId = typeof id === "string" && id ? id : undefined;
      else [d.sent, d.pendingTokens] = [d.sent + end - from, serial ? tokens ?? d.pendingTokens : tokens];
    } else if (!serial && (missing || res.kind === "rejected" || res.status === 413)) {
      serialUntil = missing ? Infinity : end; // one by one: from now on, or for this batch
      continue;
    } else if (res.kind === "rejected") {
      const why = { status: res.status, message: res.error.message };
      await keepRejected(pendingDir, w.kind === "commit" ? w : { ...w, messages: [w.messages[from]] }, why);
      d.rejections.push({ index: from, ...why });
    } else return { ...d, stop: res };
    d.settled = end;
    await hooks.onSettled?.(end);
  }
  return d;
}

/** What happened to messages; only the `acked` prefix may be acknowledged; `stoppedBy`: the queue or state could not be written. */
export interface SendReport extends Omit<Delivery, "settled" | "stop" | "taskId"> {
  acked: number;
  queued: number;
  cause?: OvFailure;
  stoppedBy?: { code: string; message: string };
}

/** Where a session write goes: within `budget`, queued in `pendingDir` (through `queue` if open; `queueOnly`: at once). */
type WriteOptions = { budget: Budget; pendingDir: string; queueOnly?: boolean; queue?: SessionQueue };
const queueOf = async (o: WriteOptions, sid: string, c: OpenVikingClient) =>
  o.queue ?? await SessionQueue.open(o.pendingDir, sid, await destinationFor(c.options));
/** Sends messages in order, queueing the rest past the settled prefix; a throwing hook stops the send. */
export async function sendMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: WriteOptions & {
    beforeRequest?: (from: number, to: number, askFrom?: number) => Promise<void>;
    onAcked?: (acked: number) => Promise<void>;
  },
): Promise<SendReport> {
  const report: SendReport = { acked: 0, sent: 0, queued: 0, rejections: [] };
  try {
    const keyed = async (payload: MessagePayload) => ({ key: await messageKey(sid, payload), payload });
    const [messages, to] = [await Promise.all(payloads.map(keyed)), await destinationFor(client.options)];
    const write: Write = { sessionId: sid, to, kind: "messages", messages };
    const { settled: from, stop: cause, taskId: _, ...d } = options.queueOnly
      ? { settled: 0, sent: 0, rejections: [] } as Delivery
      : await deliver(client, options.pendingDir, write, options.budget, {
        beforeRequest: options.beforeRequest,
        onSettled: async (settled) => {
          report.acked = settled;
          await options.onAcked?.(settled);
        },
      });
    Object.assign(report, { ...d, acked: from, cause });
    if ((options.queueOnly || cause) && from < payloads.length) {
      const unsure = cause && unsureFrom(cause, client.options.timeoutMs);
      await options.beforeRequest?.(from, payloads.length, unsure ?? Date.now());
      const stored = await (await queueOf(options, sid, client)).messages(payloads.slice(from), { unsure });
      report.queued += stored;
      report.acked += stored;
      if (stored < payloads.length - from) {
        const message = `the pending queue ${options.pendingDir} could not store every message`;
        report.stoppedBy = { code: "QUEUE", message };
      }
    }
  } catch (error) {
    report.stoppedBy = { code: "STATE", message: (error as Error).message };
  }
  return report;
}

/** Commits session `sid` (`key` names this commit); queued behind earlier writes with `queueOnly`. */
export async function commitSession(
  client: OpenVikingClient,
  sid: string,
  options: WriteOptions & { key: string },
): Promise<
  | { kind: "committed"; taskId?: string }
  | { kind: "queued"; cause?: OvFailure }
  | { kind: "rejected"; status: number; message: string }
  | { kind: "failed"; message: string }
> {
  const w: Write = {
    sessionId: sid,
    to: await destinationFor(client.options),
    kind: "commit",
    key: options.key,
  };
  const d = options.queueOnly
    ? undefined
    : await deliver(client, options.pendingDir, w, options.budget, {}).catch((e: Error) => e);
  if (d instanceof Error) return { kind: "failed", message: d.message };
  const refused = d?.rejections[0];
  if (refused) return { kind: "rejected", status: refused.status, message: refused.message };
  if (d && !d.stop) return { kind: "committed", taskId: d.taskId };
  return await (await queueOf(options, sid, client)).commit(options.key)
    ? { kind: "queued", cause: d?.stop }
    : { kind: "failed", message: `the pending queue ${options.pendingDir} could not store the commit` };
}

type HeldMessage = { role: string; turnId?: string; text: string };
/** Messages in a reply (`…/context`, an archive): text in `parts` (older: `content`). */
const MessagesReply = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });
const heldIn = (result: z.output<typeof MessagesReply>): HeldMessage[] =>
  result.messages.filter(isRecord).map((m) => ({
    role: String(m.role ?? ""),
    turnId: typeof m.turn_id === "string" ? m.turn_id : undefined,
    text: Array.isArray(m.parts)
      ? m.parts.filter(isRecord).map((p) => (typeof p.text === "string" ? p.text : "")).join("")
      : typeof m.content === "string"
      ? m.content
      : "",
  }));
/** Whether `held` has this message. Pure. */
export const isHeld = (held: readonly HeldMessage[], payload: MessagePayload): boolean =>
  held.some((m) =>
    m.role === payload.role && m.text === payload.content &&
    (m.turnId === undefined || m.turnId === payload.turn_id)
  );
/** Whether a GET's failure is OpenViking's own 404 for no such thing (`absent`: the kinds that say it). */
const isAbsent = (res: OvFailure, absent: readonly OvFailure["kind"][] = ["rejected"]) =>
  res.status === 404 && absent.includes(res.kind);
/** What the session holds: its newest archive with messages, then those since; the failure when it cannot say. */
export async function heldMessages(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage[] | OvFailure> {
  const options = { budget, peerId: null, maxReplyBytes: 16 << 20 };
  const get = <S extends z.ZodMiniType>(path: string, schema: S) =>
    client.request("GET", `${sessionPath(sid)}${path}`, schema, options);
  const live = await get("/context", MessagesReply);
  if (!live.ok) return isAbsent(live) ? [] : live;
  const meta = await get("", z.looseObject({ commit_count: z.catch(z.int(), 0) }));
  if (!meta.ok) return meta;
  for (let n = meta.result.commit_count; n > 0; n--) {
    // OpenViking 0.5.2 answers an archive it has not completed with a NOT_FOUND that names nothing.
    const archive = await get(`/archives/archive_${String(n).padStart(3, "0")}`, MessagesReply);
    if (!archive.ok && !isAbsent(archive, ["rejected", "missing-route"])) return archive;
    const archived = archive.ok ? heldIn(archive.result) : [];
    if (archived.length) return [...archived, ...heldIn(live.result)];
  }
  return heldIn(live.result);
}

/** Days a queued write may wait before a replay drops it. */
export const PENDING_TTL_DAYS = 7;
/** One replay's limits: budget, entries (50), one session; `waitUnsure` in the budget; `rejected`: that place. */
export type ReplayOptions =
  & { budget: Budget }
  & Partial<{ limit: number; sessionId: string; waitUnsure: boolean; now: number; rejected: boolean }>;
/** What a replay did: entries and messages by fate; `waitUntil` an unsure write; `elsewhere` left for another place. */
export interface ReplayReport
  extends Record<"replayed" | "messages" | "held" | "rejected" | "expired" | "deferred", number> {
  commitTasks: { sessionId: string; taskId: string }[];
  cause?: OvFailure;
  waitUntil?: number;
  delivered: { sessionId: string; messages: number }[];
  elsewhere: (Destination & Counts)[];
}

/** One replay run: its client, place and limits, what it did, its clock, entries sent, whether it stops. */
type ReplayRun = {
  client: OpenVikingClient;
  pendingDir: string;
  options: ReplayOptions;
  report: ReplayReport;
  now: number;
  sent: number;
  stopAll: boolean;
};

/** Failures every session would meet the same way. */
const STOPS_ALL = new Set(["unreachable", "auth", "redirect", "not-openviking", "missing-route"]);
async function keep<E extends QueueEntry>(claimPath: string, entry: E): Promise<E> {
  await fs.writeFileAtomic(claimPath, `${JSON.stringify(entry)}\n`, { privateDir: false, durable: true });
  return entry;
}

/** Sends one claimed entry, progress kept in the claim (what an unsure session holds left out); its stop. */
async function sendClaimed(run: ReplayRun, claim: string, entry: QueueEntry) {
  const { client, report, options: { budget } } = run;
  const held = entry.unsure && entry.kind === "messages"
    ? await heldMessages(client, entry.sessionId, budget)
    : undefined;
  if (held && !Array.isArray(held) && held.kind === "unreachable") return held; // a send would meet the same
  if (Array.isArray(held) && entry.kind === "messages") {
    const messages = entry.messages.filter((m) => !isHeld(held, m.payload));
    report.held += entry.messages.length - messages.length;
    if (!messages.length) return undefined;
    entry = await keep(claim, { ...entry, unsure: undefined, messages });
  }
  const d = await deliver(client, run.pendingDir, entry, budget, {
    onSettled: async (n) => {
      if (entry.kind === "messages" && n < entry.messages.length) {
        await keep(claim, { ...entry, messages: entry.messages.slice(n) });
      }
    },
  });
  if (d.taskId) report.commitTasks.push({ sessionId: entry.sessionId, taskId: d.taskId });
  [report.messages, report.rejected] = [report.messages + d.sent, report.rejected + d.rejections.length];
  const mine = report.delivered.find((x) => x.sessionId === entry.sessionId);
  if (mine) mine.messages += d.sent;
  else if (d.sent) report.delivered.push({ sessionId: entry.sessionId, messages: d.sent });
  return d.stop;
}

/** Replays one queue file: "next", "stop" (later writes wait) or the other destination it is for; a found claim is unsure. */
async function replayFile(run: ReplayRun, dir: string, f: QueueFile): Promise<"next" | "stop" | Destination> {
  const { options, report, now } = run;
  if (run.sent >= (options.limit ?? 50) || options.budget.remaining() < 100) {
    run.stopAll = true;
    return "stop";
  }
  const path = joinPath(dir, entryName(f.seq, f.tag));
  const claim = joinPath(dir, entryName(f.seq, f.tag, Deno.pid));
  if (!(await Deno.rename(joinPath(dir, f.name), claim).then(() => true, () => false))) return "stop";
  let entry = await readEntry(claim);
  if (!entry) {
    await Deno.rename(claim, `${path}${UNREADABLE}`).catch(() => {});
    return "next";
  }
  const timeout = run.client.options.timeoutMs;
  if (f.claimedBy !== undefined && !entry.unsure) {
    entry = await keep(claim, { ...entry, unsure: now + timeout });
  }
  if (!goesTo(entry.to, await destinationFor(run.client.options))) {
    await Deno.rename(claim, path).catch(() => {});
    return entry.to!;
  }
  const expired = !options.rejected && now - entry.createdAt > PENDING_TTL_DAYS * 86_400_000;
  const wait = expired ? 0 : (typeof entry.unsure === "number" ? entry.unsure : 0) - now;
  const waits = wait > 0 && options.waitUnsure && wait < options.budget.remaining() - 1000;
  if (waits) await new Promise((r) => setTimeout(r, wait));
  let stop: OvFailure | "local" | "wait" | undefined = "wait";
  if (expired) {
    const why = { status: 0, message: `waited in the queue longer than ${PENDING_TTL_DAYS} days` };
    stop = await keepRejected(run.pendingDir, entry, why).then(() => undefined, () => "local" as const);
  } else if (wait > 0 && !waits) {
    report.waitUntil = Math.min(report.waitUntil ?? now + wait, now + wait);
  } else {
    run.sent++;
    stop = await sendClaimed(run, claim, entry).catch(() => "local" as const);
  }
  if (!stop) {
    await Deno.remove(claim).catch(() => {});
    report[expired ? "expired" : "replayed"]++;
    return "next";
  }
  let left = await readEntry(claim) ?? entry;
  const failure = typeof stop === "object" ? stop : undefined;
  const unsure = failure && unsureFrom(failure, timeout);
  if (unsure !== undefined) left = await keep(claim, { ...left, unsure });
  await Deno.rename(claim, joinPath(dir, entryName(f.seq, left))).catch(() => {});
  if (failure) report.cause = failure;
  run.stopAll ||= stop === "local" || (!!failure && STOPS_ALL.has(failure.kind));
  return "stop";
}

/** Replays our queue (or the rejected place): sessions oldest first write first, each in sequence order under its `replay.lock` (held: deferred), bounded; an emptied directory goes. */
export async function replayQueue(pendingDir: string, client: OpenVikingClient, options: ReplayOptions) {
  const zero = { replayed: 0, messages: 0, held: 0, rejected: 0, expired: 0, deferred: 0 };
  const report: ReplayReport = { ...zero, commitTasks: [], delivered: [], elsewhere: [] };
  const now = options.now ?? Date.now();
  const run: ReplayRun = { client, pendingDir, options, now, sent: 0, stopAll: false, report };
  const sessions = await sessionHeads(
    pendingDir,
    options.rejected ? REJECTED_SUBDIR : QUEUE_SUBDIR,
    options.sessionId,
  );
  sessions.sort((a, b) => (a.first?.createdAt ?? now) - (b.first?.createdAt ?? now));
  for (const { dir } of sessions) {
    const done = await withLock(joinPath(dir, "replay.lock"), async () => {
      await fs.removeAbandonedTemps(dir);
      const files = await queueFiles(dir);
      let [i, step] = [0, "next" as Awaited<ReturnType<typeof replayFile>>];
      while (i < files.length && !run.stopAll && (step = await replayFile(run, dir, files[i])) === "next") {
        i++;
      }
      report.deferred += files.length - i;
      if (typeof step === "object") report.elsewhere.push({ ...step, ...countOf(files.slice(i)) });
      return i === files.length;
    }, { waitMs: 0 });
    if (!done.acquired) report.deferred += (await queueFiles(dir)).length;
    else if (done.value) await Deno.remove(dir).catch(() => {});
  }
  return report;
}
