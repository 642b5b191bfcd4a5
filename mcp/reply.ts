/**
 * Turns one HTTP reply of a Streamable HTTP server into JSON-RPC messages: a JSON body (one message or an
 * array) or an SSE stream read as it arrives, so messages the server sends before its response (progress,
 * logging, its own requests) reach the client at once. Reads the body only; no decisions about status codes.
 */

import { type Classified, classifyUpstream, type JsonRpcId } from "./jsonrpc.ts";
import { isEmptyEventData, SseParser } from "./sse.ts";

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
  readonly outcome: ReplyOutcome = { delivered: 0, answered: false, invalid: 0, lastEventId: "" };
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

/** Reads a reply body into messages; stops early once the expected response arrived on an SSE stream. */
export async function readReply(
  response: Response,
  expectId: JsonRpcId | undefined,
  sink: MessageSink,
): Promise<ReplyOutcome> {
  const collector = new Collector(expectId, sink);
  const outcome = collector.outcome;
  if (!response.body) return outcome;
  if (!isEventStream(response.headers.get("content-type"))) {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      outcome.cut = error;
      return outcome;
    }
    if (text.trim() !== "") await collector.text(text);
    return outcome;
  }
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      const events = done ? [...parser.push(decoder.decode()), ...parser.end()] : parser.push(
        decoder.decode(value, { stream: true }),
      );
      for (const event of events) {
        if (event.event !== "message" || isEmptyEventData(event.data)) continue;
        await collector.text(event.data);
      }
      if (done) break;
      if (expectId !== undefined && outcome.answered) {
        await reader.cancel().catch(() => {});
        break;
      }
    }
  } catch (error) {
    outcome.cut = error;
    await reader.cancel().catch(() => {});
  } finally {
    reader.releaseLock();
  }
  outcome.lastEventId = parser.lastEventId;
  outcome.retryMs = parser.retryMs;
  return outcome;
}
