/**
 * Delivers messages to an OpenViking session in order: batches (≤ 100 messages, ≤ 512 KB), one by one when the
 * server has no batch route or refuses a batch (so only a message OpenViking itself refuses is set aside, and
 * kept by the caller), until every message is settled or a failure that is not a rejection stops it. Used by
 * capture and by replay.
 */

import * as z from "zod/mini";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure } from "./client.ts";
import { asRecord } from "../lib/parsed.ts";

/** Largest batch the server accepts. */
export const BATCH_LIMIT = 100;

/** Largest batch body we send (a proxy in front of OpenViking often refuses bodies over 1 MB). */
export const BATCH_MAX_BYTES = 512 * 1024;

/** A message as the server takes it. */
export interface MessagePayload {
  role: "user" | "assistant";
  content: string;
  turn_id?: string;
}

/** A message OpenViking refused for good, and its words (the caller keeps it: `onRejected`). */
export interface Rejection {
  index: number;
  status: number;
  message: string;
}

/** The API path of a session. */
export const sessionPath = (sid: string): string => `/api/v1/sessions/${encodeURIComponent(sid)}`;

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

/** What delivering a list of messages did, up to where it stopped. */
export interface Delivery {
  /** Messages settled from the start: sent or rejected. */
  settled: number;
  sent: number;
  rejections: Rejection[];
  usedBatch: boolean;
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
        d.sent += end - from;
        d.settled = end;
        await options.onSettled?.(d.settled);
        continue;
      }
      const why = wantsSerial(res);
      if (!why) return { ...d, stop: res };
      if (why === "route") serial = true; // an older server without the batch route: one by one from here on
      // A refused batch goes one by one, so only a message OpenViking refuses is set aside.
      const inner = await deliverMessages(client, sid, payloads.slice(from, end), {
        ...options,
        serial: true,
        beforeRequest: undefined,
        onSettled: async (n) => await options.onSettled?.(from + n),
      });
      d.sent += inner.sent;
      d.rejections.push(...inner.rejections.map((r) => ({ ...r, index: r.index + from })));
      d.settled = from + inner.settled;
      if (inner.stop) return { ...d, stop: inner.stop };
      continue;
    }
    const res = await client.request("POST", `${sessionPath(sid)}/messages`, AnyResult, {
      body: payloads[from],
      budget: options.budget,
      peerId: null,
    });
    if (res.ok) d.sent++;
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
