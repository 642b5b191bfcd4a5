/**
 * The one OpenViking HTTP client and the one classification of its replies: identity headers (no key on
 * `/health`), a timeout within the caller's budget, a bounded body, the result checked against the route's
 * schema. Only OpenViking's envelope naming a final code rejects for good; every failure handed out is cleaned.
 */

import * as z from "zod/mini";
import { concatBytes } from "../lib/bytes.ts";
import { parseJsonOrUndefined } from "../lib/fs.ts";
import { neutralize } from "../lib/neutralize.ts";
import { isRecord, type JsonRecord } from "../lib/parsed.ts";
import { scrubText, withoutUserinfo } from "../lib/scrub.ts";
import type { Config } from "./config.ts";

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

/**
 * Why a call failed.
 * - `rejected`: OpenViking's envelope refused this request for good (a final code): set the write aside.
 * - `auth`: 401/403 — the key or identity is refused.
 * - `server`: OpenViking answered "not now" (5xx, 429, 408, a code that is not final, an error without one).
 * - `unreachable`: no complete answer (refused, reset, timeout, budget spent, reply cut).
 * - `redirect`: a 3xx; credentials are never sent on to another place.
 * - `not-openviking`: no OpenViking envelope (a proxy's page, another server, an empty 200), or a result that
 *   is not the route's shape.
 * - `missing-route`: OpenViking says the route does not exist (404 naming no resource, 405): an older server.
 * - `too-large`: the reply was larger than this route may return.
 */
export type FailureKind = (typeof FAILURE_KINDS)[number];

/** Every failure kind, in the order above. */
export const FAILURE_KINDS = [
  "rejected",
  "auth",
  "server",
  "unreachable",
  "redirect",
  "not-openviking",
  "missing-route",
  "too-large",
] as const;

/** An error as the server (or the transport) reported it; `details` is read by the classification only. */
export interface OvError {
  code?: string;
  message: string;
  details?: unknown;
}

/** A successful call: the envelope's `result`. */
export interface OvSuccess<T> {
  ok: true;
  status: number;
  result: T;
}

/** A failed call; `status` 0 means no HTTP answer; only `rejected` is final. */
export interface OvFailure {
  ok: false;
  status: number;
  kind: FailureKind;
  error: OvError;
  /** Where a redirect pointed (userinfo removed). */
  location?: string;
}

/** The outcome of a call. */
export type OvResponse<T> = OvSuccess<T> | OvFailure;

/** Builds a failure of `kind`. */
export function failure(kind: FailureKind, status: number, error: OvError, location?: string): OvFailure {
  return { ok: false, status, kind, error, ...(location ? { location } : {}) };
}

/**
 * `f` as the client hands it out: its code, message and redirect target neutralised and without `secrets`,
 * bearer tokens or URL userinfo; `details` dropped.
 */
export function cleanFailure(f: OvFailure, secrets: readonly string[]): OvFailure {
  const clean = (text: string) => scrubText(neutralize(text), secrets);
  const { code, message } = f.error;
  return {
    ...f,
    error: { ...(code === undefined ? {} : { code: clean(code) }), message: clean(message) },
    ...(f.location ? { location: clean(f.location) } : {}),
  };
}

// ---- replies ----

/**
 * The codes of a 4xx that refuse a request for good: sent again unchanged, it gets the same answer whatever an
 * admin does (NOT_FOUND only when it names a missing resource).
 */
const FINAL_CODES = new Set(
  "INVALID_ARGUMENT INVALID_URI UNSUPPORTED_URI UNSUPPORTED_MODE SKILL_INVALID INVALID_FILTER NOT_FOUND"
    .split(" "),
);
const AUTH_CODES = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED"]);

/** A raw HTTP answer, its body already bounded. */
export interface RawReply {
  status: number;
  location?: string | null;
  contentType?: string | null;
  text: string;
  /** The origin answered, for messages. */
  origin: string;
}

