/** The OpenViking HTTP client and the classification of its replies; failures handed out are cleaned. */

import * as z from "zod/mini";
import { concatBytes } from "../lib/bytes.ts";
import { parseJsonOrUndefined } from "../lib/fs.ts";
import { neutralize } from "../lib/neutralize.ts";
import { asRecord, isRecord, type JsonRecord } from "../lib/parsed.ts";
import { scrubText, withoutUserinfo } from "../lib/redact.ts";
import type { Config } from "./config.ts";

/** A deadline shared by every request of one hook run. */
export class Budget {
  readonly deadline: number;
  constructor(readonly totalMs: number, now = Date.now()) {
    this.deadline = now + Math.max(0, totalMs);
  }
  /** Milliseconds left (never negative). */
  remaining(): number {
    return Math.max(0, this.deadline - Date.now());
  }
}

/** Why a call failed; only `rejected` (a final code in OpenViking's envelope) is for good; `model`: the server's. */
export type FailureKind = (typeof FAILURE_KINDS)[number];
// deno-fmt-ignore
export const FAILURE_KINDS = ["rejected", "auth", "model", "server", "unreachable", "redirect", "not-openviking", "missing-route", "too-large"] as const;
type OvError = { code?: string; message: string; details?: unknown };
type OvSuccess<T> = { ok: true; status: number; result: T };
/** A failed call; `status` 0: no HTTP answer; `location`: a redirect's target. */
export type OvFailure = { ok: false; status: number; kind: FailureKind; error: OvError; location?: string };
export type OvResponse<T> = OvSuccess<T> | OvFailure;
export function failure(kind: FailureKind, status: number, error: OvError, location?: string): OvFailure {
  return { ok: false, status, kind, error, ...(location ? { location } : {}) };
}

/** `f` neutralised and without `secrets`, bearer tokens or URL userinfo; `details` dropped. */
export function cleanFailure(f: OvFailure, secrets: readonly string[]): OvFailure {
  const clean = (text: string) => scrubText(neutralize(text), secrets);
  const { code, message } = f.error;
  return {
    ...f,
    error: { ...(code === undefined ? {} : { code: clean(code) }), message: clean(message) },
    ...(f.location ? { location: clean(f.location) } : {}),
  };
}

/** The codes of a 4xx that refuse a request for good. */
// deno-fmt-ignore
const FINAL_CODES = new Set(["INVALID_ARGUMENT", "INVALID_URI", "UNSUPPORTED_URI", "UNSUPPORTED_MODE", "SKILL_INVALID", "INVALID_FILTER", "NOT_FOUND"]);
const AUTH_CODES = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED"]);
/** A raw HTTP answer, its body already bounded. */
export type RawReply = { status: number; location?: string | null; contentType?: string | null } & {
  text: string;
  origin: string;
};

