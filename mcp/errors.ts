/** The JSON-RPC errors the proxy answers when OpenViking cannot: what happened and what to do, scrubbed. Pure. */

// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCErrorResponse, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { Config } from "../openviking/config.ts";
import { scrub, withoutUserinfo } from "../lib/scrub.ts";

/** The error codes the proxy answers with (JSON-RPC's server-error range). */
const [AUTH, HTTP, NETWORK] = [-32001, -32002, -32004];
const CODES = {
  http: HTTP,
  redirect: HTTP,
  "bad-reply": HTTP,
  empty: -32003,
  "too-large": -32005,
  "too-deep": -32005,
};

/** Why an exchange did not produce the response it should have. */
export type Failure =
  | { kind: "network"; cause: string } // no HTTP answer: refused, DNS, TLS, reset
  | { kind: "timeout"; ms: number } // no response headers in time
  | { kind: "stalled"; ms: number } // the reply started, then not a byte (not even a keep-alive) for `ms`
  | { kind: "deadline"; ms: number } // headers, body and SSE reconnections did not end within their limit
  | { kind: "too-large"; limitBytes: number; part: "reply" | "event" | "stream" }
  | { kind: "too-deep"; levels: number } // arrays and objects nested deeper than the proxy walks
  | { kind: "auth"; status: number; serverMessage: string }
  | { kind: "http"; status: number; serverMessage: string }
  | { kind: "redirect"; status: number; location: string } // to another origin, not followed
  | { kind: "empty"; status: number } // 2xx without the response
  | { kind: "bad-reply"; status: number; sample: string } // 2xx holding no JSON-RPC
  | { kind: "cut"; cause: string } // the body broke before the response
  | { kind: "aborted" }; // cancelled by the client or by shutdown

/** An error response, the URL in its data, API keys and URL user info scrubbed. */
function reply(id: RequestId, code: number, message: string, data: Data, ctx: ErrorContext) {
  const error = { code, message, data: { ...data, url: withoutUserinfo(ctx.mcpUrl) } };
  return scrub({ jsonrpc: "2.0", id, error }, ctx.secrets) as JSONRPCErrorResponse;
}

type Data = Record<string, unknown>;

/** What an error message may say about the configuration, and the values (the key) it must never show. */
export type ErrorContext =
  & Pick<
    Config,
    "mcpUrl" | "credentialSource" | "apiKeySource" | "cliConfigPath" | "ovConfigPath" | "account" | "user"
  >
  & { secrets: readonly string[] };

/** Where the URL was configured, in words. */
function urlSource({ credentialSource: src, cliConfigPath: cli, ovConfigPath: ov }: ErrorContext): string {
  if (src === "env") return "the environment (OPENVIKING_URL / OPENVIKING_MCP_URL)";
  if (src === "ovcli.conf") return `"url" in ${cli}`;
  if (src === "ov.conf") return `the server section of ${ov}`;
  return `the default, as nothing is configured (set "url" in ${cli} or OPENVIKING_URL)`;
}

/** Where the API key came from and how to fix it, in words. */
function describeKeyFix({ apiKeySource: src, cliConfigPath: cli, ovConfigPath: ov }: ErrorContext) {
  const reread = `the proxy re-reads ${cli} on the next call, no restart needed`;
  if (src === "none") {
    const fix = `Add "api_key" to ${cli} (or set OPENVIKING_API_KEY for the MCP server); ${reread}.`;
    return { source: "no API key is configured", fix };
  }
  if (src.startsWith("env ")) {
    const name = src.slice(4);
    const fix =
      `Fix ${name} where the MCP server is configured (Kimi's mcp.json or the plugin settings) and ` +
      `start a new Kimi session, or remove it and put the key in ${cli} as "api_key".`;
    return { source: `the API key comes from the environment variable ${name}`, fix };
  }
  if (src === "ov.conf") {
    const fix = `Put a valid "api_key" in ${cli} (it wins over ${ov}); ${reread}.`;
    return { source: `the API key comes from ${ov}`, fix };
  }
  return { source: `the API key comes from ${cli}`, fix: `Put a valid "api_key" in ${cli}; ${reread}.` };
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
  const [account, user] = [ctx.account || "(none)", ctx.user || "(none)"];
  const message = status === 403
    ? `OpenViking denied access (HTTP 403${said}) for account "${account}", user "${user}"; ${source}. ` +
      `Check that the key belongs to that account and user ("account"/"user" in ${ctx.cliConfigPath} or ` +
      `OPENVIKING_ACCOUNT/OPENVIKING_USER). ${fix}`
    : `OpenViking MCP authentication failed (HTTP ${status}${said}); ${source}. ${fix}`;
  const src = ctx.apiKeySource;
  const fromFile = src === "ov.conf" ? ctx.ovConfigPath : ctx.cliConfigPath;
  const credentialPath = src.startsWith("env ") ? "" : fromFile;
  return reply(id, AUTH, message, { status, credentialSource: src, credentialPath, serverMessage }, ctx);
}

