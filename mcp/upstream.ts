/**
 * The HTTP side of the proxy: one Streamable HTTP exchange at a time (POST a message, read the JSON or SSE
 * reply), the headers every request carries (auth, OpenViking identity, `MCP-Protocol-Version`,
 * `Mcp-Session-Id`), same-origin-only redirects, and the session DELETE. It reports outcomes; what to do
 * about them (re-initialise, reload credentials, answer an error) is decided by the session layer.
 */

import { buildHeaders } from "../runtime/http.ts";
import type { JsonRpcId, JsonRpcMessage } from "./jsonrpc.ts";
import { type MessageSink, readReply, type ReplyOutcome } from "./reply.ts";

/** Protocol version sent before any initialize result told us better (what OpenViking's own proxy sends). */
export const DEFAULT_PROTOCOL_VERSION = "2025-06-18";

/** Where requests go and who they are from. */
export interface UpstreamTarget {
  mcpUrl: string;
  apiKey: string;
  account: string;
  user: string;
  /** `X-OpenViking-Actor-Peer` ("" = none). */
  peerId: string;
  userAgent: string;
}

/** Why an exchange did not produce the response it should have. */
export type Failure =
  /** No HTTP answer: connection refused, DNS, TLS, reset. */
  | { kind: "network"; cause: string }
  /** No response headers within the time limit. */
  | { kind: "timeout"; ms: number }
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
  /** Limit for the response headers to arrive (ms). */
  headerTimeoutMs: number;
  /** Send `Mcp-Session-Id` (false for initialize). */
  withSession: boolean;
}

const MAX_REDIRECTS = 5;
const MESSAGE_CHARS = 300;

/** A URL with any `user:password@` removed, for messages and logs. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.toString();
  } catch {
    return url.replace(/\/\/[^/@\s]*@/, "//");
  }
}

/** The short cause of a fetch error, without Deno's "error sending request for url (…)" prefix. */
export function networkCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const stripped = message.replace(/^error sending request for url \([^)]*\):\s*/i, "");
  return stripped.replace(/\/\/[^/@\s]*@/g, "//") || "unknown network error";
}

/** The server's own words from an error body (JSON-RPC error, OpenViking envelope, or plain text). */
export function serverMessageOf(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return "";
  try {
    const body = JSON.parse(trimmed) as Record<string, unknown>;
    const error = body?.error;
    if (error && typeof error === "object") {
      const message = (error as Record<string, unknown>).message;
      if (typeof message === "string") return message.slice(0, MESSAGE_CHARS);
    }
    if (typeof error === "string") return error.slice(0, MESSAGE_CHARS);
    if (typeof body?.detail === "string") return body.detail.slice(0, MESSAGE_CHARS);
    if (typeof body?.message === "string") return body.message.slice(0, MESSAGE_CHARS);
  } catch {
    // plain text
  }
  return trimmed.slice(0, MESSAGE_CHARS);
}

async function drain(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch {
    return "";
  }
}

/** The HTTP client of one upstream MCP endpoint, with its session state. */
export class Upstream {
  /** The session id the server issued ("" / undefined when it is stateless). */
  sessionId: string | undefined;
  /** The negotiated protocol version, sent as `MCP-Protocol-Version`. */
  protocolVersion = DEFAULT_PROTOCOL_VERSION;

  constructor(public target: UpstreamTarget, private readonly doFetch: typeof fetch = fetch) {}

  /** The headers of a request to the MCP endpoint. */
  headers(withSession: boolean): Headers {
    const t = this.target;
    const headers = buildHeaders(
      {
        baseUrl: t.mcpUrl,
        apiKey: t.apiKey,
        account: t.account,
        user: t.user,
        peerId: t.peerId,
        userAgent: t.userAgent,
        timeoutMs: 0,
      },
      undefined,
      true,
    );
    headers.set("Accept", "application/json, text/event-stream");
    headers.set("MCP-Protocol-Version", this.protocolVersion);
    if (withSession && this.sessionId) headers.set("Mcp-Session-Id", this.sessionId);
    return headers;
  }

  /** Sends one request, notification or response and streams its reply into `options.sink`. */
  async post(message: JsonRpcMessage, options: PostOptions): Promise<Exchange> {
    const sentSession = options.withSession ? this.sessionId : undefined;
    const headers = this.headers(options.withSession);
    const body = JSON.stringify(message);
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    if (options.signal?.aborted) return { ok: false, failure: { kind: "aborted" }, delivered: 0 };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, options.headerTimeoutMs);
    const fail = (failure: Failure, delivered = 0): Exchange => ({ ok: false, failure, delivered });
    try {
      let response: Response | undefined;
      const origin = new URL(this.target.mcpUrl).origin;
      let url = this.target.mcpUrl;
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        try {
          response = await this.doFetch(url, {
            method: "POST",
            headers,
            body,
            redirect: "manual",
            signal: controller.signal,
          });
        } catch (error) {
          if (options.signal?.aborted) return fail({ kind: "aborted" });
          if (timedOut) return fail({ kind: "timeout", ms: options.headerTimeoutMs });
          return fail({ kind: "network", cause: networkCause(error) });
        }
        const location = response.headers.get("location");
        if (response.status < 300 || response.status >= 400 || !location) break;
        await drain(response);
        const next = new URL(location, url);
        if (next.origin !== origin) {
          return fail({ kind: "redirect", status: response.status, location: displayUrl(next.toString()) });
        }
        if (hop === MAX_REDIRECTS) {
          return fail({ kind: "http", status: response.status, serverMessage: "too many redirects" });
        }
        url = next.toString();
      }
      clearTimeout(timer);
      if (!response) return fail({ kind: "network", cause: "no response" });
      const status = response.status;
      if (status === 401 || status === 403) {
        return fail({ kind: "auth", status, serverMessage: serverMessageOf(await drain(response)) });
      }
      if (status < 200 || status >= 300) {
        return fail({
          kind: "http",
          status,
          serverMessage: serverMessageOf(await drain(response)),
          sessionId: sentSession,
        });
      }
      const reply = await readReply(response, options.expectId, options.sink);
      const sessionId = response.headers.get("mcp-session-id") ?? undefined;
      if (options.expectId !== undefined && !reply.answered) {
        if (options.signal?.aborted) return fail({ kind: "aborted" }, reply.delivered);
        if (reply.cut !== undefined) {
          return fail({ kind: "cut", cause: networkCause(reply.cut) }, reply.delivered);
        }
        if (reply.invalid > 0) {
          return fail({ kind: "bad-reply", status, sample: reply.invalidSample ?? "" }, reply.delivered);
        }
        return fail({ kind: "empty", status }, reply.delivered);
      }
      return { ok: true, status, sessionId, reply };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Ends the server-side session (DELETE), waiting at most `timeoutMs`; never throws. */
  async deleteSession(timeoutMs: number): Promise<number | undefined> {
    if (!this.sessionId) return undefined;
    const headers = this.headers(true);
    headers.delete("Content-Type");
    try {
      const response = await this.doFetch(this.target.mcpUrl, {
        method: "DELETE",
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await drain(response);
      return response.status;
    } catch {
      return undefined;
    } finally {
      this.sessionId = undefined;
    }
  }
}
