/**
 * Writes to an OpenViking session: messages delivered in order — batches, one by one when the server has no
 * batch route or refuses a batch, so only a message OpenViking itself refuses is set aside (kept in the
 * rejected place) — the rest queued in order when the server cannot take them now, and commit. Reports how
 * many leading messages are acknowledged (sent, durably queued, or rejected and durably kept), so callers only
 * ever ack a prefix. Also what a session already holds, asked before sending again what may have arrived.
 */

import * as z from "zod/mini";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure } from "./client.ts";
import { keepRejected, type MessagePayload, nextBatchEnd, sessionPath, SessionQueue } from "./queue.ts";

/** A message OpenViking refused for good, and its words (the caller keeps it: `onRejected`). */
export interface Rejection {
  index: number;
  status: number;
  message: string;
}

/**
 * The result of a commit: its task id, when the server gave one. A commit is a write, so any result is
 * taken (the "ok" is what counts) and a task id that is not a non-empty string reads as none.
 */
export const CommitResultSchema = z.pipe(
  z.unknown(),
  z.transform((v) => {
    const id = asRecord(v).task_id;
    return { taskId: typeof id === "string" && id ? id : undefined };
  }),
);

/** The `pending_tokens` of a write's reply (the session's uncommitted tokens); undefined when it has none. */
function pendingTokensOf(result: unknown): number | undefined {
  const n = asRecord(result).pending_tokens;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined;
}

/** Whether a batch failure means "send these one by one" rather than "stop and queue". */
function wantsSerial(res: OvFailure): "route" | "batch" | "" {
  if (res.kind === "missing-route") return "route";
  if (res.kind === "not-openviking" && (res.status === 404 || res.status === 405)) return "route";
  if (res.kind === "rejected" || res.status === 413) return "batch";
  return "";
}

/**
 * Whether a write that failed this way may still have been stored: it went out and no reply came (a timeout,
 * a cut connection), or a server error came. Such a write is queued unsure, and asked about before it is sent
 * again; one that never went out (no connection, no time left) is not.
 */
export function mayHaveArrived(f: OvFailure): boolean {
  if (f.status !== 0) return f.status >= 500;
  return f.error.code !== "CONNECT" && f.error.code !== "BUDGET_SPENT";
}

/**
 * From when the session's answer about a write that failed this way (`mayHaveArrived`) counts: at once when
 * the server answered or the connection broke, but after a timeout — ours, or a gateway's 504 — only once the
 * server has had as long again as we waited (`timeoutMs`): a slow server may still store a write its client
 * gave up on.
 */
export function answerCountsFrom(f: OvFailure, timeoutMs: number, now = Date.now()): number {
  return f.error.code === "TIMEOUT" || f.status === 504 ? now + timeoutMs : now;
}

/** What delivering a list of messages did, up to where it stopped. */
export interface Delivery {
  /** Messages settled from the start: sent or rejected. */
  settled: number;
  sent: number;
  rejections: Rejection[];
  usedBatch: boolean;
  /** The session's uncommitted tokens as the server counted them after the last write it took, if it said. */
  pendingTokens?: number;
  /** The failure that stopped delivery at `settled` (the rest was not sent). */
  stop?: OvFailure;
}

/**
 * Delivers messages in order — batches, falling back to one by one — until all are settled or a failure that
 * is not a rejection stops it. `beforeRequest`/`onSettled` are called around every request; `onRejected`
 * keeps a message OpenViking refused before it counts as settled (if it throws, delivery stops before it).
 */
