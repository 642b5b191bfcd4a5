/** Writes to an OpenViking session: messages in order, queued when they cannot be sent, commits; what a session holds. */

import * as z from "zod/mini";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure } from "./client.ts";
import {
  destinationOf,
  keepRejected,
  type MessagePayload,
  nextBatchEnd,
  sessionPath,
  SessionQueue,
} from "./queue.ts";

/** A message OpenViking refused for good (the caller keeps it: `onRejected`). */
export interface Rejection {
  index: number;
  status: number;
  message: string;
}

/** A commit's result: its task id, if a non-empty string (any result is taken). */
const CommitResultSchema = z.pipe(
  z.unknown(),
  z.transform((v) => {
    const id = asRecord(v).task_id;
    return { taskId: typeof id === "string" && id ? id : undefined };
  }),
);

/** POSTs the commit of session `sid`: its task id, or the failure. */
export function postCommit(client: OpenVikingClient, sid: string, budget: Budget) {
  return client.request("POST", `${sessionPath(sid)}/commit`, CommitResultSchema, {
    body: {},
    budget,
    peerId: null,
  });
}

/** Whether a batch failure means "one by one": from now on (`route`) or for this batch. */
function wantsSerial(res: OvFailure): "route" | "batch" | "" {
  if (res.kind === "missing-route") return "route";
  if (res.kind === "not-openviking" && (res.status === 404 || res.status === 405)) return "route";
  if (res.kind === "rejected" || res.status === 413) return "batch";
  return "";
}

/**
 * When a write that failed this way may still have been stored (it went out, and no reply or a 5xx came):
 * from when the session's answer about it counts (after a timeout: once the server had as long again).
 */
export function unsureFrom(f: OvFailure, timeoutMs: number, now = Date.now()): number | undefined {
  const arrived = f.status !== 0
    ? f.status >= 500
    : f.error.code !== "CONNECT" && f.error.code !== "BUDGET_SPENT";
  if (!arrived) return undefined;
  return f.error.code === "TIMEOUT" || f.status === 504 ? now + timeoutMs : now;
}

/** What delivering messages did; `settled`: the prefix sent or rejected; `stop`: why it stopped there. */
export interface Delivery {
  settled: number;
  sent: number;
  rejections: Rejection[];
  pendingTokens?: number;
  stop?: OvFailure;
}

/** Delivers messages in order (batches, else one by one) until a failure other than a rejection; `onRejected` keeps a refused one before it counts. */
export async function deliverMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: {
    budget: Budget;
    beforeRequest?: (from: number, to: number) => Promise<void>;
    onSettled?: (settled: number) => Promise<void>;
    onRejected?: (payload: MessagePayload, rejection: Rejection) => Promise<void>;
  },
): Promise<Delivery> {
  const d: Delivery = { settled: 0, sent: 0, rejections: [] };
  let serialUntil = 0;
  while (d.settled < payloads.length) {
    const from = d.settled;
    const serial = from < serialUntil;
    const end = serial ? from + 1 : nextBatchEnd(payloads, from);
    await options.beforeRequest?.(from, end);
    const res = await client.request(
      "POST",
      `${sessionPath(sid)}/messages${serial ? "" : "/batch"}`,
      AnyResult,
      {
        body: serial ? payloads[from] : { messages: payloads.slice(from, end) },
        budget: options.budget,
        peerId: null,
      },
    );
    if (res.ok) {
      const n = asRecord(res.result).pending_tokens; // the session's uncommitted tokens
      const tokens = typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined;
      [d.sent, d.pendingTokens] = [d.sent + end - from, serial ? tokens ?? d.pendingTokens : tokens];
    } else if (!serial && wantsSerial(res)) {
      serialUntil = wantsSerial(res) === "route" ? Infinity : end;
      continue;
    } else if (res.kind === "rejected") {
      const rejection = { index: from, status: res.status, message: res.error.message };
      await options.onRejected?.(payloads[from], rejection);
      d.rejections.push(rejection);
    } else return { ...d, stop: res };
    d.settled = end;
    await options.onSettled?.(d.settled);
  }
  return d;
}

/** What happened to messages; only the `acked` prefix may be acknowledged; `stoppedBy`: the queue or state could not be written. */
export interface SendReport {
  acked: number;
  sent: number;
  queued: number;
  rejected: number;
  rejections: Rejection[];
  pendingTokens?: number;
  cause?: OvFailure;
  stoppedBy?: { code: string; message: string };
}

/** Options of a send; `beforeRequest` records the intent first (`askFrom` when queued unsure), `onAcked` the progress; if either throws, sending stops. */
interface SendOptions {
  budget: Budget;
  pendingDir: string;
  queueOnly?: boolean;
  queue?: SessionQueue;
  beforeRequest?: (from: number, to: number, askFrom?: number) => Promise<void>;
  onAcked?: (acked: number) => Promise<void>;
}