/** OpenViking's envelope: a JSON object whose `status` is "ok" or "error". */
export function envelopeOf(text: string): JsonRecord | undefined {
  const body = /^\s*\{/.test(text) ? parseJsonOrUndefined(text) : undefined;
  return isRecord(body) && (body.status === "ok" || body.status === "error") ? body : undefined;
}

/** Longest server message kept. */
const MESSAGE_CHARS = 300;

/** The server's own words in a parsed error body: `error.message`, `error` as text, `detail` or `message`. */
function wordsOf(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const e = body.error;
  const words = [isRecord(e) ? e.message : e, body.detail, body.message].find((w) => typeof w === "string");
  return words === undefined ? undefined : String(words).slice(0, MESSAGE_CHARS);
}

/**
 * The server's own words in an error body — a JSON-RPC error, OpenViking's envelope, FastAPI's `detail`, or
 * plain text — at most 300 characters ("" for an empty body).
 */
export function serverMessageOf(text: string): string {
  const trimmed = text.trim();
  return trimmed ? wordsOf(parseJsonOrUndefined(trimmed)) ?? trimmed.slice(0, MESSAGE_CHARS) : "";
}

function errorOf(body: JsonRecord, status: number): OvError {
  const e = isRecord(body.error) ? body.error : {};
  return {
    code: typeof e.code === "string" ? e.code : undefined,
    message: wordsOf(body) ?? `HTTP ${status}`,
    details: e.details,
  };
}

/** Whether an error is a model provider's answer the server passes on (its state, not our request). */
const fromUpstream = (e: OvError) => isRecord(e.details) && "upstream_message" in e.details;

/** Whether a 404 envelope names a missing resource (a session, a file) rather than a missing route. */
const namesResource = ({ details: d }: OvError) =>
  isRecord(d) && [d.resource, d.type, d.uri].some((v) => typeof v === "string");

/** A short, printable description of a body that is not OpenViking's: its content type and title. */
function sampleOf(text: string, contentType: string | null | undefined): string {
  if (!text.trim()) return "an empty body";
  const title = /<title[^>]*>([^<]{1,80})/i.exec(text)?.[1]?.trim();
  const kind = (contentType ?? "").split(";")[0].trim() || "no content type";
  return title ? `${kind} "${title}"` : kind;
}

/**
 * A success whose `result` parses with the route's `schema`, else a `not-openviking` failure naming `what`
 * was asked and where the result differs. Writes take any result: only their "ok" counts.
 */
export function checkResult<S extends z.ZodMiniType>(
  success: OvSuccess<unknown>,
  schema: S,
  what: string,
): OvResponse<z.output<S>> {
  const parsed = schema.safeParse(success.result);
  if (parsed.success) return { ...success, result: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? `"${issue.path.join(".")}"` : "the result";
  return failure("not-openviking", success.status, {
    code: "UNEXPECTED_RESULT",
    message: `${what} answered OK, but ${where} is not what OpenViking sends (${issue?.code ?? "invalid"})`,
  });
}

/** Where a redirect points, absolute and without userinfo; "" when not a URL, undefined when unsaid. */
function redirectTarget(raw: RawReply): string | undefined {
  if (!raw.location) return undefined;
  const url = URL.parse(raw.location, raw.origin);
  return url ? withoutUserinfo(url.toString()) : "";
}

/** Classifies one HTTP answer (pure); a success carries the envelope's `result` as it came. */
export function classifyReply(raw: RawReply): OvResponse<unknown> {
  const { status, origin } = raw;
  if (status >= 300 && status < 400) {
    const location = redirectTarget(raw);
    const to = location === undefined
      ? ""
      : location
      ? ` to ${location}`
      : " to an address that is not a URL";
    const message = `${origin} redirects (HTTP ${status})${to}`;
    return failure("redirect", status, { code: "REDIRECT", message }, location || undefined);
  }
  const body = envelopeOf(raw.text);
  if (status === 401 || status === 403) {
    return failure(
      "auth",
      status,
      body ? errorOf(body, status) : { code: "AUTH", message: `HTTP ${status}` },
    );
  }
  if (!body) {
    if (status >= 500 || status === 429 || status === 408) {
      return failure("server", status, { code: "HTTP", message: `HTTP ${status} from ${origin}` });
    }
    const message = `${origin} answered HTTP ${status} with ${sampleOf(raw.text, raw.contentType)}, ` +
      "not an OpenViking reply";
    return failure("not-openviking", status, { code: "NOT_OPENVIKING", message });
  }
  if (body.status === "ok" && status >= 200 && status < 300) {
    // `/health` is the one route whose fields sit beside `status` instead of in `result`.
    return { ok: true, status, result: "result" in body ? body.result : body };
  }
  const error = errorOf(body, status);
  if (AUTH_CODES.has(error.code ?? "")) return failure("auth", status >= 400 ? status : 401, error);
  if (status === 405 || (status === 404 && !namesResource(error) && !fromUpstream(error))) {
    return failure("missing-route", status, error);
  }
  const final = body.status === "error" && FINAL_CODES.has(error.code ?? "") && !fromUpstream(error);
  if (final && status >= 400 && status < 500) return failure("rejected", status, error);
  return failure("server", status >= 400 ? status : 503, error);
}

// ---- bounded bodies ----

/** Why reading a body stopped before its end. */
export type BodyStop =
  | { kind: "too-large"; limitBytes: number }
  | { kind: "stalled"; ms: number }
  | { kind: "cut"; cause: unknown };

/**
 * A body read chunk by chunk within its bounds: `maxBytes` (after inflate), `idleMs` without a byte, `signal`.
 * At a bound it cancels the body, which closes the connection, and says why in `stop`; it never buffers past
 * the bound and never throws; `bytes` is what came. `prefix`: reaching `maxBytes` ends the read, not a stop.
 */
export async function readBody(
  response: Response,
  limits: { maxBytes: number; idleMs?: number; signal?: AbortSignal; prefix?: boolean },
): Promise<{ bytes: Uint8Array; stop?: BodyStop }> {
  const { maxBytes, idleMs = Infinity, signal } = limits;
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let stop: BodyStop | undefined;
  // Cancelling the body ends a read still waiting (it resolves as done) and releases the connection.
  const end = (why?: BodyStop) => {
    stop ??= why;
    return reader?.cancel().catch(() => {});
  };
  const onAbort = () => end({ kind: "cut", cause: signal?.reason ?? new Error("aborted") });
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    while (reader && !stop) {
      // Set only when finite: the first setTimeout loads Node's timers.
      const timer = Number.isFinite(idleMs)
        ? setTimeout(() => end({ kind: "stalled", ms: idleMs }), idleMs)
        : 0;
      const got = await reader.read().catch((cause: unknown) => end({ kind: "cut", cause }));
      if (timer) clearTimeout(timer);
      if (!got || got.done || stop) break;
      const room = maxBytes - size;
      size += got.value.length;
      // Fetch may hand out small views of a larger buffer: keeping those would keep the whole buffers.
      chunks.push(got.value.byteLength < got.value.buffer.byteLength ? got.value.slice() : got.value);
      if (size >= maxBytes && limits.prefix) chunks.push(chunks.pop()!.subarray(0, room));
      if (size > maxBytes && !limits.prefix) stop = { kind: "too-large", limitBytes: maxBytes };
      if (size >= maxBytes && (stop || limits.prefix)) break;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await end();
  }
  return { bytes: concatBytes(chunks), ...(stop ? { stop } : {}) };
}

/** The text of the first `maxBytes` of a body (an error page's start); the rest is not read. Never throws. */
export async function readPrefix(
  response: Response,
  maxBytes: number,
  idleMs: number,
  signal?: AbortSignal,
): Promise<string> {
  const { bytes } = await readBody(response, { maxBytes, idleMs, signal, prefix: true });
  return new TextDecoder().decode(bytes);
}

// ---- the client ----

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

/** What of the config a client is made from. */
type Connection = Pick<Config, "baseUrl" | "apiKey" | "account" | "user" | "userAgent" | "timeoutMs">;

/** The identity of `config` with `peerId` as the actor peer ("" = none). */
export function identityOf(config: Omit<Connection, "baseUrl" | "timeoutMs">, peerId: string): Identity {
  const { apiKey, account, user, userAgent } = config;
  return { apiKey, account, user, peerId, userAgent };
}

/** The client options of `config` with `peerId` as the actor peer and, for doctor and tests, another timeout or fetch. */
export function clientOptions(
  config: Connection,
  peerId = "",
  overrides: { timeoutMs?: number; fetch?: typeof fetch } = {},
): ClientOptions {
  const { timeoutMs = config.timeoutMs, fetch } = overrides;
  return { baseUrl: config.baseUrl, ...identityOf(config, peerId), timeoutMs, ...(fetch ? { fetch } : {}) };
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
  /** Overrides the default actor peer (null = send none). */
  peerId?: string | null;
  /** Largest reply body read (inflated bytes); default 1 MiB. */
  maxReplyBytes?: number;
}

/** An OpenViking client bound to one configuration. */
export interface OpenVikingClient {
  readonly options: ClientOptions;
  /** One request: the envelope's `result` parsed with `schema`, or the failure. */
  request<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    options?: RequestOptions,
  ): Promise<OvResponse<z.output<S>>>;
}

/** Headers every OpenViking request carries: `identity`, with `peerId` overriding its actor peer (null = none). */
export function buildHeaders(identity: Identity, peerId: string | null | undefined, json: boolean): Headers {
  const headers = new Headers({ "User-Agent": identity.userAgent, Accept: "application/json" });
  if (json) headers.set("Content-Type", "application/json");
  if (identity.apiKey) headers.set("Authorization", `Bearer ${identity.apiKey}`);
  if (identity.account) headers.set("X-OpenViking-Account", identity.account);
  if (identity.user) headers.set("X-OpenViking-User", identity.user);
  const peer = peerId === undefined ? identity.peerId : peerId;
  if (peer) headers.set("X-OpenViking-Actor-Peer", peer);
  return headers;
}

/**
 * A request that got no complete answer: no answer in time (`TIMEOUT`), no connection made (`CONNECT`:
 * nothing reached the server), or another transport failure (`NETWORK`).
 */
function noAnswer(timedOut: boolean, timeout: number, late: string, why: string, connect = false): OvFailure {
  return failure("unreachable", 0, {
    code: timedOut ? "TIMEOUT" : connect ? "CONNECT" : "NETWORK",
    message: timedOut ? `${late} within ${timeout} ms` : why,
  });
}

/** One request's reply: its response and bounded body, or the failure that stopped it. */
async function exchange(
  doFetch: typeof fetch,
  url: URL,
  init: { method: string; headers: Headers; body?: string },
  timeout: number,
  maxBytes: number,
): Promise<{ response: Response; bytes: Uint8Array } | OvFailure> {
  const origin = withoutUserinfo(url.origin);
  const signal = AbortSignal.timeout(Math.max(1, timeout));
  let response: Response;
  try {
    response = await doFetch(url, { ...init, signal, redirect: "manual" });
  } catch (error) {
    const why = `cannot reach ${origin}: ${withoutUserinfo((error as Error).message)}`;
    const connect = /\(Connect\)/.test(String((error as Error).cause ?? "")); // hyper's connect phase
    return noAnswer(signal.aborted, timeout, `no answer from ${origin}`, why, connect);
  }
  const body = await readBody(response, { maxBytes, signal });
  if (!body.stop) return { response, bytes: body.bytes };
  if (body.stop.kind === "too-large") {
    const message = `the reply from ${origin} is larger than ${maxBytes} bytes; it was not read`;
    return failure("too-large", response.status, { code: "TOO_LARGE", message });
  }
  const cause = body.stop.kind === "cut"
    ? String((body.stop.cause as Error)?.message ?? body.stop.cause)
    : "";
  const why = `the reply from ${origin} was cut: ${withoutUserinfo(cause)}`;
  return noAnswer(signal.aborted, timeout, `the reply from ${origin} did not finish`, why);
}

/** Creates a client. */
export function createClient(options: ClientOptions): OpenVikingClient {
  const doFetch = options.fetch ?? fetch;
  const base = options.baseUrl.replace(/\/+$/, "");
  const secrets = options.apiKey ? [options.apiKey] : [];
  const send = async <S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    req: RequestOptions,
  ): Promise<OvResponse<z.output<S>>> => {
    let timeout = req.timeoutMs ?? options.timeoutMs;
    if (req.budget) {
      const left = req.budget.remaining();
      if (left < 50) return failure("unreachable", 0, { code: "BUDGET_SPENT", message: "time budget spent" });
      timeout = Math.min(timeout, left);
    }
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const hasBody = req.body !== undefined;
    // `/health` needs no key, and it is what is asked of an address not known to be OpenViking yet.
    const identity = path === "/health" ? { ...options, apiKey: undefined } : options;
    const headers = buildHeaders(identity, req.peerId, hasBody);
    const body = hasBody ? JSON.stringify(req.body) : undefined;
    const got = await exchange(
      doFetch,
      url,
      { method, headers, body },
      timeout,
      req.maxReplyBytes ?? 1 << 20,
    );
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
    async request(method, path, schema, req = {}) {
      const r = await send(method, path, schema, req);
      return r.ok ? r : cleanFailure(r, secrets);
    },
  };
}

/**
 * Whether the client's key may use memory's routes: one entry of `viking://user/` is read (a root key, which
 * only administers, is refused there while `/api/v1/system/status` accepts it).
 */
export function askDataAccess(client: OpenVikingClient): Promise<OvResponse<unknown>> {
  return client.request("GET", "/api/v1/fs/ls", AnyResult, {
    query: { uri: "viking://user/", simple: true, node_limit: 1 },
  });
}
