/** The JSON-RPC errors the proxy answers when OpenViking cannot: what happened and what to do, scrubbed. Pure. */

// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCErrorResponse, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { Config } from "../openviking/config.ts";
import { scrub, withoutUserinfo } from "../lib/redact.ts";

/** Why an exchange did not produce the response it should have. */
export type Failure =
  | { kind: "network"; cause: string } // no HTTP answer: refused, DNS, TLS, reset
  | { kind: "paused" } // not asked: the server's recall breaker is open (a search went unanswered)
  | { kind: "timeout"; ms: number } // no response headers in time
  | { kind: "stalled"; ms: number } // the reply started, then not a byte (not even a keep-alive) for `ms`
  | { kind: "deadline"; ms: number } // headers, body and SSE reconnections did not end within their limit
  | { kind: "too-large"; limitBytes: number; part: "reply" | "event" | "stream" }
  | { kind: "too-deep"; levels: number }
  | { kind: "auth"; status: number; serverMessage: string }
  | { kind: "http"; status: number; serverMessage: string }
  | { kind: "redirect"; status: number; location: string } // to another origin, not followed
  | { kind: "empty"; status: number } // 2xx without the response
  | { kind: "bad-reply"; status: number; sample: string } // 2xx holding no JSON-RPC
  | { kind: "cut"; cause: string } // the body broke before the response
  | { kind: "aborted" }; // cancelled by the client or by shutdown

/** What an error message may say about the configuration; its key it never shows. */
type Shown = "mcpUrl" | "credentialSource" | "apiKeySource" | "cliConfigPath" | "ovConfigPath" | "account";
export type ErrorContext = Pick<Config, Shown | "user" | "apiKey">;

type Words<F> = (f: F, url: string, ctx: ErrorContext) => string;
type Kind = Exclude<Failure["kind"], "aborted">; // an aborted request is not answered

function urlSource({ credentialSource: src, cliConfigPath: cli, ovConfigPath: ov }: ErrorContext): string {
  if (src === "env") return "the environment (OPENVIKING_URL / OPENVIKING_MCP_URL)";
  if (src === "ovcli.conf") return `"url" in ${cli}`;
  if (src === "ov.conf") return `the server section of ${ov}`;
  return `the default, as nothing is configured (set "url" in ${cli} or OPENVIKING_URL)`;
}

/** Where the API key came from and how to fix it, in words; the file it came from ("": the environment). */
function keyFix({ apiKeySource: src, cliConfigPath: cli, ovConfigPath: ov }: ErrorContext): string[] {
  const reread = `the proxy re-reads ${cli} on the next call, no restart needed`;
  if (src === "none") {
    return [
      "no API key is configured",
      `Add "api_key" to ${cli} (or set OPENVIKING_API_KEY for the MCP server); ${reread}.`,
      cli,
    ];
  }
  const variable = src.startsWith("env ") ? src.slice(4) : "";
  if (variable) {
    const fix =
      `Fix ${variable} where the MCP server is configured (Kimi's mcp.json or the plugin settings) and ` +
      `start a new Kimi session, or remove it and put the key in ${cli} as "api_key".`;
    return [`the API key comes from the environment variable ${variable}`, fix, ""];
  }
  const file = src === "ov.conf" ? ov : cli;
  const wins = src === "ov.conf" ? ` (it wins over ${ov})` : "";
  return [`the API key comes from ${file}`, `Put a valid "api_key" in ${cli}${wins}; ${reread}.`, file];
}

const AGAIN = "`openviking-kimi doctor` says what is wrong. The tools work again as soon as the server " +
  "answers; no restart needed.";
const RETRY = "Retry the call; if it keeps happening, check the server's log.";
/** JSON-RPC server-error codes by kind; every other kind is the network's (-32004). */
// deno-fmt-ignore
const CODES: Partial<Record<Kind, number>> = { auth: -32001, http: -32002, redirect: -32002, "bad-reply": -32002, empty: -32003, "too-large": -32005, "too-deep": -32005 };

