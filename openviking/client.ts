/**
 * The one OpenViking HTTP client: auth and identity headers, a per-request timeout inside a caller's time
 * budget (covering the body too), a bound on every reply body, the classification of replies (`reply.ts`),
 * and the check of every result against the route's schema: a caller gets the parsed value or a failure,
 * never an unchecked cast. It never logs, and every failure it returns has passed `cleanFailure`: no control,
 * escape sequence or markup, no key, token or URL userinfo in its words, whatever the server said.
 */

import * as z from "zod/mini";
import { readBody } from "./body.ts";
import {
  checkResult,
  classifyReply,
  cleanFailure,
  failure,
  type OvFailure,
  type OvResponse,
} from "./reply.ts";
import { withoutUserinfo } from "../lib/scrub.ts";

/** A deadline shared by every request of one hook run. */
export class Budget {
  readonly deadline: number;
  constructor(totalMs: number, now = Date.now()) {
    this.deadline = now + Math.max(0, totalMs);
  }
  /** Milliseconds left (never negative). */
  remaining(): number {
    return Math.max(0, this.deadline - Date.now());
  }
}

export type { FailureKind, OvFailure, OvResponse } from "./reply.ts";

/** Who requests are from: what the identity headers carry. */
export interface Identity {
  apiKey?: string;
  account?: string;
  user?: string;
  /** Default `X-OpenViking-Actor-Peer` ("" = none). */
  peerId?: string;
  userAgent: string;
}

/** Connection and identity of a client. */
export interface ClientOptions extends Identity {
  baseUrl: string;
  /** Per-request timeout (ms). */
  timeoutMs: number;
  /** Injected fetch, for tests. */
  fetch?: typeof fetch;
}

/** What of the config a client is made from (a `Config` is one). */
export interface Connection {
  baseUrl: string;
  apiKey: string;
  account: string;
  user: string;
  userAgent: string;
  timeoutMs: number;
}

/** The identity of `config` with `peerId` as the actor peer ("" = none): the one mapping of it. */
export function identityOf(config: Omit<Connection, "baseUrl" | "timeoutMs">, peerId: string): Identity {
  return {
    apiKey: config.apiKey,
    account: config.account,
    user: config.user,
    peerId,
    userAgent: config.userAgent,
  };
}

/**
 * The client options of `config` — its server, identity and timeout — with `peerId` as the actor peer ("" =
 * none) and, for doctor and tests, another timeout or fetch.
 */
export function clientOptions(
  config: Connection,
  peerId = "",
  overrides: { timeoutMs?: number; fetch?: typeof fetch } = {},
): ClientOptions {
  return {
    baseUrl: config.baseUrl,
    ...identityOf(config, peerId),
    timeoutMs: overrides.timeoutMs ?? config.timeoutMs,
    ...(overrides.fetch ? { fetch: overrides.fetch } : {}),
  };
}

/** The schema of a result nobody reads (writes): only OpenViking's "ok" counts. */
export const AnyResult: z.ZodMiniUnknown = z.unknown();

/** Options of one request. */
export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** Overrides the client's per-request timeout. */
  timeoutMs?: number;
  /** The request never outlives this budget. */
  budget?: Budget;
  /** Overrides the default actor peer for this request (null = send none). */
  peerId?: string | null;
  /** Largest reply body read (inflated bytes); default `DEFAULT_MAX_REPLY_BYTES`. */
  maxReplyBytes?: number;
}

/** Requests shorter than this are not worth starting when the budget is nearly spent. */
const MIN_REQUEST_MS = 50;

/** An OpenViking client bound to one configuration. */
export interface OpenVikingClient {
  readonly options: ClientOptions;
  /**
   * One request: the envelope's `result` parsed with `schema` (a reply whose result does not match is a
   * `not-openviking` failure, see reply.ts `checkResult`), or the failure.
   */
  request<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    options?: RequestOptions,
  ): Promise<OvResponse<z.output<S>>>;
}

/** Headers every OpenViking request carries: `identity`, with `peerId` overriding its actor peer (null = none). */
export function buildHeaders(
  options: Identity,
  peerId: string | null | undefined,
  json: boolean,
): Headers {
  const headers = new Headers({ "User-Agent": options.userAgent, Accept: "application/json" });
  if (json) headers.set("Content-Type", "application/json");
  if (options.apiKey) headers.set("Authorization", `Bearer ${options.apiKey}`);
  if (options.account) headers.set("X-OpenViking-Account", options.account);
  if (options.user) headers.set("X-OpenViking-User", options.user);
  const peer = peerId === undefined ? options.peerId : peerId;
  if (peer) headers.set("X-OpenViking-Actor-Peer", peer);
  return headers;
}

/** Reply bodies larger than this are not read (inflated bytes; a route may set its own bound). */
const DEFAULT_MAX_REPLY_BYTES = 1 << 20;

