/**
 * Writes to an OpenViking session: messages in batches of 100 (one by one when the server has no batch
 * endpoint), the rest queued in order on a retryable failure, and commit. Reports how many leading messages
 * are acknowledged — sent, durably queued, or rejected for good — so callers only ever ack a prefix.
 */

import type { Budget, OpenVikingClient, OvError, OvResponse } from "./http.ts";
import { enqueueAll } from "./pending.ts";

/** Largest batch the server accepts. */
export const BATCH_LIMIT = 100;

/** A message as the server takes it. */
export interface MessagePayload {
  role: "user" | "assistant";
  content: string;
  turn_id?: string;
}

/** What happened to a list of messages. */
export interface SendReport {
  /** Leading messages that are settled (sent, queued, or rejected); only these may be acknowledged. */
  acked: number;
  sent: number;
  queued: number;
  /** Rejected by the server with a non-retryable status that is the message's fault (e.g. 400). */
  rejected: number;
  usedBatch: boolean;
  /** Set when sending stopped early (auth failure, or the queue could not store the rest). */
  stoppedBy?: OvError & { status: number };
}

/** Options of a send. */
export interface SendOptions {
  budget: Budget;
  pendingDir: string;
  /** Queue everything without trying the server (earlier writes of this session are still queued). */
  queueOnly?: boolean;
  /**
   * Called with the acknowledged prefix after each request the server settled, before the next request, so
   * the caller can record it: a process killed later never sends that prefix again.
   */
  onAcked?: (acked: number) => Promise<void>;
}

const sessionPath = (sid: string) => `/api/v1/sessions/${encodeURIComponent(sid)}`;
const isAuth = (status: number) => status === 401 || status === 403;
const isMissingRoute = (status: number) => status === 404 || status === 405;

/** Sends messages to session `sid` in order and reports the acknowledged prefix. */
export async function sendMessages(
  client: OpenVikingClient,
  sid: string,
  payloads: readonly MessagePayload[],
  options: SendOptions,
): Promise<SendReport> {
  const report: SendReport = { acked: 0, sent: 0, queued: 0, rejected: 0, usedBatch: false };
  const queueFrom = async (i: number) => {
    const writes = payloads.slice(i).map((payload) => ({
      type: "addMessage" as const,
      sessionId: sid,
      payload,
    }));
    const stored = await enqueueAll(options.pendingDir, writes);
    report.queued += stored;
    report.acked += stored;
    if (stored < writes.length) {
      report.stoppedBy = {
        status: 0,
        code: "QUEUE",
        message: "the pending queue could not store every message",
      };
    }
  };
  if (options.queueOnly) {
    await queueFrom(0);
    return report;
  }
  let serial = false;
  let i = 0;
  while (i < payloads.length) {
    if (!serial) {
      const chunk = payloads.slice(i, i + BATCH_LIMIT);
      const res = await client.request("POST", `${sessionPath(sid)}/messages/batch`, {
        body: { messages: chunk },
        budget: options.budget,
        peerId: null,
      });
      if (res.ok) {
        report.usedBatch = true;
        report.sent += chunk.length;
        report.acked += chunk.length;
        i += chunk.length;
        await options.onAcked?.(report.acked);
        continue;
      }
      if (isAuth(res.status)) {
        report.stoppedBy = { ...res.error, status: res.status };
        return report;
      }
      if (res.retryable) {
        await queueFrom(i);
        return report;
      }
      if (isMissingRoute(res.status)) {
        serial = true; // an older server without the batch endpoint: one by one from here on
        continue;
      }
      // The server refused this batch: send it one by one so only the bad message is dropped.
      if (!(await sendSerial(i, i + chunk.length))) return report;
      i += chunk.length;
      continue;
    }
    const ok = await sendSerial(i, payloads.length);
    if (!ok) return report;
    i = payloads.length;
  }
  return report;

  async function sendSerial(from: number, to: number): Promise<boolean> {
    for (let j = from; j < to; j++) {
      const res = await client.request("POST", `${sessionPath(sid)}/messages`, {
        body: payloads[j],
        budget: options.budget,
        peerId: null,
      });
      if (res.ok) {
        report.sent++;
        report.acked++;
        await options.onAcked?.(report.acked);
      } else if (isAuth(res.status)) {
        report.stoppedBy = { ...res.error, status: res.status };
        return false;
      } else if (res.retryable) {
        await queueFrom(j);
        return false;
      } else {
        report.rejected++;
        report.acked++;
        await options.onAcked?.(report.acked);
      }
    }
    return true;
  }
}

/** Outcome of a commit. */
export type CommitOutcome =
  | { kind: "committed"; result: unknown }
  | { kind: "queued"; error: OvError }
  | { kind: "failed"; status: number; error: OvError };

/** Commits session `sid`; a retryable failure is queued. */
export async function commitSession(
  client: OpenVikingClient,
  sid: string,
  options: { budget: Budget; pendingDir: string },
): Promise<CommitOutcome> {
  const res: OvResponse<unknown> = await client.request("POST", `${sessionPath(sid)}/commit`, {
    body: {},
    budget: options.budget,
    peerId: null,
  });
  if (res.ok) return { kind: "committed", result: res.result };
  if (res.retryable) {
    const stored = await enqueueAll(options.pendingDir, [{
      type: "commitSession",
      sessionId: sid,
      payload: {},
    }]);
    if (stored === 1) return { kind: "queued", error: res.error };
  }
  return { kind: "failed", status: res.status, error: res.error };
}
