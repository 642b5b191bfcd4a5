/**
 * The JSON-RPC errors the proxy answers when OpenViking cannot: each says what happened, where the setting
 * involved came from, and what to do. API keys never appear (every text is scrubbed). Pure.
 */

// @ts-types="@modelcontextprotocol/sdk/types"
import {
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { isRecord } from "../lib/parsed.ts";
import { scrub, withoutUserinfo } from "../lib/scrub.ts";

/** Error codes the proxy answers with. */
export const ErrorCode = {
  /** OpenViking refused the credentials (HTTP 401/403). */
  Authentication: -32001,
  /** OpenViking answered with an HTTP error status, a refused redirect, or a reply that is not JSON-RPC. */
  UpstreamHttp: -32002,
  /** OpenViking accepted the request but sent no response to it. */
  EmptyReply: -32003,
  /** OpenViking could not be reached (connection refused, DNS, TLS, timeout, a reply that went silent). */
  Network: -32004,
  /** OpenViking's reply was larger than the proxy reads. */
  ReplyTooLarge: -32005,
  /** JSON-RPC's: the client's line is not JSON. */
  ParseError: -32700,
  /** JSON-RPC's: the client's message is not a valid request (or its id is in use). */
  InvalidRequest: -32600,
} as const;

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
  /** The body was cut before the response. */
  | { kind: "cut"; cause: string }
  /** Cancelled by the client or by shutdown. */
  | { kind: "aborted" };

/** An error response. */
export function errorResponse(
  id: RequestId,
  code: number,
  message: string,
  data?: unknown,
): JSONRPCErrorResponse {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** An error answering a client line that is not a message: its id is null when none can be read. */
export interface LineRefusal {
  jsonrpc: "2.0";
  id: RequestId | null;
  error: { code: number; message: string };
}

const refusal = (id: RequestId | null, code: number, message: string): LineRefusal => ({
  jsonrpc: "2.0",
  id,
  error: { code, message },
});

/**
 * One client line, parsed once: its JSON-RPC message, or the errors answering it (none for a blank line):
 * -32700 with id null when it is not JSON, else -32600 for each id that can be read (of a batch, of each
 * element), or once with id null.
 */
export function parseLine(line: string): JSONRPCMessage | LineRefusal[] {
  if (line.trim() === "") return [];
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return [
      refusal(
        null,
        ErrorCode.ParseError,
        "Parse error: the line is not JSON; send one JSON-RPC message per line.",
      ),
    ];
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = Array.isArray(value)
    ? "Invalid request: batches are not supported; send one JSON-RPC message per line."
    : "Invalid request: not a JSON-RPC 2.0 request, notification or response (an id is a string or a number).";
  const ids = (Array.isArray(value) ? value : [value]).map((m) => isRecord(m) ? m.id : undefined)
    .filter((id): id is RequestId => typeof id === "string" || typeof id === "number");
  return (ids.length ? ids : [null]).map((id) => refusal(id, ErrorCode.InvalidRequest, message));
}

/** The error answering a line longer than `maxChars`, which is not read to its end. */
export function lineTooLong(maxChars: number): LineRefusal {
  const most = describeBytes(maxChars).replace("bytes", "characters");
  return refusal(
    null,
    ErrorCode.InvalidRequest,
    `Invalid request: the line is longer than ${most}, the most the proxy reads of one message.`,
  );
}

/** What an error message may say about the configuration (never the key itself). */
export interface ErrorContext {
  mcpUrl: string;
  /** Where the URL came from: "env", "ovcli.conf", "ov.conf" or "default". */
  credentialSource: string;
  /** Where the API key came from: "env OPENVIKING_API_KEY", "ovcli.conf", "ov.conf", "none", … */
  apiKeySource: string;
  cliConfigPath: string;
  ovConfigPath: string;
  account: string;
  user: string;
  /** Values that must never appear in a message. */
  secrets: readonly string[];
}

/** Where the URL was configured, in words. */
function urlSource(ctx: ErrorContext): string {
  switch (ctx.credentialSource) {
    case "env":
      return "the environment (OPENVIKING_URL / OPENVIKING_MCP_URL)";
    case "ovcli.conf":
      return `"url" in ${ctx.cliConfigPath}`;
    case "ov.conf":
      return `the server section of ${ctx.ovConfigPath}`;
    default:
      return `the default, as nothing is configured (set "url" in ${ctx.cliConfigPath} or OPENVIKING_URL)`;
  }
}

/** Where the API key came from and how to fix it, in words. */
function describeKeyFix(ctx: ErrorContext): { source: string; fix: string } {
  const reread = `the proxy re-reads ${ctx.cliConfigPath} on the next call, no restart needed`;
  const src = ctx.apiKeySource;
  if (src === "none") {
    return {
      source: "no API key is configured",
      fix: `Add "api_key" to ${ctx.cliConfigPath} (or set OPENVIKING_API_KEY for the MCP server); ${reread}.`,
    };
  }
  if (src.startsWith("env ")) {
    const name = src.slice(4);
    return {
      source: `the API key comes from the environment variable ${name}`,
      fix:
        `Fix ${name} where the MCP server is configured (Kimi's mcp.json or the plugin settings) and start ` +
        `a new Kimi session, or remove it and put the key in ${ctx.cliConfigPath} as "api_key".`,
    };
  }
  if (src === "ov.conf") {
    return {
      source: `the API key comes from ${ctx.ovConfigPath}`,
      fix: `Put a valid "api_key" in ${ctx.cliConfigPath} (it wins over ${ctx.ovConfigPath}); ${reread}.`,
    };
  }
  return {
    source: `the API key comes from ${ctx.cliConfigPath}`,
    fix: `Put a valid "api_key" in ${ctx.cliConfigPath}; ${reread}.`,
  };
}

/** The error answering an authentication failure (HTTP 401/403). */
export function authError(
  id: RequestId,
  status: number,
  serverMessage: string,
  ctx: ErrorContext,
): JSONRPCErrorResponse {
  const { source, fix } = describeKeyFix(ctx);
  const said = serverMessage ? `: ${serverMessage}` : "";
  const message = status === 403
    ? `OpenViking denied access (HTTP 403${said}) for account "${ctx.account || "(none)"}", user "${
      ctx.user || "(none)"
    }"; ${source}. Check that the key belongs to that account and user ("account"/"user" in ` +
      `${ctx.cliConfigPath} or OPENVIKING_ACCOUNT/OPENVIKING_USER). ${fix}`
    : `OpenViking MCP authentication failed (HTTP ${status}${said}); ${source}. ${fix}`;
  const path = ctx.apiKeySource === "ov.conf"
    ? ctx.ovConfigPath
    : ctx.apiKeySource.startsWith("env ")
    ? ""
    : ctx.cliConfigPath;
  const data = {
    status,
    credentialSource: ctx.apiKeySource,
    credentialPath: path,
    url: withoutUserinfo(ctx.mcpUrl),
    serverMessage,
  };
  return scrub(
    errorResponse(id, ErrorCode.Authentication, message, data),
    ctx.secrets,
  ) as JSONRPCErrorResponse;
}

const AGAIN = "The tools work again as soon as the server answers; no restart needed.";
const RETRY = "Retry the call; if it keeps happening, check the server's log.";

/** The code, words and data of the error answering `failure` (auth and cancel aside). */
function parts(failure: Failure, url: string, ctx: ErrorContext): [number, string, Record<string, unknown>] {
  const { Network, UpstreamHttp } = ErrorCode;
  switch (failure.kind) {
    case "network":
      return [
        Network,
        `OpenViking MCP request failed: cannot reach ${url} (${failure.cause}). Check that the OpenViking ` +
        `server is running (openviking-server) and that the URL is right (it comes from ${
          urlSource(ctx)
        }). ${AGAIN}`,
        { url, cause: failure.cause, urlSource: ctx.credentialSource },
      ];
    case "timeout":
      return [
        Network,
        `OpenViking at ${url} did not answer within ${
          describeMs(failure.ms)
        }. Check that the server is running ` +
        `and not overloaded, or raise OPENVIKING_TIMEOUT_MS. ${AGAIN}`,
        { url, timeoutMs: failure.ms, urlSource: ctx.credentialSource },
      ];
    case "stalled":
      return [
        Network,
        `OpenViking at ${url} started its reply, then sent nothing for ${
          describeMs(failure.ms)
        }, so the proxy ` +
        `gave up on it. Retry the call; if it keeps happening, check the server's log, or raise ` +
        `OPENVIKING_TIMEOUT_MS.`,
        { url, idleMs: failure.ms },
      ];
    case "deadline":
      return [
        Network,
        `OpenViking at ${url} did not finish its reply within ${
          describeMs(failure.ms)
        }, the proxy's limit for ` +
        `one request. Ask for less at once (fewer results, a narrower URI) or retry; if it keeps happening, ` +
        `check the server's log.`,
        { url, limitMs: failure.ms },
      ];
    case "cut":
      return [
        Network,
        `The connection to OpenViking at ${url} broke before the reply was complete (${failure.cause}). ${RETRY}`,
        { url, cause: failure.cause },
      ];
    case "too-large": {
      const limit = describeBytes(failure.limitBytes);
      const what = failure.part === "stream"
        ? `OpenViking's reply stream passed ${limit} before the response arrived`
        : `OpenViking's reply was larger than ${limit}, the most the proxy reads of one reply`;
      return [
        ErrorCode.ReplyTooLarge,
        `${what}; the proxy stopped reading it and dropped it (the session goes on). Ask for less: fewer ` +
        `results (a lower limit or node_limit), a narrower URI, or part of a file (offset and limit).`,
        { url, limitBytes: failure.limitBytes, part: failure.part },
      ];
    }
    case "redirect":
      return [
        UpstreamHttp,
        `OpenViking at ${url} redirected to ${failure.location}, another origin; the proxy sends credentials ` +
        `only to the configured URL. If that is the right server, set it as the URL (${urlSource(ctx)}).`,
        { status: failure.status, url, location: failure.location },
      ];
    case "http": {
      const said = failure.serverMessage ? `: ${failure.serverMessage}` : "";
      const hint = failure.status === 404 || failure.status === 405
        ? ` There is no MCP endpoint at ${url}: upgrade the OpenViking server (older ones have no native ` +
          `/mcp), or set OPENVIKING_MCP_URL.`
        : failure.status >= 500
        ? " The server failed; check its log, then retry."
        : "";
      return [
        UpstreamHttp,
        `OpenViking MCP upstream returned HTTP ${failure.status}${said}.${hint}`,
        { status: failure.status, url, serverMessage: failure.serverMessage },
      ];
    }
    case "empty":
      return [
        ErrorCode.EmptyReply,
        `OpenViking accepted the request (HTTP ${failure.status}) but sent no response to it. ${RETRY}`,
        { status: failure.status, url },
      ];
    default:
      return [
        UpstreamHttp,
        `OpenViking sent a reply that is not JSON-RPC (HTTP ${"status" in failure ? failure.status : 0}). ` +
        `Check that ${url} is an MCP endpoint.`,
        {
          status: "status" in failure ? failure.status : 0,
          url,
          sample: "sample" in failure ? failure.sample : "",
        },
      ];
  }
}

/** The error answering a failed exchange; API keys and URL user info never appear in it. */
export function failureError(id: RequestId, failure: Failure, ctx: ErrorContext): JSONRPCErrorResponse {
  if (failure.kind === "auth") return authError(id, failure.status, failure.serverMessage, ctx);
  if (failure.kind === "aborted") return errorResponse(id, ErrorCode.Network, "The request was cancelled.");
  const [code, message, data] = parts(failure, withoutUserinfo(ctx.mcpUrl), ctx);
  return scrub(errorResponse(id, code, message, data), ctx.secrets) as JSONRPCErrorResponse;
}

/** A byte count in words: "16 MiB", "64 KiB". */
function describeBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${+(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  return bytes >= 1024 ? `${+(bytes / 1024).toFixed(1)} KiB` : `${bytes} bytes`;
}

/** A duration in words: "15 s", "500 ms". */
function describeMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
}
