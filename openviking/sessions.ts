/**
 * Writes to an OpenViking session: messages delivered in order (`deliver.ts`), the rest queued in order when
 * the server cannot take them now, and commit. A write OpenViking itself refuses for good is kept in the
 * rejected place (`keepRejected`); every other failure (no answer, a refused key, a redirect, a reply that is
 * not OpenViking's, a server error) queues it. Reports how many leading messages are acknowledged — sent,
 * durably queued, or rejected and durably kept — so callers only ever ack a prefix.
 */

import type { Budget, OpenVikingClient, OvFailure } from "./client.ts";
import {
  CommitResultSchema,
  deliverMessages,
  mayHaveArrived,
  type MessagePayload,
  type Rejection,
  sessionPath,
} from "./deliver.ts";
import { keepRejected, SessionQueue } from "./queue.ts";

/** What happened to a list of messages. */
export interface SendReport {
  /** Leading messages that are settled (sent, queued, or rejected and kept); only these may be acknowledged. */
  acked: number;
  sent: number;
  queued: number;
  /** Refused by OpenViking itself (a final code of its error envelope); kept in the rejected place. */
  rejected: number;
  rejections: Rejection[];
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
   * throws, nothing more is sent (nothing is lost: the messages stay unacknowledged).
   */
  beforeRequest?: (from: number, to: number) => Promise<void>;
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
  const report: SendReport = {
    acked: 0,
    sent: 0,
    queued: 0,
    rejected: 0,
    rejections: [],
  };
  /** Queues `payloads[i…]`, the first batch unsure when its request may have arrived. */
  const queueFrom = async (i: number, unsure = false) => {
    if (i >= payloads.length) return;
    await options.beforeRequest?.(i, payloads.length);
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
    });
    if (d.stop) {
      report.cause = d.stop;
      await queueFrom(d.settled, mayHaveArrived(d.stop));
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