export async function deliverMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: {
    budget: Budget;
    serial?: boolean;
    beforeRequest?: (from: number, to: number) => Promise<void>;
    onSettled?: (settled: number) => Promise<void>;
    onRejected?: (payload: MessagePayload, rejection: Rejection) => Promise<void>;
  },
): Promise<Delivery> {
  const d: Delivery = { settled: 0, sent: 0, rejections: [], usedBatch: false };
  let serial = options.serial ?? false;
  while (d.settled < payloads.length) {
    const from = d.settled;
    const end = serial ? from + 1 : nextBatchEnd(payloads, from);
    await options.beforeRequest?.(from, end);
    if (!serial) {
      const res = await client.request("POST", `${sessionPath(sid)}/messages/batch`, AnyResult, {
        body: { messages: payloads.slice(from, end) },
        budget: options.budget,
        peerId: null,
      });
      if (res.ok) {
        d.usedBatch = true;
        d.pendingTokens = pendingTokensOf(res.result);
        d.sent += end - from;
        d.settled = end;
        await options.onSettled?.(d.settled);
        continue;
      }
      const why = wantsSerial(res);
      if (!why) return { ...d, stop: res };
      if (why === "route") serial = true; // an older server without the batch route: one by one from here on
      // A refused batch goes one by one, so only a message OpenViking refuses is set aside; each request's
      // intent is recorded again (settling the one before it cleared the batch's).
      const before = options.beforeRequest;
      const inner = await deliverMessages(client, sid, payloads.slice(from, end), {
        ...options,
        serial: true,
        beforeRequest: before && (async (f, t) => await before(from + f, from + t)),
        onSettled: async (n) => await options.onSettled?.(from + n),
      });
      d.sent += inner.sent;
      d.rejections.push(...inner.rejections.map((r) => ({ ...r, index: r.index + from })));
      d.settled = from + inner.settled;
      if (inner.pendingTokens !== undefined) d.pendingTokens = inner.pendingTokens;
      if (inner.stop) return { ...d, stop: inner.stop };
      continue;
    }
    const res = await client.request("POST", `${sessionPath(sid)}/messages`, AnyResult, {
      body: payloads[from],
      budget: options.budget,
      peerId: null,
    });
    if (res.ok) [d.sent, d.pendingTokens] = [d.sent + 1, pendingTokensOf(res.result)];
    else if (res.kind === "rejected") {
      const rejection = { index: from, status: res.status, message: res.error.message };
      await options.onRejected?.(payloads[from], rejection);
      d.rejections.push(rejection);
    } else return { ...d, stop: res };
    d.settled = from + 1;
    await options.onSettled?.(d.settled);
  }
  return d;
}

/** What happened to a list of messages. */
export interface SendReport {
  /** Leading messages that are settled (sent, queued, or rejected and kept); only these may be acknowledged. */
  acked: number;
  sent: number;
  queued: number;
  /** Refused by OpenViking itself (a final code of its error envelope); kept in the rejected place. */
  rejected: number;
  rejections: Rejection[];
  /** The session's uncommitted tokens as the server counted them after the last write it took, if it said. */
  pendingTokens?: number;
  /** Why messages were queued instead of sent (the first failure that stopped sending). */
  cause?: OvFailure;
  /**
   * Set when sending stopped with messages neither sent nor queued (the queue, the rejected place or the state
   * could not be written).
   */
  stoppedBy?: { code: string; message: string };
}

/** Options of a send. */
export interface SendOptions {
  budget: Budget;
  pendingDir: string;
  /** Queue everything without trying the server (earlier writes of this session are still queued). */
  queueOnly?: boolean;
  /** The session's queue, opened once by a caller that queues in many steps. */
  queue?: SessionQueue;
  /**
   * Called before messages `[from, to)` are sent or queued, so the caller can record the intent first; if it
   * throws, nothing more is sent (nothing is lost: the messages stay unacknowledged). `askFrom`, when they are
   * queued: from when the session's answer about the request before counts (`answerCountsFrom`).
   */
  beforeRequest?: (from: number, to: number, askFrom?: number) => Promise<void>;
  /**
   * Called with the acknowledged prefix after each request the server settled, before the next request, so
   * the caller can record it: a process killed later never sends that prefix again. If it throws, sending
   * stops.
   */
  onAcked?: (acked: number) => Promise<void>;
}

