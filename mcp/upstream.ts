/**
 * The HTTP side of the proxy: one Streamable HTTP exchange at a time (POST a message, read the JSON or SSE
 * reply), the headers every request carries (auth, OpenViking identity, `MCP-Protocol-Version`,
 * `Mcp-Session-Id`), same-origin-only redirects, and the session DELETE. Every exchange is bounded: in time
 * (headers, silence of the body, the whole exchange) and in bytes (see body.ts). It reports outcomes; what to
 * do about them (re-initialise, reload credentials, answer an error) is decided by the session layer.
 */

import { buildHeaders, type Identity, readPrefix, serverMessageOf } from "../openviking/client.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import { BYTE_LIMITS, type ByteLimits, ERROR_BODY_BYTES, type Timing } from "./limits.ts";
import type { JsonRpcId, JsonRpcMessage } from "./jsonrpc.ts";
import { isEventStream, type MessageSink, readReply, type ReplyOutcome } from "./reply.ts";

/** Protocol version sent before any initialize result told us better (what OpenViking's own proxy sends). */
export const DEFAULT_PROTOCOL_VERSION = "2025-06-18";

/** Where requests go and who they are from. */
export interface UpstreamTarget extends Identity {
  mcpUrl: string;
}

/** Why an exchange did not produce the response it should have. */
export type Failure =
  /** No HTTP answer: connection refused, DNS, TLS, reset. */
  | { kind: "network"; cause: string }
  /** No response headers within the time limit. */
  | { kind: "timeout"; ms: number }
  /** The reply started, then went silent for `ms` (no byte, not even an SSE keep-alive). */
  | { kind: "stalled"; ms: number }
  /** The whole exchange (headers, body, SSE reconnections) did not end within its limit. */
  | { kind: "deadline"; ms: number }
  /** The reply passed a byte bound: the JSON body or one SSE event (`limitBytes`), or the SSE stream. */
  | { kind: "too-large"; limitBytes: number; part: "reply" | "event" | "stream" }
  /** 401/403. */
  | { kind: "auth"; status: number; serverMessage: string }
  /** Another non-2xx status; `sessionId` is the session id the request carried. */
  | { kind: "http"; status: number; serverMessage: string; sessionId?: string }
  /** A redirect to another origin, not followed (credentials stay with the configured URL). */
  | { kind: "redirect"; status: number; location: string }
  /** 2xx without the response to the request. */
  | { kind: "empty"; status: number }
  /** 2xx whose body held something that is not JSON-RPC, and no response. */
  | { kind: "bad-reply"; status: number; sample: string }
  /** The body was cut after some messages arrived, before the response. */
  | { kind: "cut"; cause: string }
  /** Cancelled by the client or by shutdown. */
  | { kind: "aborted" };

/** The result of one exchange. */
export type Exchange =
  | { ok: true; status: number; sessionId?: string; reply: ReplyOutcome }
  | { ok: false; failure: Failure; delivered: number };

/** Options of one POST. */
export interface PostOptions {
  /** The id of the request being sent (undefined for notifications and responses). */
  expectId?: JsonRpcId;
  /** Receives every message of the reply. */
  sink: MessageSink;
  /** Cancels the exchange. */
  signal?: AbortSignal;
  /** Its time limits. */
  timing: Timing;
  /** Send `Mcp-Session-Id` (false for initialize). */
  withSession: boolean;
}

const MAX_REDIRECTS = 5;
/** SSE resumption: delay when the server gave none, the longest delay honoured, reconnections without progress. */
const DEFAULT_RETRY_MS = 500;
const MAX_RETRY_MS = 5_000;
const MAX_IDLE_RESUMES = 3;

/** The short cause of a fetch error, without Deno's "error sending request for url (…)" prefix or userinfo. */
export function networkCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const stripped = message.replace(/^error sending request for url \([^)]*\):\s*/i, "");
  return withoutUserinfo(stripped) || "unknown network error";
}

/** Waits `ms`; false when `signal` aborted first. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The start of a body the proxy only needs the server's words from; the rest is not read. */
function drain(response: Response, idleMs: number, signal?: AbortSignal): Promise<string> {
  return readPrefix(response, ERROR_BODY_BYTES, idleMs, signal);
}