/** OpenViking's envelope: a JSON object whose `status` is "ok" or "error". */
function envelopeOf(text: string): JsonRecord | undefined {
  const body = /^\s*\{/.test(text) ? parseJsonOrUndefined(text) : undefined;
  return isRecord(body) && (body.status === "ok" || body.status === "error") ? body : undefined;
}

const MESSAGE_CHARS = 300;
function wordsOf(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const e = body.error;
  const words = [isRecord(e) ? e.message : e, body.detail, body.message].find((w) => typeof w === "string");
  return words === undefined ? undefined : String(words).slice(0, MESSAGE_CHARS);
}

/** The server's words in an error body (JSON or text), at most 300 characters. */
export function serverMessageOf(text: string): string {
  const trimmed = text.trim();
  return trimmed ? wordsOf(parseJsonOrUndefined(trimmed)) ?? trimmed.slice(0, MESSAGE_CHARS) : "";
}

function errorOf(body: JsonRecord, status: number, e = asRecord(body.error)): OvError {
  return {
    code: typeof e.code === "string" ? e.code : undefined,
    message: wordsOf(body) ?? `HTTP ${status}`,
    details: e.details,
  };
}

/** Whether an error is a model provider's answer (or silence) the server passes on (its 401: not our key). */
const fromUpstream = (e: OvError) =>
  (isRecord(e.details) && "upstream_message" in e.details) || /^Upstream model\b/.test(e.message);
/** Whether a 404 envelope names a missing resource rather than a missing route. */
const namesResource = ({ details: d }: OvError) =>
  isRecord(d) && [d.resource, d.type, d.uri].some((v) => typeof v === "string");
/** A printable description of a body that is not OpenViking's. */
function sampleOf(text: string, contentType: string | null | undefined): string {
  if (!text.trim()) return "an empty body";
  const title = /<title[^>]*>([^<]{1,80})/i.exec(text)?.[1]?.replace(/\s+/g, " ").trim();
  const kind = (contentType ?? "").split(";")[0].trim() || "no content type";
  return title ? `${kind} "${title}"` : kind;
}

/** A success whose `result` parses with `schema`, else a `not-openviking` failure. */
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

/** Classifies one HTTP answer (pure). */
export function classifyReply(raw: RawReply): OvResponse<unknown> {
  const { status, origin } = raw;
  if (status >= 300 && status < 400) {
    const url = raw.location ? URL.parse(raw.location, origin) : undefined;
    const location = url ? withoutUserinfo(url.toString()) : undefined;
    const to = location ? ` to ${location}` : raw.location ? " to an address that is not a URL" : "";
    const message = `${origin} redirects (HTTP ${status})${to}`;
    return failure("redirect", status, { code: "REDIRECT", message }, location);
  }
  const body = envelopeOf(raw.text);
  const error = body && errorOf(body, status);
  if (error && status >= 400 && fromUpstream(error)) return failure("model", status, error);
  if (status === 401 || status === 403) {
    return failure("auth", status, error ?? { code: "AUTH", message: `HTTP ${status}` });
  }
  if (!body || !error) {
    const message = `${origin} answered HTTP ${status} with ${sampleOf(raw.text, raw.contentType)}, ` +
      "not an OpenViking reply";
    // A busy status in another's words: a proxy or gateway answering while OpenViking cannot.
    if (status >= 500 || status === 429 || status === 408) {
      return failure("server", status, { code: "HTTP", message });
    }
    return failure("not-openviking", status, { code: "NOT_OPENVIKING", message });
  }
  if (body.status === "ok" && status >= 200 && status < 300) {
    return { ok: true, status, result: "result" in body ? body.result : body };
  }
  if (AUTH_CODES.has(error.code ?? "")) return failure("auth", status >= 400 ? status : 401, error);
  if (status === 405 || (status === 404 && !namesResource(error))) {
    return failure("missing-route", status, error);
  }
  const final = body.status === "error" && FINAL_CODES.has(error.code ?? "");
  if (final && status >= 400 && status < 500) return failure("rejected", status, error);
  return failure("server", status >= 400 ? status : 503, error);
}

type BodyStop =
  | { kind: "too-large"; limitBytes: number }
  | { kind: "stalled"; ms: number }
  | { kind: "cut"; cause: unknown };
/** A body read within `maxBytes`, `idleMs` and `signal`; a bound cancels it, keeps what came, says why. */
export async function readBody(
  response: Response,
  limits: { maxBytes: number; idleMs?: number; signal?: AbortSignal },
): Promise<{ bytes: Uint8Array; stop?: BodyStop }> {
  const { maxBytes, idleMs = Infinity, signal } = limits;
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let stop: BodyStop | undefined;
  const end = (why?: BodyStop) => {
    stop ??= why;
    return reader?.cancel().catch(() => {});
  };
  const onAbort = () => end({ kind: "cut", cause: signal?.reason ?? new Error("aborted") });
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    while (reader && !stop) {
      const timer = Number.isFinite(idleMs)
        ? setTimeout(() => end({ kind: "stalled", ms: idleMs }), idleMs)
        : 0;
      const got = await reader.read().catch((cause: unknown) => end({ kind: "cut", cause }));
      if (timer) clearTimeout(timer);
      if (!got || got.done || stop) break;
      size += got.value.length;
      chunks.push(got.value.byteLength < got.value.buffer.byteLength ? got.value.slice() : got.value);
      if (size > maxBytes) stop = { kind: "too-large", limitBytes: maxBytes };
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await end();
  }
  return { bytes: concatBytes(chunks), ...(stop ? { stop } : {}) };
}

/** Where and as whom a client asks: the server, the identity headers (`peerId` "" = none), timeout, fetch. */
export type ClientOptions =
  & Partial<Pick<Config, "apiKey" | "account" | "user" | "peerId">>
  & { baseUrl: string; userAgent: string; timeoutMs: number; fetch?: typeof fetch };
/** The schema of a result nobody reads (writes). */
export const AnyResult: z.ZodMiniUnknown = z.unknown();
/** One request's options; `peerId` null: none; `binary`: an OK reply that is not JSON is its bytes. */
export interface RequestOptions {
  body?: unknown;
  binary?: boolean;
  query?: Record<string, string | number | boolean | undefined>;
  timeoutMs?: number;
  budget?: Budget;
  peerId?: string | null;
  maxReplyBytes?: number;
}

export interface OpenVikingClient {
  readonly options: ClientOptions;
  request<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    o?: RequestOptions,
  ): Promise<OvResponse<z.output<S>>>;
}