/** Sends messages to session `sid` in order and reports the acknowledged prefix. */
export async function sendMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: SendOptions,
): Promise<SendReport> {
  const report: SendReport = { acked: 0, sent: 0, queued: 0, rejected: 0, rejections: [] };
  /** Queues `payloads[i…]`, the first batch unsure (asked about from `unsure` on) when its request may have arrived. */
  const queueFrom = async (i: number, unsure?: number) => {
    if (i >= payloads.length) return;
    await options.beforeRequest?.(i, payloads.length, unsure ?? Date.now());
    const queue = options.queue ?? await SessionQueue.open(options.pendingDir, sid);
    const stored = await queue.messages(payloads.slice(i), { unsure });
    report.queued += stored;
    report.acked += stored;
    if (stored < payloads.length - i) {
      report.stoppedBy = {
        code: "QUEUE",
        message: `the pending queue ${options.pendingDir} could not store every message`,
      };
    }
  };
  try {
    if (options.queueOnly) {
      await queueFrom(0);
      return report;
    }
    const d = await deliverMessages(client, sid, payloads, {
      budget: options.budget,
      beforeRequest: options.beforeRequest,
      onRejected: (payload, r) => keepRejected(options.pendingDir, sid, { messages: [payload] }, r),
      onSettled: async (settled) => {
        report.acked = settled;
        await options.onAcked?.(settled);
      },
    });
    Object.assign(report, {
      acked: d.settled,
      sent: d.sent,
      rejected: d.rejections.length,
      rejections: d.rejections,
      pendingTokens: d.pendingTokens,
    });
    if (d.stop) {
      report.cause = d.stop;
      const unsure = mayHaveArrived(d.stop) ? answerCountsFrom(d.stop, client.options.timeoutMs) : undefined;
      await queueFrom(d.settled, unsure);
    }
  } catch (error) {
    // The caller could not record its progress: stop here; what is not acknowledged stays in the journal.
    report.stoppedBy = { code: "STATE", message: (error as Error).message };
  }
  return report;
}

/** Outcome of a commit. */
export type CommitOutcome =
  | { kind: "committed"; taskId?: string }
  | { kind: "queued"; cause?: OvFailure }
  | { kind: "rejected"; status: number; message: string }
  | { kind: "failed"; message: string };

/**
 * Commits session `sid`. `key` names this commit (one per capture), so queued commits of different captures
 * never merge. With `queueOnly` (earlier writes of the session are queued) the commit queues behind them.
 */
export async function commitSession(
  client: OpenVikingClient,
  sid: string,
  options: { budget: Budget; pendingDir: string; key: string; queueOnly?: boolean; queue?: SessionQueue },
): Promise<CommitOutcome> {
  const queue = async (cause?: OvFailure): Promise<CommitOutcome> =>
    await (options.queue ?? await SessionQueue.open(options.pendingDir, sid)).commit(options.key)
      ? { kind: "queued", cause }
      : { kind: "failed", message: `the pending queue ${options.pendingDir} could not store the commit` };
  if (options.queueOnly) return await queue();
  const res = await client.request("POST", `${sessionPath(sid)}/commit`, CommitResultSchema, {
    body: {},
    budget: options.budget,
    peerId: null,
  });
  if (res.ok) return { kind: "committed", taskId: res.result.taskId };
  if (res.kind !== "rejected") return await queue(res);
  const why = { status: res.status, message: res.error.message };
  return await keepRejected(options.pendingDir, sid, { commit: options.key }, why).then(
    (): CommitOutcome => ({ kind: "rejected", ...why }),
    (error): CommitOutcome => ({ kind: "failed", message: (error as Error).message }),
  );
}

/** After this long without a new message the server commits a session itself (its minimum is 300 s). */
export const IDLE_COMMIT_SECONDS = 900;