/** Sends messages to session `sid` in order; what cannot be sent is queued behind the settled prefix. */
export async function sendMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: SendOptions,
): Promise<SendReport> {
  const report: SendReport = { acked: 0, sent: 0, queued: 0, rejected: 0, rejections: [] };
  const to = destinationOf(client.options);
  try {
    const d = options.queueOnly ? undefined : await deliverMessages(client, sid, payloads, {
      budget: options.budget,
      beforeRequest: options.beforeRequest,
      onRejected: (payload, r) => keepRejected(options.pendingDir, sid, { messages: [payload], to }, r),
      onSettled: async (settled) => {
        report.acked = settled;
        await options.onAcked?.(settled);
      },
    });
    if (d) {
      const { settled: acked, sent, rejections, pendingTokens } = d;
      Object.assign(report, { acked, sent, rejected: rejections.length, rejections, pendingTokens });
    }
    if (d?.stop) report.cause = d.stop;
    const from = d?.settled ?? 0;
    if ((!d || d.stop) && from < payloads.length) {
      const unsure = d?.stop && unsureFrom(d.stop, client.options.timeoutMs);
      await options.beforeRequest?.(from, payloads.length, unsure ?? Date.now());
      const queue = options.queue ?? await SessionQueue.open(options.pendingDir, sid, to);
      const stored = await queue.messages(payloads.slice(from), { unsure });
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

type CommitOutcome =
  | { kind: "committed"; taskId?: string }
  | { kind: "queued"; cause?: OvFailure }
  | { kind: "rejected"; status: number; message: string }
  | { kind: "failed"; message: string };

/** Commits session `sid` (`key` names this commit); queued behind earlier writes with `queueOnly`. */
export async function commitSession(
  client: OpenVikingClient,
  sid: string,
  options: { budget: Budget; pendingDir: string; key: string; queueOnly?: boolean; queue?: SessionQueue },
): Promise<CommitOutcome> {
  const to = destinationOf(client.options);
  const queue = async (cause?: OvFailure): Promise<CommitOutcome> =>
    await (options.queue ?? await SessionQueue.open(options.pendingDir, sid, to)).commit(options.key)
      ? { kind: "queued", cause }
      : { kind: "failed", message: `the pending queue ${options.pendingDir} could not store the commit` };
  if (options.queueOnly) return await queue();
  const res = await postCommit(client, sid, options.budget);
  if (res.ok) return { kind: "committed", taskId: res.result.taskId };
  if (res.kind !== "rejected") return await queue(res);
  const why = { status: res.status, message: res.error.message };
  return await keepRejected(options.pendingDir, sid, { commit: options.key, to }, why).then(
    (): CommitOutcome => ({ kind: "rejected", ...why }),
    (error): CommitOutcome => ({ kind: "failed", message: (error as Error).message }),
  );
}

/** A message the server holds, as far as matching goes. */
interface HeldMessage {
  role: string;
  turnId?: string;
  text: string;
}

/** Messages in a reply (`…/context`, an archive): text in `parts` (older: `content`). */
const MessagesReply = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

const SessionReply = z.looseObject({ commit_count: z.catch(z.int(), 0) });

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
 * One GET: its result; `null` when OpenViking's own 404 says there is no such thing (`absent`: the kinds that
 * say it; a page that is not OpenViking's, or a missing route, cannot say); else undefined.
 */
async function get<S extends z.ZodMiniType>(
  client: OpenVikingClient,
  path: string,
  schema: S,
  budget: Budget,
  absent: readonly OvFailure["kind"][] = ["rejected"],
) {
  const res = await client.request("GET", path, schema, { budget, peerId: null, maxReplyBytes: 16 << 20 });
  return res.ok ? res.result : res.status === 404 && absent.includes(res.kind) ? null : undefined;
}

/**
 * What the session holds: the messages its newest commit archived (the newest readable archive that has any),
 * then those since; undefined when the server cannot say. A batch it stored is among them even after a
 * commit: our later writes to the session wait behind one whose reply was lost.
 */
export async function heldMessages(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage[] | undefined> {
  const live = await get(client, `${sessionPath(sid)}/context`, MessagesReply, budget);
  if (!live) return live === null ? [] : undefined;
  const meta = await get(client, sessionPath(sid), SessionReply, budget);
  if (!meta) return undefined;
  for (let n = meta.commit_count; n > 0; n--) {
    const id = `archive_${String(n).padStart(3, "0")}`;
    // OpenViking 0.5.2 answers an archive it has not completed with a NOT_FOUND that names nothing.
    const archive = await get(client, `${sessionPath(sid)}/archives/${id}`, MessagesReply, budget, [
      "rejected",
      "missing-route",
    ]);
    if (archive === undefined) return undefined;
    const archived = archive ? heldIn(archive) : [];
    if (archived.length) return [...archived, ...heldIn(live)];
  }
  return heldIn(live);
}
