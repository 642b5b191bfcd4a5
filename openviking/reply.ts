/**
 * The one classification of OpenViking replies, used by capture, replay, commit, recall, doctor and status.
 * Only OpenViking's own error envelope naming a final code can reject a request for good (`rejected`: the
 * write is kept aside, see pending.ts); every other failure — another code or none, a redirect, a reply that
 * is not OpenViking's (an HTML page, a foreign 404, an empty 200), a refused key, a server error, no answer —
 * leaves a write queued and spends no retry. Pure: no I/O.
 */

import type * as z from "zod/mini";
import { neutralize } from "../lib/neutralize.ts";
import { isRecord, type JsonRecord as Obj } from "../lib/parsed.ts";
import { scrubText, withoutUserinfo } from "../lib/scrub.ts";

/** An error as the server (or the transport) reported it. */
export interface OvError {
  code?: string;
  message: string;
  /** The rest of what the server said: read by the classification only (the client drops it). */
  details?: unknown;
}

/**
 * Why a call failed.
 * - `rejected`: OpenViking's envelope refused this request for good (`FINAL_CODES`): set the write aside.
 * - `auth`: 401/403 — the key or identity is refused.
 * - `server`: OpenViking answered "not now" (5xx, 429, 408, any code that is not final, an error with no code).
 * - `unreachable`: no complete answer (refused, reset, timeout, budget spent, reply cut).
 * - `redirect`: a 3xx; credentials are never sent on to another place.
 * - `not-openviking`: a reply without OpenViking's envelope (a proxy's page, another server, an empty 200),
 *   or an "ok" envelope whose result is not what the route returns (`checkResult`): not an answer to use.
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

/** A successful call: the envelope's `result`. */
export interface OvSuccess<T> {
  ok: true;
  status: number;
  result: T;
}

/** A failed call; `status` 0 means no HTTP answer. `retryable` is false only for `rejected`. */
export interface OvFailure {
  ok: false;
  status: number;
  kind: FailureKind;
  error: OvError;
  retryable: boolean;
  /** Where a redirect pointed (userinfo removed). */
  location?: string;
}

/** The outcome of a call. */
export type OvResponse<T> = OvSuccess<T> | OvFailure;

/** A raw HTTP answer, as read (the body bounded by the caller). */
export interface RawReply {
  status: number;
  /** `Location` of a redirect, if any. */
  location?: string | null;
  contentType?: string | null;
  text: string;
  /** The origin answered, for messages. */
  origin: string;
}

/**
 * The codes of a 4xx that refuse a request for good: sent again unchanged it gets the same answer, whatever an
 * admin does (NOT_FOUND only when it names a missing resource). Every other code, or none, keeps the write:
 * the table of each code the server sends and why is docs/ARCHITECTURE.md, decision 15.
 */
const FINAL_CODES = new Set([
  "INVALID_ARGUMENT",
  "INVALID_URI",
  "UNSUPPORTED_URI",
  "UNSUPPORTED_MODE",
  "SKILL_INVALID",
  "INVALID_FILTER",
  "NOT_FOUND",
]);
const AUTH_CODES = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED"]);

/** Builds a failure of `kind`. */
export function failure(kind: FailureKind, status: number, error: OvError, location?: string): OvFailure {
  return {
    ok: false,
    status,
    kind,
    error,
    retryable: kind !== "rejected",
    ...(location ? { location } : {}),
  };
}