/**
 * Asks the server to commit session `sid` itself once it has been idle `IDLE_COMMIT_SECONDS` (its
 * `auto_commit_policy`; its own token and message thresholds off: the capture decides those). "set": taken;
 * "unsupported": refused, or a server without the route; undefined: no answer, ask again later.
 */
export async function setIdleCommit(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<"set" | "unsupported" | undefined> {
  const policy = {
    idle_timeout_seconds: IDLE_COMMIT_SECONDS,
    pending_token_threshold: 0,
    message_count_threshold: 0,
  };
  const res = await client.request("PATCH", `${sessionPath(sid)}/config`, AnyResult, {
    body: { auto_commit_policy: policy },
    budget,
    peerId: null,
  });
  if (res.ok) return "set";
  return res.kind === "rejected" || res.kind === "missing-route" ? "unsupported" : undefined;
}

/** A message the server holds, as far as matching goes. */
export interface HeldMessage {
  role: string;
  turnId?: string;
  text: string;
}

/** Messages in a reply (`GET …/context`, an archive): their text is in `parts` (or, older, `content`). */
const MessagesReply = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

/** The session's meta (`GET /sessions/{id}`): how many commits (archives) it has. */
const SessionReply = z.looseObject({ commit_count: z.catch(z.int(), 0) });

/** The messages of a reply. Pure. */
function heldIn(result: z.output<typeof MessagesReply>): HeldMessage[] {
  return result.messages.filter(isRecord).map((m) => ({
    role: String(m.role ?? ""),
    turnId: typeof m.turn_id === "string" ? m.turn_id : undefined,
    text: Array.isArray(m.parts)
      ? m.parts.filter(isRecord).map((p) => (typeof p.text === "string" ? p.text : "")).join("")
      : typeof m.content === "string"
      ? m.content
      : "",
  }));
}

/** Whether `held` has this message. Pure. */
export function isHeld(held: readonly HeldMessage[], payload: MessagePayload): boolean {
  return held.some((m) =>
    m.role === payload.role && m.text === payload.content &&
    (m.turnId === undefined || m.turnId === payload.turn_id)
  );
}

/**
 * One GET of the session: its result; `null` when the server says there is no such thing (a 404: the session,
 * an archive whose extraction failed or is not done, a route an older server lacks); else undefined.
 */
async function get<S extends z.ZodMiniType>(
  client: OpenVikingClient,
  path: string,
  schema: S,
  budget: Budget,
): Promise<z.output<S> | null | undefined> {
  const res = await client.request("GET", path, schema, { budget, peerId: null, maxReplyBytes: 16 << 20 });
  if (res.ok) return res.result;
  return res.status === 404 ? null : undefined;
}

/** The messages the session holds since its last commit; undefined when the server cannot say. */
export async function liveMessages(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage[] | undefined> {
  const live = await get(client, `${sessionPath(sid)}/context`, MessagesReply, budget);
  return live === undefined ? undefined : live === null ? [] : heldIn(live);
}

/**
 * The newest message the session holds, archived ones included: the newest live one, else the last of the
 * newest archive that can be read (`null`: none at all); undefined when the server cannot say.
 */
export async function newestHeld(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage | null | undefined> {
  const live = await get(client, `${sessionPath(sid)}/context`, MessagesReply, budget);
  if (!live) return live; // no such session (null), or no answer
  const newest = heldIn(live).at(-1);
  if (newest) return newest;
  const meta = await get(client, sessionPath(sid), SessionReply, budget);
  if (!meta) return undefined; // it was there a moment ago
  for (let n = meta.commit_count; n > 0; n--) {
    const id = `archive_${String(n).padStart(3, "0")}`;
    const archive = await get(client, `${sessionPath(sid)}/archives/${id}`, MessagesReply, budget);
    if (archive === undefined) return undefined;
    const last = archive && heldIn(archive).at(-1);
    if (last) return last;
  }
  return null;
}