const AGAIN = "The tools work again as soon as the server answers; no restart needed.";
const RETRY = "Retry the call; if it keeps happening, check the server's log.";

/** The words and data of the error answering `failure` (auth aside). */
function parts(f: Exclude<Failure, { kind: "auth" }>, url: string, ctx: ErrorContext): [string, Data] {
  const ms = "ms" in f ? describeMs(f.ms) : "";
  switch (f.kind) {
    case "network":
      return [
        `OpenViking MCP request failed: cannot reach ${url} (${f.cause}). Check that the OpenViking server is ` +
        `running (openviking-server) and that the URL is right (it comes from ${urlSource(ctx)}). ${AGAIN}`,
        { cause: f.cause, urlSource: ctx.credentialSource },
      ];
    case "timeout":
      return [
        `OpenViking at ${url} did not answer within ${ms}. Check that the server is running and not ` +
        `overloaded, or raise OPENVIKING_TIMEOUT_MS. ${AGAIN}`,
        { timeoutMs: f.ms, urlSource: ctx.credentialSource },
      ];
    case "stalled":
      return [
        `OpenViking at ${url} started its reply, then sent nothing for ${ms}, so the proxy gave up on it. Retry ` +
        `the call; if it keeps happening, check the server's log, or raise OPENVIKING_TIMEOUT_MS.`,
        { idleMs: f.ms },
      ];
    case "deadline":
      return [
        `OpenViking at ${url} did not finish its reply within ${ms}, the proxy's limit for one request. Ask for ` +
        `less at once (fewer results, a narrower URI) or retry; if it keeps happening, check the server's log.`,
        { limitMs: f.ms },
      ];
    case "cut":
      return [
        `The connection to OpenViking at ${url} broke before the reply was complete (${f.cause}). ${RETRY}`,
        { cause: f.cause },
      ];
    case "too-large": {
      const limit = describeBytes(f.limitBytes);
      const what = f.part === "stream"
        ? `OpenViking's reply stream passed ${limit} before the response arrived`
        : `OpenViking's reply was larger than ${limit}, the most the proxy reads of one reply`;
      return [
        `${what}; the proxy stopped reading it and dropped it (the session goes on). Ask for less: fewer ` +
        `results (a lower limit or node_limit), a narrower URI, or part of a file (offset and limit).`,
        { limitBytes: f.limitBytes, part: f.part },
      ];
    }
    case "too-deep":
      return [
        `OpenViking's reply nests arrays and objects deeper than ${f.levels} levels, more than the proxy passes ` +
        `on; it was dropped (the session goes on). ${RETRY}`,
        { levels: f.levels },
      ];
    case "redirect":
      return [
        `OpenViking at ${url} redirected to ${f.location}, another origin; the proxy sends credentials only to ` +
        `the configured URL. If that is the right server, set it as the URL (${urlSource(ctx)}).`,
        { status: f.status, location: f.location },
      ];
    case "http": {
      const said = f.serverMessage ? `: ${f.serverMessage}` : "";
      const hint = f.status === 404 || f.status === 405
        ? ` There is no MCP endpoint at ${url}: upgrade the OpenViking server (older ones have no native /mcp), ` +
          `or set OPENVIKING_MCP_URL.`
        : f.status >= 500
        ? " The server failed; check its log, then retry."
        : "";
      return [
        `OpenViking MCP upstream returned HTTP ${f.status}${said}.${hint}`,
        { status: f.status, serverMessage: f.serverMessage },
      ];
    }
    case "empty":
      return [
        `OpenViking accepted the request (HTTP ${f.status}) but sent no response to it. ${RETRY}`,
        { status: f.status },
      ];
  }
  const [status, sample] = f.kind === "bad-reply" ? [f.status, f.sample] : [0, ""];
  const message =
    `OpenViking sent a reply that is not JSON-RPC (HTTP ${status}). Check that ${url} is an MCP ` +
    `endpoint.`;
  return [message, { status, sample }];
}

/** The error answering a failed exchange; API keys and URL user info never appear in it. */
export function failureError(id: RequestId, failure: Failure, ctx: ErrorContext): JSONRPCErrorResponse {
  if (failure.kind === "auth") return authError(id, failure.status, failure.serverMessage, ctx);
  const [message, data] = parts(failure, withoutUserinfo(ctx.mcpUrl), ctx);
  return reply(id, CODES[failure.kind as keyof typeof CODES] ?? NETWORK, message, data, ctx);
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