/** The HTTP client of one upstream MCP endpoint, with its session state. */
export class Upstream {
  /** The session id the server issued ("" / undefined when it is stateless). */
  sessionId: string | undefined;
  /** The negotiated protocol version, sent as `MCP-Protocol-Version`. */
  protocolVersion = DEFAULT_PROTOCOL_VERSION;

  constructor(
    public target: UpstreamTarget,
    private readonly doFetch: typeof fetch = fetch,
    private readonly bytes: ByteLimits = BYTE_LIMITS,
  ) {}

  /** The headers of a request to the MCP endpoint. */
  headers(withSession: boolean): Headers {
    const headers = buildHeaders(this.target, undefined, true);
    headers.set("Accept", "application/json, text/event-stream");
    headers.set("MCP-Protocol-Version", this.protocolVersion);
    if (withSession && this.sessionId) headers.set("Mcp-Session-Id", this.sessionId);
    return headers;
  }

  /**
   * One HTTP request to the MCP endpoint, following redirects only within its origin (credentials never leave
   * it); `timing.headersMs` bounds the wait for response headers. Never throws.
   */
  private async fetchSameOrigin(
    method: "POST" | "GET",
    headers: Headers,
    body: string | undefined,
    signal: AbortSignal | undefined,
    timing: Timing,
  ): Promise<{ response: Response } | { failure: Failure }> {
    const headerTimeoutMs = timing.headersMs;
    if (signal?.aborted) return { failure: { kind: "aborted" } };
    // The timeout covers the wait for headers; the caller's signal also covers reading the body.
    const controller = new AbortController();
    const fetchSignal = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, headerTimeoutMs);
    try {
      const origin = new URL(this.target.mcpUrl).origin;
      let url = this.target.mcpUrl;
      for (let hop = 0;; hop++) {
        let response: Response;
        try {
          response = await this.doFetch(url, {
            method,
            headers,
            body,
            redirect: "manual",
            signal: fetchSignal,
          });
        } catch (error) {
          if (signal?.aborted) return { failure: { kind: "aborted" } };
          if (timedOut) return { failure: { kind: "timeout", ms: headerTimeoutMs } };
          return { failure: { kind: "network", cause: networkCause(error) } };
        }
        const location = response.headers.get("location");
        if (response.status < 300 || response.status >= 400 || !location) return { response };
        await drain(response, timing.bodyIdleMs, signal);
        const next = new URL(location, url);
        if (next.origin !== origin) {
          return {
            failure: {
              kind: "redirect",
              status: response.status,
              location: withoutUserinfo(next.toString()),
            },
          };
        }
        if (hop >= MAX_REDIRECTS) {
          return { failure: { kind: "http", status: response.status, serverMessage: "too many redirects" } };
        }
        url = next.toString();
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sends one request, notification or response and streams its reply into `options.sink`, within
   * `options.timing` and the byte bounds. Never throws.
   */
  async post(message: JsonRpcMessage, options: PostOptions): Promise<Exchange> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), options.timing.totalMs);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline.signal]) : deadline.signal;
    const progress = { headers: false };
    try {
      const exchange = await this.exchange(message, { ...options, signal }, progress);
      if (exchange.ok || !deadline.signal.aborted || options.signal?.aborted) return exchange;
      // The deadline stopped it, whatever the failure looked like from inside.
      const ms = options.timing.totalMs;
      return {
        ok: false,
        failure: progress.headers ? { kind: "deadline", ms } : { kind: "timeout", ms },
        delivered: exchange.delivered,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  private async exchange(
    message: JsonRpcMessage,
    options: PostOptions,
    progress: { headers: boolean },
  ): Promise<Exchange> {
    const sentSession = options.withSession ? this.sessionId : undefined;
    const fail = (failure: Failure, delivered = 0): Exchange => ({ ok: false, failure, delivered });
    const { signal, timing } = options;
    const got = await this.fetchSameOrigin(
      "POST",
      this.headers(options.withSession),
      JSON.stringify(message),
      signal,
      timing,
    );
    if ("failure" in got) return fail(got.failure);
    progress.headers = true;
    const response = got.response;
    const status = response.status;
    if (status === 401 || status === 403) {
      const said = await drain(response, timing.bodyIdleMs, signal);
      return fail({ kind: "auth", status, serverMessage: serverMessageOf(said) });
    }
    if (status < 200 || status >= 300) {
      const said = await drain(response, timing.bodyIdleMs, signal);
      return fail({ kind: "http", status, serverMessage: serverMessageOf(said), sessionId: sentSession });
    }
    const sessionId = response.headers.get("mcp-session-id") ?? undefined;
    let reply = await readReply(response, options.expectId, options.sink, this.replyLimits(options, 0));
    if (options.expectId !== undefined && !reply.answered) reply = await this.resume(reply, options);
    if (options.expectId !== undefined && !reply.answered) {
      if (signal?.aborted) return fail({ kind: "aborted" }, reply.delivered);
      const stop = reply.stop;
      if (stop?.kind === "too-large") {
        return fail({ kind: "too-large", limitBytes: stop.limitBytes, part: stop.part }, reply.delivered);
      }
      if (stop?.kind === "stalled") return fail({ kind: "stalled", ms: stop.ms }, reply.delivered);
      if (reply.cut !== undefined) {
        return fail({ kind: "cut", cause: networkCause(reply.cut) }, reply.delivered);
      }
      if (reply.invalid > 0) {
        return fail({ kind: "bad-reply", status, sample: reply.invalidSample ?? "" }, reply.delivered);
      }
      return fail({ kind: "empty", status }, reply.delivered);
    }
    return { ok: true, status, sessionId, reply };
  }

  /** The bounds of reading one reply of an exchange whose SSE streams already used `streamBytesUsed`. */
  private replyLimits(options: PostOptions, streamBytesUsed: number) {
    return {
      replyBytes: this.bytes.replyBytes,
      streamBytes: Math.max(0, this.bytes.streamBytes - streamBytesUsed),
      bodyIdleMs: options.timing.bodyIdleMs,
      streamIdleMs: options.timing.streamIdleMs,
      signal: options.signal,
    };
  }

  /**
   * An SSE reply that ended before the response but carried event ids (a 2025-11-25 server polling, or a cut
   * connection): reconnect with GET + `Last-Event-ID` after the server's `retry` delay, as the spec asks, for
   * as long as each reconnection makes progress and no bound stopped the stream. Returns the combined
   * outcome; its bytes count against one stream bound.
   */
  private async resume(first: ReplyOutcome, options: PostOptions): Promise<ReplyOutcome> {
    let reply = first;
    let idle = 0;
    while (
      !reply.answered && !reply.stop && reply.lastEventId && !options.signal?.aborted &&
      idle < MAX_IDLE_RESUMES
    ) {
      const wait = Math.min(reply.retryMs ?? DEFAULT_RETRY_MS, MAX_RETRY_MS);
      if (!await sleep(wait, options.signal)) break;
      const headers = this.headers(true);
      headers.delete("Content-Type");
      headers.set("Accept", "text/event-stream");
      headers.set("Last-Event-ID", reply.lastEventId);
      const got = await this.fetchSameOrigin("GET", headers, undefined, options.signal, options.timing);
      if ("failure" in got) break;
      if (!got.response.ok || !isEventStream(got.response.headers.get("content-type"))) {
        await drain(got.response, options.timing.bodyIdleMs, options.signal);
        break;
      }
      const next = await readReply(
        got.response,
        options.expectId,
        options.sink,
        this.replyLimits(options, reply.bytes),
      );
      idle = next.delivered > 0 ? 0 : idle + 1;
      reply = {
        ...next,
        delivered: reply.delivered + next.delivered,
        bytes: reply.bytes + next.bytes,
        lastEventId: next.lastEventId || reply.lastEventId,
        retryMs: next.retryMs ?? reply.retryMs,
      };
    }
    return reply;
  }

  /** Ends the server-side session (DELETE), waiting at most `timeoutMs`; never throws. */
  async deleteSession(timeoutMs: number): Promise<number | undefined> {
    if (!this.sessionId) return undefined;
    const headers = this.headers(true);
    headers.delete("Content-Type");
    try {
      const signal = AbortSignal.timeout(timeoutMs);
      const response = await this.doFetch(this.target.mcpUrl, {
        method: "DELETE",
        headers,
        redirect: "manual",
        signal,
      });
      await drain(response, timeoutMs, signal);
      return response.status;
    } catch {
      return undefined;
    } finally {
      this.sessionId = undefined;
    }
  }
}
