/**
 * Turns one HTTP reply of a Streamable HTTP server into JSON-RPC messages: a JSON body (one message or an
 * array) or an SSE stream read as it arrives, so messages the server sends before its response (progress,
 * logging, its own requests) reach the client at once. Every read is bounded: bytes of a JSON body, of one SSE
 * event and of the stream as a whole, and the time the body may go without a byte. Reads the body only; no
 * decisions about status codes.
 */

import { type BodyStop, BoundedBody, readBody } from "../openviking/client.ts";
import { MAX_REPLY_BYTES, MAX_STREAM_BYTES } from "./limits.ts";
import { type Classified, classifyUpstream, type JsonRpcId } from "./jsonrpc.ts";
import { isEmptyEventData, SseParser } from "./sse.ts";

/** The bounds of reading one reply. */
export interface ReplyLimits {
  /** Bytes of a JSON body; characters of one SSE event (never more than its bytes). */
  replyBytes: number;
  /** Bytes of an SSE stream as a whole. */
  streamBytes: number;
  /** How long a JSON body may go without a byte (ms). */
  bodyIdleMs: number;
  /** How long an SSE stream may go without a byte; keep-alive comments count (ms). */
  streamIdleMs: number;
  /** Stops the read (it then ends as cut). */
  signal?: AbortSignal;
}

/** A bound that stopped a reply: too many bytes (of the JSON body, one event, or the stream), or silence. */
export type ReplyStop =
  | { kind: "too-large"; limitBytes: number; part: "reply" | "event" | "stream" }
  | { kind: "stalled"; ms: number };

/** What reading a reply produced. */
export interface ReplyOutcome {
  /** Messages handed to the sink. */
  delivered: number;
  /** Whether the response to the expected request id was among them. */
  answered: boolean;
  /** Pieces of the body that were not JSON-RPC, and the first of them (shortened) for the error message. */
  invalid: number;
  invalidSample?: string;
  /** The body ended with an error (connection cut, aborted). */
  cut?: unknown;
  /** A bound stopped the reading before the body ended. */
  stop?: ReplyStop;
  /** Bytes read of the body. */
  bytes: number;
  /** SSE only: the last event id and the server's retry delay. */
  lastEventId: string;
  retryMs?: number;
}

/** Receives each message of a reply, in order. */
export type MessageSink = (item: Classified) => void | Promise<void>;

/** Whether a content type is an SSE stream. */
export function isEventStream(contentType: string | null): boolean {
  return (contentType ?? "").toLowerCase().split(";")[0].trim() === "text/event-stream";
}

const SAMPLE_CHARS = 200;

class Collector {
  readonly outcome: ReplyOutcome = { delivered: 0, answered: false, invalid: 0, lastEventId: "", bytes: 0 };
  constructor(private readonly expectId: JsonRpcId | undefined, private readonly sink: MessageSink) {}

  /** Delivers every message of one JSON text (an object or a batch array). */
  async text(text: string): Promise<void> {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.bad(text);
      return;
    }
    for (const v of Array.isArray(value) ? value : [value]) {
      const item = classifyUpstream(v);
      if (!item) {
        this.bad(JSON.stringify(v) ?? String(v));
        continue;
      }
      if (this.expectId !== undefined && item.kind === "response" && item.message.id === this.expectId) {
        this.outcome.answered = true;
      }
      this.outcome.delivered++;
      await this.sink(item);
    }
  }

  private bad(sample: string): void {
    this.outcome.invalid++;
    this.outcome.invalidSample ??= sample.length > SAMPLE_CHARS
      ? `${sample.slice(0, SAMPLE_CHARS)}…`
      : sample;
  }
}

/** The time bounds when a caller gives none (tests): none. The proxy always passes its own. */
const NO_TIME_BOUNDS = { bodyIdleMs: Infinity, streamIdleMs: Infinity };

function stopped(outcome: ReplyOutcome, stop: BodyStop, part: "reply" | "stream"): void {
  if (stop.kind === "cut") outcome.cut = stop.cause;
  else if (stop.kind === "stalled") outcome.stop = stop;
  else outcome.stop = { kind: "too-large", limitBytes: stop.limitBytes, part };
}

/** A JSON reply: one body within the reply bound, its messages delivered. */
async function readJsonReply(response: Response, collector: Collector, bounds: ReplyLimits): Promise<void> {
  const outcome = collector.outcome;
  const read = await readBody(response, {
    maxBytes: bounds.replyBytes,
    idleMs: bounds.bodyIdleMs,
    signal: bounds.signal,
  });
  if ("stop" in read) return stopped(outcome, read.stop, "reply");
  outcome.bytes = read.bytes.length;
  const text = new TextDecoder().decode(read.bytes);
  if (text.trim() !== "") await collector.text(text);
}

/**
 * An SSE reply: events delivered as they come, within the stream bound and the bound of one event, until
 * the response to `expectId` arrived or the stream ends.
 */
async function readSseReply(
  body: ReadableStream<Uint8Array>,
  collector: Collector,
  bounds: ReplyLimits,
  expectId: JsonRpcId | undefined,
): Promise<void> {
  const outcome = collector.outcome;
  const stream = new BoundedBody(body, {
    maxBytes: bounds.streamBytes,
    idleMs: bounds.streamIdleMs,
    signal: bounds.signal,
  });
  const tooLargeEvent = { kind: "too-large", limitBytes: bounds.replyBytes, part: "event" } as const;
  const parser = new SseParser();
  const decoder = new TextDecoder();
  reading: for (;;) {
    const chunk = await stream.next();
    if (!chunk && stream.stop) break;
    const events = chunk
      ? parser.push(decoder.decode(chunk, { stream: true }))
      : [...parser.push(decoder.decode()), ...parser.end()];
    for (const event of events) {
      if (event.data.length > bounds.replyBytes) {
        outcome.stop = tooLargeEvent;
        break reading;
      }
      if (event.event !== "message" || isEmptyEventData(event.data)) continue;
      await collector.text(event.data);
    }
    if (!chunk) break;
    if (parser.pendingChars > bounds.replyBytes) {
      outcome.stop = tooLargeEvent;
      break;
    }
    if (expectId !== undefined && outcome.answered) break;
  }
  await stream.cancel();
  if (stream.stop) stopped(outcome, stream.stop, "stream");
  outcome.bytes = stream.bytes;
  outcome.lastEventId = parser.lastEventId;
  outcome.retryMs = parser.retryMs;
}

/**
 * Reads a reply body into messages within `limits` (bytes default to the proxy's bounds); stops early once the
 * expected response arrived on an SSE stream, and at any bound (see `stop`), cancelling the body.
 */
export async function readReply(
  response: Response,
  expectId: JsonRpcId | undefined,
  sink: MessageSink,
  limits: Partial<ReplyLimits> = {},
): Promise<ReplyOutcome> {
  const bounds: ReplyLimits = {
    replyBytes: MAX_REPLY_BYTES,
    streamBytes: MAX_STREAM_BYTES,
    ...NO_TIME_BOUNDS,
    ...limits,
  };
  const collector = new Collector(expectId, sink);
  if (!response.body) return collector.outcome;
  if (isEventStream(response.headers.get("content-type"))) {
    await readSseReply(response.body, collector, bounds, expectId);
  } else await readJsonReply(response, collector, bounds);
  return collector.outcome;
}