/** Headers of an OpenViking request; `peerId` overrides the identity's (null = none). */
export function buildHeaders(
  identity: Omit<ClientOptions, "baseUrl" | "timeoutMs">,
  peerId: string | null | undefined,
  json: boolean,
): Headers {
  const headers = new Headers({ "User-Agent": identity.userAgent, Accept: "application/json" });
  if (json) headers.set("Content-Type", "application/json");
  if (identity.apiKey) headers.set("Authorization", `Bearer ${identity.apiKey}`);
  if (identity.account) headers.set("X-OpenViking-Account", identity.account);
  if (identity.user) headers.set("X-OpenViking-User", identity.user);
  const peer = peerId === undefined ? identity.peerId : peerId;
  if (peer) headers.set("X-OpenViking-Actor-Peer", peer);
  return headers;
}

/** A request without an answer: `TIMEOUT`, `CONNECT` (nothing reached the server) or `NETWORK`. */
function noAnswer(timedOut: boolean, bound: string, late: string, why: string, connect = false): OvFailure {
  return failure("unreachable", 0, {
    code: timedOut ? "TIMEOUT" : connect ? "CONNECT" : "NETWORK",
    message: timedOut ? `${late} within ${bound}` : why,
  });
}

/** A client of `config`'s server and identity; `down` (a server known silent): every request fails at once. */
export function createClient(
  config: Omit<ClientOptions, "peerId">,
  peerId = "",
  { down, ...overrides }: Pick<Partial<ClientOptions>, "timeoutMs" | "fetch"> & { down?: OvFailure } = {},
): OpenVikingClient {
  const { baseUrl, apiKey, account, user, userAgent, timeoutMs, fetch: f } = config;
  const options = { baseUrl, apiKey, account, user, peerId, userAgent, timeoutMs, fetch: f, ...overrides };
  const base = options.baseUrl.replace(/\/+$/, "");
  const secrets = options.apiKey ? [options.apiKey] : [];
  /** One request's reply, classified and checked against `schema`, or the failure that stopped it. */
  async function exchange<S extends z.ZodMiniType>(
    method: string,
    path: string,
    schema: S,
    req: RequestOptions,
  ) {
    // Known silent (`down` says why): nothing is sent, as when the connection is refused.
    if (down) {
      const code = down.error.code === "TIMEOUT" ? "SILENT" : "CONNECT";
      return failure("unreachable", 0, { code, message: down.error.message });
    }
    const left = req.budget?.remaining() ?? Infinity;
    if (left < 50) return failure("unreachable", 0, { code: "BUDGET_SPENT", message: "time budget spent" });
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const [hasBody, form] = [req.body !== undefined, req.body instanceof FormData];
    const identity = path === "/health" ? { ...options, apiKey: undefined } : options;
    const headers = buildHeaders(identity, req.peerId, hasBody && !form);
    const body = form ? req.body as FormData : hasBody ? JSON.stringify(req.body) : undefined;
    const [timeout, maxBytes] = [
      Math.min(req.timeoutMs ?? options.timeoutMs, left),
      req.maxReplyBytes ?? 1 << 20,
    ];
    // Named as the caller set it: the budget's total when the budget, not the timeout, cut the wait.
    const bound = timeout < (req.timeoutMs ?? options.timeoutMs)
      ? `its time budget (${req.budget!.totalMs} ms)`
      : `${timeout} ms`;
    const origin = withoutUserinfo(url.origin);
    const signal = AbortSignal.timeout(Math.max(1, timeout));
    let response: Response;
    try {
      response = await (options.fetch ?? fetch)(url, { method, headers, body, signal, redirect: "manual" });
    } catch (error) {
      const why = `cannot reach ${origin}: ${withoutUserinfo((error as Error).message)}`;
      const connect = /\(Connect\)/.test(String((error as Error).cause ?? ""));
      return noAnswer(signal.aborted, bound, `no answer from ${origin}`, why, connect);
    }
    const read = await readBody(response, { maxBytes, signal });
    if (read.stop?.kind === "too-large") {
      const message = `the reply from ${origin} is larger than ${maxBytes} bytes; it was not read`;
      return failure("too-large", response.status, { code: "TOO_LARGE", message });
    }
    if (read.stop) {
      const cause = read.stop.kind === "cut"
        ? String((read.stop.cause as Error)?.message ?? read.stop.cause)
        : "";
      const why = `the reply from ${origin} was cut: ${withoutUserinfo(cause)}`;
      return noAnswer(signal.aborted, bound, `the reply from ${origin} did not finish`, why);
    }
    const [status, contentType] = [response.status, response.headers.get("content-type")];
    const bytes = req.binary && response.ok && !/json/.test(contentType ?? "");
    const text = bytes ? "" : new TextDecoder().decode(read.bytes);
    const reply = bytes
      ? { ok: true as const, status, result: read.bytes }
      : classifyReply({ status, location: response.headers.get("location"), contentType, text, origin });
    return reply.ok ? checkResult(reply, schema, `${origin} ${method} ${path}`) : reply;
  }
  return {
    options,
    async request(method, path, schema, req = {}) {
      const r = await exchange(method, path, schema, req);
      return r.ok ? r : cleanFailure(r, secrets);
    },
  };
}

/** The text of `uri` (its first `lines`, or all), or the failure (`isNotFound`: no such file). */
export const readContent = (
  client: OpenVikingClient,
  uri: string,
  o: { lines?: number; budget?: Budget } = {},
) =>
  client.request("GET", "/api/v1/content/read", z.string(), {
    query: { uri, limit: o.lines },
    budget: o.budget,
  });

/** Whether a failure is the server saying the thing asked for is not there. */
export const isNotFound = (f: OvFailure): boolean => f.status === 404 && f.kind !== "missing-route";

/** Whether the client's key may use memory's routes (a root key is refused there). */
export function askDataAccess(client: OpenVikingClient): Promise<OvResponse<unknown>> {
  return client.request("GET", "/api/v1/fs/ls", AnyResult, {
    query: { uri: "viking://user/", simple: true, node_limit: 1 },
  });
}