/** The words of the error answering each kind of failure. */
const WORDS: { [K in Kind]: Words<Extract<Failure, { kind: K }>> } = {
  auth: (f, _url, ctx) => {
    const [source, fix] = keyFix(ctx);
    const said = f.serverMessage ? `: ${f.serverMessage}` : "";
    const [account, user] = [ctx.account || "(none)", ctx.user || "(none)"];
    return f.status === 403
      ? `OpenViking denied access (HTTP 403${said}) for account "${account}", user "${user}"; ${source}. ` +
        `Check that the key belongs to that account and user ("account"/"user" in ${ctx.cliConfigPath} or ` +
        `OPENVIKING_ACCOUNT/OPENVIKING_USER). ${fix}`
      : `OpenViking MCP authentication failed (HTTP ${f.status}${said}); ${source}. ${fix}`;
  },
  network: (f, url, ctx) =>
    `OpenViking MCP request failed: cannot reach ${url} (${f.cause}). Check that the OpenViking server is ` +
    `running (openviking-server) and that the URL is right (it comes from ${urlSource(ctx)}). ${AGAIN}`,
  paused: (_f, url) =>
    `OpenViking at ${url} left a recent search unanswered, so memory is paused and its tools wait until the ` +
    "server answers a search again (the next prompt asks it). `openviking-kimi status` says since when; " +
    "`openviking-kimi doctor` what to check.",
  timeout: (f, url) =>
    `OpenViking at ${url} did not answer within ${seconds(f.ms)}. Check that the server is running and ` +
    `not overloaded (a stopped server takes the connection and never answers). ${AGAIN}`,
  stalled: (f, url) =>
    `OpenViking at ${url} started its reply, then sent nothing for ${seconds(f.ms)}, so the proxy ` +
    "gave up on it. Retry the call; if it keeps happening, check the server's log and `openviking-kimi doctor`.",
  deadline: (f, url) =>
    `OpenViking at ${url} did not finish its reply within ${seconds(f.ms)}, the proxy's limit for one ` +
    `request. Ask for less at once (fewer results, a narrower URI) or retry; if it keeps happening, check ` +
    `the server's log.`,
  cut: (f, url) =>
    `The connection to OpenViking at ${url} broke before the reply was complete (${f.cause}). ${RETRY}`,
  "too-large": (f) =>
    (f.part === "stream"
      ? `OpenViking's reply stream passed ${mebibytes(f.limitBytes)} before the response arrived`
      : `OpenViking's reply was larger than ${mebibytes(f.limitBytes)}, the most the proxy reads of one ` +
        "reply") +
    "; the proxy stopped reading it and dropped it (the session goes on). Ask for less: fewer results (a " +
    "lower limit or node_limit), a narrower URI, or part of a file (offset and limit).",
  "too-deep": (f) =>
    `OpenViking's reply nests arrays and objects deeper than ${f.levels} levels, more than the proxy passes ` +
    `on; it was dropped (the session goes on). ${RETRY}`,
  redirect: (f, url, ctx) =>
    `OpenViking at ${url} redirected to ${f.location}, another origin; the proxy sends credentials only to ` +
    `the configured URL. If that is the right server, set it as the URL (${urlSource(ctx)}).`,
  http: (f, url) => {
    const said = f.serverMessage ? `: ${f.serverMessage}` : "";
    const hint = f.status === 404 || f.status === 405
      ? ` There is no MCP endpoint at ${url}: upgrade the OpenViking server (older ones have no native /mcp), ` +
        `or set OPENVIKING_MCP_URL.`
      : f.status >= 500
      ? " The server failed; check its log, then retry."
      : "";
    return `OpenViking MCP upstream returned HTTP ${f.status}${said}.${hint}`;
  },
  empty: (f) => `OpenViking accepted the request (HTTP ${f.status}) but sent no response to it. ${RETRY}`,
  "bad-reply": (f, url) =>
    `OpenViking sent a reply that is not JSON-RPC (HTTP ${f.status}). Check that ${url} is an MCP endpoint.`,
};

/** The error answering a failed exchange (data: the failure, the URL, a refused key's source); no key or userinfo. */
export function failureError(id: RequestId, failure: Failure, ctx: ErrorContext): JSONRPCErrorResponse {
  const url = withoutUserinfo(ctx.mcpUrl);
  const kind = failure.kind as Kind;
  const message = (WORDS[kind] as Words<Failure>)(failure, url, ctx);
  const more = kind === "auth" ? { credentialSource: ctx.apiKeySource, credentialPath: keyFix(ctx)[2] } : {};
  const error = { code: CODES[kind] ?? -32004, message, data: { ...failure, ...more, url } };
  return scrub({ jsonrpc: "2.0", id, error }, ctx.apiKey ? [ctx.apiKey] : []) as JSONRPCErrorResponse;
}

const mebibytes = (n: number) => n >= 1 << 20 ? `${+(n / (1 << 20)).toFixed(1)} MiB` : `${n >> 10} KiB`;
const seconds = (ms: number) => ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