/** The time one request may take: the client's (or the request's) timeout, within what its budget has left. */
function requestTimeout(options: ClientOptions, req: RequestOptions): number | OvFailure {
  const timeout = req.timeoutMs ?? options.timeoutMs;
  if (!req.budget) return timeout;
  const left = req.budget.remaining();
  if (left < MIN_REQUEST_MS) {
    return failure("unreachable", 0, { code: "BUDGET_SPENT", message: "time budget spent" });
  }
  return Math.min(timeout, left);
}

/**
 * The failure of a request that got no complete answer: no answer in time, or none at all — `CONNECT` when no
 * connection was made (refused, no such host: nothing reached the server), else `NETWORK`.
 */
function noAnswer(
  timedOut: boolean,
  timeout: number,
  timedOutText: string,
  otherText: string,
  connect = false,
): OvFailure {
  return failure("unreachable", 0, {
    code: timedOut ? "TIMEOUT" : connect ? "CONNECT" : "NETWORK",
    message: timedOut ? `${timedOutText} within ${timeout} ms` : otherText,
  });
}

/** One request's bytes: its reply's status, headers and bounded body, or the failure that stopped it. */
async function exchange(
  doFetch: typeof fetch,
  url: URL,
  init: { method: string; headers: Headers; body?: string },
  limits: { timeout: number; maxBytes: number },
): Promise<{ response: Response; bytes: Uint8Array } | OvFailure> {
  const origin = withoutUserinfo(url.origin);
  const signal = AbortSignal.timeout(Math.max(1, limits.timeout));
  let response: Response;
  try {
    response = await doFetch(url, { ...init, signal, redirect: "manual" });
  } catch (error) {
    const why = `cannot reach ${origin}: ${withoutUserinfo((error as Error).message)}`;
    const connect = /\(Connect\)/.test(String((error as Error).cause ?? "")); // hyper's connect phase
    return noAnswer(signal.aborted, limits.timeout, `no answer from ${origin}`, why, connect);
  }
  // The request's timeout covers the body too (the signal aborts it); no separate idle limit.
  const body = await readBody(response, { maxBytes: limits.maxBytes, idleMs: Infinity, signal });
  if (!("stop" in body)) return { response, bytes: body.bytes };
  if (body.stop.kind === "too-large") {
    return failure("too-large", response.status, {
      code: "TOO_LARGE",
      message: `the reply from ${origin} is larger than ${limits.maxBytes} bytes; it was not read`,
    });
  }
  const cause = body.stop.kind === "cut"
    ? String((body.stop.cause as Error)?.message ?? body.stop.cause)
    : "";
  const why = `the reply from ${origin} was cut: ${withoutUserinfo(cause)}`;
  return noAnswer(signal.aborted, limits.timeout, `the reply from ${origin} did not finish`, why);
}

/** Creates a client. */
export function createClient(options: ClientOptions): OpenVikingClient {
  const doFetch = options.fetch ?? fetch;
  const base = options.baseUrl.replace(/\/+$/, "");
  const secrets = options.apiKey ? [options.apiKey] : [];
  /** One request, its failure as it came (`request` cleans it). */
  const send = async <S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    req: RequestOptions,
  ): Promise<OvResponse<z.output<S>>> => {
    const timeout = requestTimeout(options, req);
    if (typeof timeout !== "number") return timeout;
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const hasBody = req.body !== undefined;
    // `/health` needs no key, and it is what is asked of an address not known to be OpenViking yet.
    const identity = path === "/health" ? { ...options, apiKey: undefined } : options;
    const got = await exchange(doFetch, url, {
      method,
      headers: buildHeaders(identity, req.peerId, hasBody),
      body: hasBody ? JSON.stringify(req.body) : undefined,
    }, { timeout, maxBytes: req.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES });
    if ("ok" in got) return got;
    const origin = withoutUserinfo(url.origin);
    const reply = classifyReply({
      status: got.response.status,
      location: got.response.headers.get("location"),
      contentType: got.response.headers.get("content-type"),
      text: new TextDecoder().decode(got.bytes),
      origin,
    });
    return reply.ok ? checkResult(reply, schema, `${origin} ${method} ${path}`) : reply;
  };
  return {
    options,
    async request<S extends z.ZodMiniType>(
      method: string,
      path: string,
      schema: S,
      req: RequestOptions = {},
    ): Promise<OvResponse<z.output<S>>> {
      const r = await send(method, path, schema, req);
      return r.ok ? r : cleanFailure(r, secrets);
    },
  };
}

/**
 * Whether the client's key may use memory's routes: one entry of `viking://user/` is read (a root key, which
 * only administers, is refused there with a 403 while `/api/v1/system/status` accepts it).
 */
export function askDataAccess(client: OpenVikingClient): Promise<OvResponse<unknown>> {
  return client.request("GET", "/api/v1/fs/ls", AnyResult, {
    query: { uri: "viking://user/", simple: true, node_limit: 1 },
  });
}