/**
 * `f` as the client hands it out: its words (the message and code) and the place a redirect pointed to with no
 * control, escape sequence or markup (neutralize.ts) and no secret — the given `secrets`, bearer tokens, URL
 * userinfo (scrub.ts); `details`, which only the classification reads, dropped. Every failure of a request
 * passes here, so doctor, replay, status, the state, the ledger and the log all get the same clean words.
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

/** OpenViking's envelope: a JSON object whose `status` is "ok" or "error". */
export function envelopeOf(text: string): Obj | undefined {
  if (!text || !/^\s*\{/.test(text)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
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
 * The server's own words in the text of an error body — a JSON-RPC error, OpenViking's envelope, FastAPI's
 * `detail`, or plain text — at most 300 characters ("" for an empty body).
 */
export function serverMessageOf(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return "";
  let body: unknown;
  try {
    body = JSON.parse(trimmed);
  } catch {
    // plain text
  }
  return wordsOf(body) ?? trimmed.slice(0, MESSAGE_CHARS);
}

function errorOf(body: Obj, status: number): OvError {
  const e = isRecord(body.error) ? body.error : {};
  return {
    code: typeof e.code === "string" ? e.code : undefined,
    message: wordsOf(body) ?? `HTTP ${status}`,
    details: e.details,
  };
}

/** Whether an error is an upstream model provider's answer the server passes on (its state, not our request). */
function fromUpstream(error: OvError): boolean {
  return isRecord(error.details) && "upstream_message" in error.details;
}

/** Whether a 404 envelope names a missing resource (a session, a file) rather than a missing route. */
function namesMissingResource(error: OvError): boolean {
  const d = error.details;
  return isRecord(d) &&
    (typeof d.resource === "string" || typeof d.type === "string" || typeof d.uri === "string");
}

/** A short, printable description of a body that is not OpenViking's (first line, no markup). */
function sampleOf(text: string, contentType: string | null | undefined): string {
  if (!text.trim()) return "an empty body";
  const title = /<title[^>]*>([^<]{1,80})/i.exec(text)?.[1]?.trim();
  const kind = (contentType ?? "").split(";")[0].trim() || "no content type";
  return title ? `${kind} "${title}"` : kind;
}

/**
 * A success whose `result` parses with the route's `schema`, or a `not-openviking` failure naming `what`
 * was asked and the first mismatch. Such a reply is not OpenViking's answer (another server, a proxy, a
 * version that changed the route): like any reply that is not OpenViking's it drops nothing (writes stay
 * queued) and spends no retry. Writes use a schema that takes any result: only their "ok" counts.
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

/** Where a redirect points, absolute and without userinfo; "" when that is not a URL, undefined when unsaid. */
function redirectTarget(raw: RawReply): string | undefined {
  if (!raw.location) return undefined;
  try {
    return withoutUserinfo(new URL(raw.location, raw.origin).toString());
  } catch {
    return "";
  }
}

/** Classifies one HTTP answer (pure); a success carries the envelope's `result` as it came. */
export function classifyReply(raw: RawReply): OvResponse<unknown> {
  const { status } = raw;
  if (status >= 300 && status < 400) {
    const location = redirectTarget(raw);
    const to = location === undefined
      ? ""
      : location
      ? ` to ${location}`
      : " to an address that is not a URL";
    return failure("redirect", status, {
      code: "REDIRECT",
      message: `${raw.origin} redirects (HTTP ${status})${to}`,
    }, location || undefined);
  }
  const body = envelopeOf(raw.text);
  if (status === 401 || status === 403) {
    const error = body ? errorOf(body, status) : { code: "AUTH", message: `HTTP ${status}` };
    return failure("auth", status, error);
  }
  if (!body) {
    if (status >= 500 || status === 429 || status === 408) {
      return failure("server", status, { code: "HTTP", message: `HTTP ${status} from ${raw.origin}` });
    }
    return failure("not-openviking", status, {
      code: "NOT_OPENVIKING",
      message: `${raw.origin} answered HTTP ${status} with ${
        sampleOf(raw.text, raw.contentType)
      }, not an OpenViking reply`,
    });
  }
  if (body.status === "ok" && status >= 200 && status < 300) {
    // `/health` is the one route whose fields sit beside `status` instead of in `result`.
    return { ok: true, status, result: "result" in body ? body.result : body };
  }
  const error = errorOf(body, status);
  if (AUTH_CODES.has(error.code ?? "")) return failure("auth", status >= 400 ? status : 401, error);
  if (status === 405 || (status === 404 && !namesMissingResource(error) && !fromUpstream(error))) {
    return failure("missing-route", status, error);
  }
  const final = body.status === "error" && FINAL_CODES.has(error.code ?? "") && !fromUpstream(error);
  if (final && status >= 400 && status < 500) {
    // OpenViking itself refused this request for good (bad input, a session that does not exist, …).
    return failure("rejected", status, error);
  }
  // Anything else is not certainly final — a state an admin fixes, a conflict, an outage, no code at all.
  return failure("server", status >= 400 ? status : 503, error);
}
