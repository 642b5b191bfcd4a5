/**
 * The MCP proxy's bounds (see README "Tools"): what it reads of one upstream reply, in bytes, and how long an
 * exchange may take, by method (`exchangeTiming`, the one place they are decided).
 */

/** The most the proxy reads of one reply: a JSON body, or one SSE event. */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;
/** The most it reads of one SSE stream as a whole (the events before the response, e.g. progress). */
export const MAX_STREAM_BYTES = 4 * MAX_REPLY_BYTES;
/** The most it reads of a body it only needs the start of (error pages, redirects): the server's words. */
export const ERROR_BODY_BYTES = 64 * 1024;

/** Byte bounds of the replies read (see runtime/body.ts). */
export interface ByteLimits {
  /** A JSON body, or one SSE event. */
  replyBytes: number;
  /** An SSE stream as a whole, reconnections included. */
  streamBytes: number;
}

/** The proxy's byte bounds. */
export const BYTE_LIMITS: Readonly<ByteLimits> = {
  replyBytes: MAX_REPLY_BYTES,
  streamBytes: MAX_STREAM_BYTES,
};

/** The time limits of one exchange (ms). */
export interface Timing {
  /** For the response headers to arrive. */
  headersMs: number;
  /** How long a JSON (or error) body may go without a byte. */
  bodyIdleMs: number;
  /** How long an SSE stream may go without a byte; keep-alive comments count. */
  streamIdleMs: number;
  /** For the whole exchange: headers, body, and SSE reconnections. */
  totalMs: number;
}

/** The same limit for every part of an exchange (short exchanges: startup, notifications). */
export function uniformTiming(ms: number): Timing {
  return { headersMs: ms, bodyIdleMs: ms, streamIdleMs: ms, totalMs: ms };
}

/** Limit for `initialize` / `tools/list`, as a whole, so a dead host still leaves Kimi's 30 s startup budget. */
const STARTUP_TIMEOUT_CAP_MS = 10_000;
/**
 * Limit for a tool call as a whole (headers, body, SSE reconnections), and for any request: long tools are
 * bounded by the client's own timeout (Kimi's default is 60 s), this only ends what nobody waits for anymore.
 */
const TOOL_CALL_TIMEOUT_MS = 600_000;
/**
 * How long an SSE reply may go without a byte. OpenViking's server sends a keep-alive comment every 15 s, so
 * this is eight missed in a row; a server without keep-alives must send progress at least this often.
 */
const STREAM_IDLE_MS = 120_000;

/** The time bounds the proxy applies (ms); tests shorten them. */
export interface ProxyLimits {
  startupMs: number;
  toolCallMs: number;
  streamIdleMs: number;
}

/** The production bounds. */
export const PROXY_LIMITS: Readonly<ProxyLimits> = {
  startupMs: STARTUP_TIMEOUT_CAP_MS,
  toolCallMs: TOOL_CALL_TIMEOUT_MS,
  streamIdleMs: STREAM_IDLE_MS,
};

/** Methods Kimi needs at session start: bounded as a whole by the startup limit. */
const STARTUP_METHODS = new Set(["initialize", "tools/list"]);

/**
 * The time limits of one exchange, the one place they are decided (`timeoutMs` = OPENVIKING_TIMEOUT_MS;
 * `method` undefined = a notification or a response sent upstream):
 * - `initialize`, `tools/list`: everything within min(timeoutMs, startup limit);
 * - notifications and responses: everything within timeoutMs (their reply is an empty 202);
 * - other requests: headers within timeoutMs (a tool call's within the tool-call limit), a JSON body silent
 *   at most timeoutMs, an SSE stream silent at most max(timeoutMs, stream idle limit) with keep-alive
 *   comments resetting it, and the whole exchange within max(timeoutMs, tool-call limit).
 */
export function exchangeTiming(method: string | undefined, timeoutMs: number, limits: ProxyLimits): Timing {
  if (method === undefined) return uniformTiming(timeoutMs);
  if (STARTUP_METHODS.has(method)) return uniformTiming(Math.min(timeoutMs, limits.startupMs));
  const longest = Math.max(timeoutMs, limits.toolCallMs);
  return {
    headersMs: method === "tools/call" ? longest : timeoutMs,
    bodyIdleMs: timeoutMs,
    streamIdleMs: Math.max(timeoutMs, limits.streamIdleMs),
    totalMs: longest,
  };
}
