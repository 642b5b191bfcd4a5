/**
 * The one OpenViking HTTP client: auth and identity headers, a per-request timeout inside a caller's time
 * budget, the `{status, result | error}` envelope, and the retryable rule. It never logs and never puts a
 * credential into an error message.
 */

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

/** An error as the server (or the transport) reported it. */
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

/** A failed call; `status` 0 means no HTTP answer (network error, timeout, budget spent). */
export interface OvFailure {
  ok: false;
  status: number;
  error: OvError;
  retryable: boolean;
}

/** The outcome of a call. */
export type OvResponse<T> = OvSuccess<T> | OvFailure;

/** Retryable: no status, 408, 429, 5xx, or 409 that the server marks retryable. 4xx otherwise not. */
export function isRetryable(status: number, error?: OvError): boolean {
  if (!status) return true;
  if (status === 408 || status === 429 || status >= 500) return true;
  if (status === 409) {
    const details = error?.details;
    return typeof details === "object" && details !== null &&
      (details as Record<string, unknown>).retryable === true;
  }
  return false;
}

/** Connection and identity of a client. */
export interface ClientOptions {
  baseUrl: string;
  apiKey?: string;
  account?: string;
  user?: string;
  /** Default `X-OpenViking-Actor-Peer` ("" = none). */
  peerId?: string;
  userAgent: string;
  /** Per-request timeout (ms). */
  timeoutMs: number;
  /** Injected fetch, for tests. */
  fetch?: typeof fetch;
}

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
}

/** Requests shorter than this are not worth starting when the budget is nearly spent. */
export const MIN_REQUEST_MS = 50;

/** An OpenViking client bound to one configuration. */
export interface OpenVikingClient {
  readonly options: ClientOptions;
  request<T = unknown>(method: string, path: string, options?: RequestOptions): Promise<OvResponse<T>>;
}

/** Headers every OpenViking request carries. */
export function buildHeaders(
  options: ClientOptions,
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

const CODE_STATUS: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  ALREADY_EXISTS: 409,
  ABORTED: 409,
  SESSION_EXPIRED: 410,
  FAILED_PRECONDITION: 412,
  RESOURCE_EXHAUSTED: 429,
  UNAVAILABLE: 503,
};

/** The HTTP status a server error code stands for (an error envelope inside a 2xx reply). */
function statusOfCode(code: string | undefined): number {
  return (code && CODE_STATUS[code]) || 500;
}

function failure(status: number, error: OvError): OvFailure {
  return { ok: false, status, error, retryable: isRetryable(status, error) };
}

function errorFromBody(body: unknown, status: number): OvError {
  const obj = body && typeof body === "object" ? body as Record<string, unknown> : {};
  const e = obj.error;
  if (e && typeof e === "object") {
    const err = e as Record<string, unknown>;
    return {
      code: typeof err.code === "string" ? err.code : undefined,
      message: typeof err.message === "string" ? err.message : `HTTP ${status}`,
      details: err.details,
    };
  }
  if (typeof e === "string") return { message: e };
  if (typeof obj.detail === "string") return { message: obj.detail };
  return { message: `HTTP ${status}` };
}

/** Creates a client. */
export function createClient(options: ClientOptions): OpenVikingClient {
  const doFetch = options.fetch ?? fetch;
  const base = options.baseUrl.replace(/\/+$/, "");
  return {
    options,
    async request<T>(method: string, path: string, req: RequestOptions = {}): Promise<OvResponse<T>> {
      let timeout = req.timeoutMs ?? options.timeoutMs;
      if (req.budget) {
        const left = req.budget.remaining();
        if (left < MIN_REQUEST_MS) return failure(0, { code: "BUDGET_SPENT", message: "time budget spent" });
        timeout = Math.min(timeout, left);
      }
      const url = new URL(base + path);
      for (const [k, v] of Object.entries(req.query ?? {})) {
        if (v !== undefined) url.searchParams.set(k, String(v));
      }
      const hasBody = req.body !== undefined;
      const signal = AbortSignal.timeout(Math.max(1, timeout));
      let response: Response;
      try {
        response = await doFetch(url, {
          method,
          headers: buildHeaders(options, req.peerId, hasBody),
          body: hasBody ? JSON.stringify(req.body) : undefined,
          signal,
          redirect: "manual",
        });
      } catch (error) {
        const timedOut = signal.aborted;
        return failure(0, {
          code: timedOut ? "TIMEOUT" : "NETWORK",
          message: timedOut
            ? `no answer from ${url.origin} within ${timeout} ms`
            : `cannot reach ${url.origin}: ${(error as Error).message}`,
        });
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        return failure(0, {
          code: "NETWORK",
          message: `reply from ${url.origin} was cut: ${(error as Error).message}`,
        });
      }
      let body: unknown = undefined;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const envelopeError = body && typeof body === "object" &&
        (body as Record<string, unknown>).status === "error";
      if (!response.ok || envelopeError) {
        const error = errorFromBody(body, response.status);
        return failure(response.ok ? statusOfCode(error.code) : response.status, error);
      }
      if (body === undefined && text) {
        return failure(response.status, {
          code: "BAD_REPLY",
          message: `reply from ${url.origin} is not JSON`,
        });
      }
      const obj = body && typeof body === "object" ? body as Record<string, unknown> : undefined;
      const result = (obj && "result" in obj ? obj.result : body) as T;
      return { ok: true, status: response.status, result };
    },
  };
}
