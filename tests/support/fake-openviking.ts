/**
 * An in-memory OpenViking server on 127.0.0.1 for tests: the routes the plugin uses, request recording, and
 * per-route fault injection (status, delay, dropped connection, reply lost after the write was stored,
 * missing batch endpoint).
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { FakeMcp, type FakeMcpOptions } from "./fake-mcp.ts";
import { concatBytes } from "../../lib/bytes.ts";
import { unzipStored, zipOf } from "./zip.ts";
import { fnv1a } from "./embedding-stub.ts";

/** A request as the fake saw it. */
export interface RecordedRequest {
  seq: number;
  at: number;
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
  /** Route key, e.g. "POST /api/v1/sessions/:id/messages/batch". */
  route: string;
  /** When the server did what was asked (stored the write, read the state): a count over every request. */
  handled?: number;
  /** The success reply was sent (not lost, not a fault). */
  answered?: boolean;
}

/** A fault applied to requests whose route matches. */
export interface Fault {
  /** Route key or glob ("*" matches anything; "POST /api/v1/sessions/:id/*" matches a prefix). */
  route: string;
  /** Answer with this HTTP status (and an OpenViking error envelope with the server's code for it). */
  status?: number;
  /** Extra body for the error envelope's `error` object. */
  error?: Record<string, unknown>;
  /** Wait this long before handling. */
  delayMs?: number;
  /** Close the connection without an answer (nothing stored). */
  drop?: boolean;
  /** Store the write, then close the connection without an answer. */
  lostReply?: boolean;
  /**
   * Hold the request unanswered until the next request arrives, then handle it just before that one: a write
   * the server takes after its client gave up waiting, and before anything else is asked.
   */
  hold?: boolean;
  /**
   * Answer with exactly this (status, headers, body) instead of handling the request: an HTML page, a
   * redirect, an empty or non-JSON 200 — what a proxy or another server in front of OpenViking says.
   */
  raw?: RawReply;
  /** Apply this many times (default: until cleared). */
  times?: number;
  /** Let this many matching requests through first. */
  skip?: number;
}

/** A verbatim reply. `body` bytes are sent as they are (give `content-encoding` for compressed bodies). */
export interface RawReply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Stream this many bytes of `body` repeated (for replies larger than memory should hold). */
  repeatBytes?: number;
}

/** A gzip body that inflates to `inflatedBytes` of `fill` (a "zip bomb" reply for size-bound tests). */
export async function gzipBomb(inflatedBytes: number, fill = " "): Promise<Uint8Array> {
  const chunk = new TextEncoder().encode(fill.repeat(1 << 16));
  const stream = new ReadableStream<BufferSource>({
    pull(controller) {
      if (inflatedBytes <= 0) return controller.close();
      const n = Math.min(chunk.length, inflatedBytes);
      inflatedBytes -= n;
      controller.enqueue(chunk.subarray(0, n));
    },
  }).pipeThrough<Uint8Array<ArrayBuffer>>(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A message stored in a fake session. */
export interface StoredMessage {
  role: string;
  content?: string;
  parts?: unknown;
  turn_id?: string;
  [key: string]: unknown;
}

interface FakeSession {
  messages: StoredMessage[];
  commits: number;
  /** Messages before this index were archived by a commit (no longer in the session's context). */
  archived?: number;
  /** Where each commit's archive ends (`archive_001` holds the messages before the first of these). */
  archiveEnds?: number[];
  /** What `PATCH …/config` set (`auto_commit_policy`), as the real server stores it. */
  autoCommitPolicy?: Record<string, number>;
}

const words = (...lines: string[]): string[] => lines.join(" ").split(" ");

/** The uncommitted tokens of a session as the real server estimates them (about 4 characters a token). */
function pendingTokens(s: FakeSession): number {
  const text = s.messages.slice(s.archived ?? 0).map((m) => typeof m.content === "string" ? m.content : "");
  return Math.ceil(text.join("").length / 4);
}

/** The auto-commit fields the real server takes (`AutoCommitPolicyRequest`, extra fields forbidden). */
const POLICY_FIELDS = words(
  "pending_token_threshold message_count_threshold idle_timeout_seconds keep_recent_count",
  "min_commit_interval_seconds",
);

/** A background task, as `GET /api/v1/tasks/{id}` answers it (the real server's shape, 0.5.2). */
export interface FakeTask {
  task_id: string;
  task_type: "session_commit";
  status: "pending" | "running" | "completed" | "failed";
  resource_id: string;
  created_at: number;
  updated_at: number;
  result: Record<string, unknown> | null;
  error: string | null;
}

/** Options of the fake. */
export interface FakeOptions {
  port?: number;
  /** Require `Authorization: Bearer <apiKey>` on everything but /health. */
  apiKey?: string;
  /** `<apiKey>-<tag>` is accepted like `apiKey` (the chaos harness tells its processes apart by the tag). */
  taggedKeys?: boolean;
  /**
   * api_key mode as the real 0.5.2 server runs it (`server.root_api_key`): this root key administers — the
   * admin API, system status, tasks — and is refused on every data route with the real 403; the user keys the
   * admin API makes are accepted like `apiKey`.
   */
  rootKey?: string;
  /** /messages/batch does not exist: answer this status (404 or 405). */
  noBatch?: 404 | 405;
  /** An older server: no `/api/v1/pack/*` routes (404). */
  noPack?: boolean;
  mcp?: FakeMcpOptions;
}

/** `viking://~/…` as the server resolves it for the fake's one user. */
const own = (uri: string) => uri.replace(/^viking:\/\/~(?=\/|$)/, "viking://user/default");

const FIND_FIELDS = words(
  "query image_url target_uri context_type limit node_limit score_threshold filter include_provenance",
  "tags since until time_field level telemetry",
);
const CONTEXT_FIELDS = words(
  "query_expansion max_tokens quotas purpose detail dedup_turns exclude_uris peer_scope",
  "other_peer_penalty rewrite rewrite_max_bullets",
);
const SEARCH_FIELDS = [...FIND_FIELDS, "session_id", "mode", ...CONTEXT_FIELDS];
const PEER = /^[A-Za-z0-9_.@-]+$/;
/** The real server's words for a root key on a data route (openviking/server/auth/plugins/api_key.py). */
export const ROOT_KEY_REFUSAL = "ROOT API keys cannot access tenant-scoped data APIs in api_key mode. " +
  "Use a user/admin API key for data access, or trusted mode for upstream identity assertion.";
/** The fault of a server whose embedding model is down, as OpenViking passes it on (its search's 503). */
export const MODEL_DOWN = {
  route: "POST /api/v1/search/*",
  status: 503,
  error: {
    message: "Upstream model service unavailable: Cannot connect to host 127.0.0.1:11434 ssl:default " +
      "[Connect call failed ('127.0.0.1', 11434)]",
    details: { upstream_message: "Cannot connect to host 127.0.0.1:11434" },
  },
};
/** Routes the real server lets a root key use in api_key mode. */
const ROOT_ROUTES = /^\/api\/v1\/(system\/status$|system\/wait$|debug\/health$|admin|observer|console|tasks)/;
/** An admin route: `/api/v1/admin/accounts[/{account}/users]`. */
const ADMIN_ROUTE = /^\/api\/v1\/admin\/accounts(?:\/([^/]+)\/users)?$/;

interface FakeUser {
  role: string;
  key: string;
}

/** A user key in the real server's format: account, user and a random secret, each base64url. */
export function userKey(account: string, user: string): string {
  const b64 = (t: string) => btoa(t).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return [account, user, crypto.randomUUID().replaceAll("-", "")].map(b64).join(".");
}

/**
 * Every error code OpenViking 0.5.2 sends, with its HTTP status (`openviking/server/models.py`
 * `ERROR_CODE_TO_HTTP_STATUS`).
 */
export const SERVER_ERROR_CODES: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries({
    400: "INVALID_ARGUMENT GIT_AUTH_FAILED INVALID_URI UNSUPPORTED_URI UNSUPPORTED_MODE" +
      " SKILL_INVALID SKILL_CAPABILITY_UNAVAILABLE INVALID_FILTER",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "CONFLICT ALREADY_EXISTS ABORTED WRITE_CONFLICT",
    410: "SESSION_EXPIRED",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL NOT_INITIALIZED PROCESSING_ERROR EMBEDDING_FAILED VLM_FAILED" +
      " RESTORE_WRITEBACK_PARTIAL AGENT_OUTPUT_INVALID WRITE_FAILED REFRESH_FAILED INTERNAL_ERROR" +
      " UNKNOWN",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE MODEL_UNAVAILABLE BOT_RESTARTED NO_VECTOR_DB",
    504: "DEADLINE_EXCEEDED",
  }).flatMap(([status, codes]) => codes.split(" ").map((code) => [code, Number(status)])),
);

/**
 * The codes that refuse a write for good, the tests' copy of docs/ARCHITECTURE.md decision 15 (a 4xx naming
 * one of them.
 */
export const FINAL_CODES = words(
  "INVALID_ARGUMENT INVALID_URI UNSUPPORTED_URI UNSUPPORTED_MODE SKILL_INVALID INVALID_FILTER NOT_FOUND",
);

/** The code OpenViking gives an error of HTTP `status` (see SERVER_ERROR_CODES). */
function serverCodeFor(status: number): string {
  return Object.entries(SERVER_ERROR_CODES).find(([, s]) => s === status)?.[0] ?? "UNKNOWN";
}

/** A stored message as the server returns it (`Message.to_dict`: its text in `parts`). */
function asServerMessage(msg: StoredMessage, i: number) {
  return {
    id: `msg_${i}`,
    role: msg.role,
    parts: [{ type: "text", text: msg.content ?? "" }],
    ...(msg.turn_id !== undefined ? { turn_id: msg.turn_id } : {}),
  };
}

class HttpError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly details?: unknown) {
    super(message);
  }
}

/** The real server's 409 for an account or user the admin API holds already. */
const exists = (what: "Account" | "User", id: string) =>
  new HttpError(409, "ALREADY_EXISTS", `${what} already exists: ${id}`, {
    resource: id,
    type: what.toLowerCase(),
  });

/** The real server's 404 for a resource it does not hold (`details` naming it, and its type when given). */
function notFound(message: string, resource?: string, type?: string): HttpError {
  const details = resource === undefined ? undefined : { ...(type ? { type } : {}), resource };
  return new HttpError(404, "NOT_FOUND", message, details);
}

/** The real server's 400 for fields of `body` it does not know (its models forbid extra fields). */
function forbidExtra(body: Record<string, unknown>, allowed: string[]): void {
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length) {
    throw new HttpError(400, "INVALID_ARGUMENT", `Extra inputs are not permitted: ${extra.join(", ")}`, {
      validation_errors: extra.map((f) => ({
        loc: ["body", f],
        msg: "Extra inputs are not permitted",
        type: "extra_forbidden",
      })),
    });
  }
}

function requireObject(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    throw new HttpError(400, "INVALID_ARGUMENT", "body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

/** Session routes accept unknown fields and any role (the real 0.5.2 server does); types are still checked. */
function validateMessage(m: unknown): StoredMessage {
  const msg = requireObject(m);
  if (typeof msg.role !== "string") throw new HttpError(400, "INVALID_ARGUMENT", "role is required");
  if (typeof msg.content !== "string" && msg.parts === undefined) {
    throw new HttpError(400, "INVALID_ARGUMENT", "content or parts is required");
  }
  if (msg.turn_id !== undefined && typeof msg.turn_id !== "string") {
    throw new HttpError(400, "INVALID_ARGUMENT", "turn_id must be a string");
  }
  const lone = typeof msg.content === "string" ? /\p{Cs}/u.exec(msg.content) : null; // Python cannot encode it
  if (lone) {
    const [code, at] = [
      lone[0].charCodeAt(0).toString(16),
      [...(msg.content as string).slice(0, lone.index)].length,
    ];
    throw new HttpError(
      400,
      "INVALID_ARGUMENT",
      `'utf-8' codec can't encode character '\\u${code}' in position ${at}: surrogates not allowed`,
    );
  }
  return msg as StoredMessage;
}

/** The default memory as the context face lists it (the real 0.5.2 server's entry shape). */
export const DEFAULT_ENTRY = {
  uri: "viking://user/default/memories/preferences/indent.md",
  category: "preferences",
  score: 0.87,
  detail: "abstract",
  text: "User prefers tabs over spaces.",
  origin: "self",
};

const lineOf = (e: typeof DEFAULT_ENTRY) => `- ${e.text} (${e.uri})`;

/** The default memory's digest line. */
export const FAKE_MEMORY_LINE = lineOf(DEFAULT_ENTRY);

/** What the prompt hook prints for the default memory alone (a session's first prompt). */
export const FAKE_DIGEST = `<openviking-context>\n${FAKE_MEMORY_LINE}\n</openviking-context>`;

/** A memory the fake invents for a query (see {@link echoContext}): one per distinct query. */
export function queryEntry(query: string): typeof DEFAULT_ENTRY {
  return {
    ...DEFAULT_ENTRY,
    uri: `viking://user/default/memories/events/q-${fnv1a(query).toString(16).padStart(8, "0")}.md`,
    category: "events",
    score: 0.7,
    text: `Earlier the user asked: ${query}`,
  };
}

/** The digest line of {@link queryEntry}. */
export function queryMemoryLine(query: string): string {
  return lineOf(queryEntry(query));
}

/**
 * A context face that answers every query with the default memory and one memory of that query — and, like
 * `context`, ignores `exclude_uris`: only the hook's own filter keeps a memory from coming twice.
 */
export function echoContext(body: Record<string, unknown>): Record<string, unknown> {
  return {
    entries: [DEFAULT_ENTRY, queryEntry(String(body.query ?? ""))],
    rendered: "",
    digest: "",
    stats: {},
  };
}

/** The fake server. */
export class FakeOpenViking {
  readonly requests: RecordedRequest[] = [];
  readonly sessions = new Map<string, FakeSession>();
  faults: Fault[] = [];
  /** The context face's answer (`result` of /search/search with mode=context). */
  context: Record<string, unknown> = {
    entries: [DEFAULT_ENTRY],
    rendered: `<memory uri="${DEFAULT_ENTRY.uri}" type="preferences" score="0.87" detail="abstract">\n` +
      `${DEFAULT_ENTRY.text}\n</memory>`,
    digest: "",
    stats: { used_tokens: 20 },
  };
  /** When set, the context face's answer for each request body instead of `context` (ignores exclude_uris like `context`). */
  contextFor?: (body: Record<string, unknown>) => Record<string, unknown>;
  /** /search/find's answer per target_uri. */
  findResults: Record<string, unknown[]> = {
    "viking://~/memories": [
      {
        context_type: "memory",
        uri: "viking://user/default/memories/preferences/indent.md",
        level: 2,
        score: 0.8,
        abstract: "User prefers tabs over spaces.",
      },
    ],
    "viking://~/skills": [],
  };
  /**
   * What a commit's task becomes: "completed" (default; with a memory diff naming `memoryAdds`), "failed"
   * (with `taskError`), or "pending"/"running" (it stays so until a test changes `tasks`).
   */
  taskOutcome: FakeTask["status"] = "completed";
  taskError = "memory extraction failed: the model returned no JSON";
  /** Memories the next completed commit reports as added (`memory_diff.json`'s `operations.adds`). */
  memoryAdds: { uri: string; memory_type: string; after: string }[] = [{
    uri: "viking://user/default/memories/preferences/default/tabs.md",
    memory_type: "preferences",
    after: "- The user prefers tabs over spaces",
  }];
  /** Commit tasks by id. */
  readonly tasks = new Map<string, FakeTask>();
  /** File contents for /content/read. */
  files = new Map<string, string>([
    ["viking://user/default/memories/profile.md", "# Profile\nName: Test User\nLikes: tabs"],
  ]);
  /** A file's `modTime` for /fs/tree (default: 2026-01-01). */
  modTimes = new Map<string, string>();
  /** Uploads by `temp_file_id` (the file's bytes). */
  readonly uploads = new Map<string, Uint8Array>();
  /** Directory listings for /fs/ls. */
  dirs = new Map<string, unknown[]>([
    ["viking://user", [{ name: "default", isDir: true, uri: "viking://user/default" }]],
    [
      "viking://user/default/memories/preferences",
      [{
        name: "indent.md",
        rel_path: "indent.md",
        isDir: false,
        uri: "viking://user/default/memories/preferences/indent.md",
        abstract: "Tabs over spaces",
      }],
    ],
    ["viking://user/default/memories/entities", []],
  ]);
  readonly mcp: FakeMcp;
  /** api_key mode (`rootKey`): the accounts and their users, as the admin API made them. */
  readonly accounts = new Map<string, Map<string, FakeUser>>([["default", new Map()]]);
  /** Called synchronously as each request arrives (tests observe ordering with it). */
  onRequest?: (request: RecordedRequest) => void;
  /** Messages stored whose reply never reached the client (the only source of allowed duplicates). */
  lostReplyMessages = 0;
  private server!: Server;
  /** The connections a hung fake holds unanswered ({@link hang}). */
  private hung: Set<Socket> | undefined;
  private seq = 0;
  private handledCount = 0;
  /** Requests a `hold` fault keeps waiting: released when the next request arrives. */
  private holding: (() => void)[] = [];
  url = "";
  port = 0;

  private constructor(readonly options: FakeOptions) {
    this.mcp = new FakeMcp(options.mcp ?? {});
  }

  /** Starts a fake on 127.0.0.1 (a free port unless one is given). */
  static async start(options: FakeOptions = {}): Promise<FakeOpenViking> {
    const fake = new FakeOpenViking(options);
    fake.server = createServer((req, res) => {
      if (fake.hung) return void fake.hung.add(req.socket);
      void fake.handle(req, res).catch(() => {});
    });
    await new Promise<void>((resolve) => fake.server.listen(options.port ?? 0, "127.0.0.1", resolve));
    fake.port = (fake.server.address() as AddressInfo).port;
    fake.url = `http://127.0.0.1:${fake.port}`;
    return fake;
  }

  /** Closes the fake at the end of an `await using` scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Stops the server and drops open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections?.();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Server down: refuses connections (open ones cut) until {@link up}; what it holds is kept. */
  down(): Promise<void> {
    return this.close();
  }

  /** Server hung: takes connections and never answers them until {@link up}. */
  hang(): void {
    this.hung ??= new Set();
  }

  /** Answers again, on the same port; the connections a hung fake held are cut. */
  async up(): Promise<void> {
    for (const socket of this.hung ?? []) socket.destroy();
    this.hung = undefined;
    if (this.server.listening) return;
    await new Promise<void>((resolve) => this.server.listen(this.port, "127.0.0.1", resolve));
  }

  /** Adds a fault. */
  fault(f: Fault): void {
    this.faults.push({ ...f });
  }

  /** Removes every fault. */
  clearFaults(): void {
    this.faults = [];
  }

  /** Requests whose route key matches `route` (exact key or glob). */
  requestsTo(route: string): RecordedRequest[] {
    return this.requests.filter((r) => routeMatches(route, r.route));
  }

  /** Messages stored in session `id` (empty when none). */
  messages(id: string): StoredMessage[] {
    return this.sessions.get(id)?.messages ?? [];
  }

  private takeFault(route: string): Fault | undefined {
    const i = this.faults.findIndex((f) =>
      routeMatches(f.route, route) && (f.times === undefined || f.times > 0)
    );
    if (i < 0) return undefined;
    const f = this.faults[i];
    if (f.skip) {
      f.skip--;
      return undefined;
    }
    if (f.times !== undefined) f.times--;
    return f;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Uint8Array[] = [];
    for await (const c of req) chunks.push(c as Uint8Array);
    const raw = concatBytes(chunks);
    const text = new TextDecoder().decode(raw);
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const headers: Record<string, string> = Object.fromEntries(
      Object.entries(req.headers).map((
        [k, v],
      ) => [k.toLowerCase(), Array.isArray(v) ? v.join(", ") : String(v ?? "")]),
    );
    const multipart = (req.headers["content-type"] ?? "").startsWith("multipart/");
    let [body, badJson]: [unknown, boolean] = [!text ? undefined : multipart ? raw : text, false];
    try {
      if (text && !multipart) body = JSON.parse(text);
    } catch {
      badJson = true;
    }
    const method = req.method ?? "GET";
    const route = `${method} ${routeOf(url.pathname)}`;
    const record: RecordedRequest = {
      seq: ++this.seq,
      at: Date.now(),
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
      route,
    };
    this.requests.push(record);
    this.onRequest?.(record);
    const held = this.holding.splice(0);
    if (held.length) {
      for (const release of held) release();
      await new Promise((r) => setTimeout(r, 0)); // the held ones are handled first
    }
    const fault = this.takeFault(route);
    if (fault?.hold) await new Promise<void>((r) => this.holding.push(r));
    if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
    if (fault?.drop) return void req.socket.destroy();
    if (fault?.raw) return await sendVerbatim(res, fault.raw);
    if (fault?.status) {
      return send(res, fault.status, {
        status: "error",
        error: { code: serverCodeFor(fault.status), message: `injected ${fault.status}`, ...fault.error },
      });
    }
    try {
      if (badJson) throw new HttpError(400, "INVALID_ARGUMENT", "body is not JSON");
      if (url.pathname === "/mcp") {
        this.checkAuth(headers, url.pathname);
        const reply = await this.mcp.handle(method, headers, body);
        if (fault?.lostReply) return void req.socket.destroy();
        return sendRaw(res, reply.status, reply.headers, reply.body);
      }
      const who = url.pathname !== "/health" || headers.authorization
        ? this.checkAuth(headers, url.pathname)
        : undefined;
      const peer = headers["x-openviking-actor-peer"];
      if (peer !== undefined && !PEER.test(peer)) {
        throw new HttpError(400, "INVALID_ARGUMENT", "invalid actor peer");
      }
      if (method === "POST" && url.pathname === "/api/v1/pack/export" && !this.options.noPack) {
        const root = own(String(requireObject(body).uri));
        const files = Object.fromEntries([...this.files].filter(([u]) => u.startsWith(`${root}/`)));
        if (!Object.keys(files).length) throw notFound(`not found: ${root}`, root);
        const base = root.slice(root.lastIndexOf("/") + 1);
        const entries = Object.entries(files).map(([u, t]) => [base + u.slice(root.length), t]);
        const zip = zipOf({ [`${base}/`]: "", ...Object.fromEntries(entries) });
        return sendRaw(res, 200, { "content-type": "application/zip" }, zip);
      }
      const admin = ADMIN_ROUTE.exec(url.pathname);
      const result = admin ? this.admin(method, admin, body, who) : this.route(method, url, body, who);
      record.handled = ++this.handledCount;
      if (fault?.lostReply || req.socket.destroyed) {
        const batch = (body as { messages?: unknown[] } | undefined)?.messages;
        this.lostReplyMessages += Array.isArray(batch)
          ? batch.length
          : url.pathname.endsWith("/messages")
          ? 1
          : 0;
        return void req.socket.destroy();
      }
      record.answered = true;
      if (url.pathname === "/health") return send(res, 200, result);
      return send(res, 200, { status: "ok", result });
    } catch (error) {
      if (error instanceof HttpError) {
        const details = error.details ? { details: error.details } : {};
        const reply = { code: error.code, message: error.message, ...details };
        return send(res, error.status, { status: "error", result: null, error: reply });
      }
      return send(res, 500, { status: "error", error: { code: "INTERNAL", message: String(error) } });
    }
  }

  /** Who the request's key is (undefined: no key needed), or the real server's 401/403 for it on `path`. */
  private checkAuth(
    headers: Record<string, string>,
    path: string,
  ): { user: string; root: boolean } | undefined {
    const { apiKey, rootKey, taggedKeys } = this.options;
    if (!apiKey && !rootKey) return undefined;
    const auth = headers.authorization;
    const key = auth?.startsWith("Bearer ") ? auth.slice(7) : undefined;
    if (rootKey && key === rootKey) {
      if (path !== "/health" && !ROOT_ROUTES.test(path)) {
        throw new HttpError(403, "PERMISSION_DENIED", ROOT_KEY_REFUSAL);
      }
      return { user: "default", root: true };
    }
    const tagged = taggedKeys && key?.startsWith(`${apiKey}-`);
    if (key !== undefined && (key === apiKey || tagged)) return { user: "default", root: false };
    for (const users of this.accounts.values()) {
      for (const [user, u] of users) if (u.key === key) return { user, root: false };
    }
    throw new HttpError(
      401,
      "UNAUTHENTICATED",
      key === undefined ? "Missing API Key when resolving identity." : "Invalid API key",
    );
  }

  /** The admin API's account and user routes, as the real 0.5.2 server answers them (root only here). */
  private admin(
    method: string,
    m: RegExpExecArray,
    body: unknown,
    who: { root: boolean } | undefined,
  ): unknown {
    if (!who?.root) throw new HttpError(403, "PERMISSION_DENIED", "Requires role: root");
    const account = m[1] && decodeURIComponent(m[1]);
    const b = method === "POST" ? requireObject(body ?? {}) : {};
    const users = account === undefined ? undefined : this.accounts.get(account);
    if (account !== undefined && !users) throw notFound(`Account not found: ${account}`, account, "account");
    const add = (to: Map<string, FakeUser>, acct: string, id: string, role: string) => {
      to.set(id, { role, key: userKey(acct, id) });
      return to.get(id)!.key;
    };
    if (method === "POST" && account === undefined) {
      const [id, admin] = [String(b.account_id ?? ""), String(b.admin_user_id ?? "")];
      if (this.accounts.has(id)) throw exists("Account", id);
      this.accounts.set(id, new Map());
      return {
        account_id: id,
        admin_user_id: admin,
        user_key: add(this.accounts.get(id)!, id, admin, "admin"),
      };
    }
    if (method === "POST" && users) {
      const id = String(b.user_id ?? "");
      if (users.has(id)) throw exists("User", id);
      return {
        account_id: account,
        user_id: id,
        user_key: add(users, account!, id, String(b.role ?? "user")),
      };
    }
    throw new HttpError(405, "METHOD_NOT_ALLOWED", "Method Not Allowed");
  }

  private session(id: string, create: boolean): FakeSession {
    let s = this.sessions.get(id);
    if (!s && create) this.sessions.set(id, s = { messages: [], commits: 0 });
    if (!s) throw notFound(`Session not found: ${id}`, id, "session");
    return s;
  }

  private route(method: string, url: URL, body: unknown, who?: { user: string; root: boolean }): unknown {
    const p = url.pathname;
    const q = url.searchParams;
    if (method === "GET" && p === "/health") {
      return {
        status: "ok",
        healthy: true,
        version: "0.5.2-fake",
        auth_mode: this.options.apiKey || this.options.rootKey ? "api_key" : "dev",
        ...(who ? { user_id: who.user, role: who.root ? "root" : "user" } : {}),
      };
    }
    if (method === "GET" && p === "/api/v1/system/status") {
      return { initialized: true, user: who?.user ?? "default" };
    }
    if (method === "POST" && p === "/api/v1/search/search") {
      const b = requireObject(body);
      forbidExtra(b, SEARCH_FIELDS);
      if (b.mode === "context" && b.target_uri !== undefined) {
        throw new HttpError(400, "INVALID_ARGUMENT", "target_uri is not allowed with mode=context");
      }
      if (b.mode !== "context" && CONTEXT_FIELDS.some((f) => f in b)) {
        throw new HttpError(400, "INVALID_ARGUMENT", "context fields require mode=context");
      }
      if (typeof b.query !== "string") throw new HttpError(400, "INVALID_ARGUMENT", "query is required");
      if (b.mode === "context") return this.contextFor?.(b) ?? this.context;
      return { memories: this.findResults["viking://~/memories"] ?? [], resources: [], skills: [], total: 1 };
    }
    if (method === "POST" && p === "/api/v1/search/find") {
      const b = requireObject(body);
      forbidExtra(b, FIND_FIELDS);
      const target = typeof b.target_uri === "string" ? b.target_uri : "";
      const items = this.findResults[target] ?? [];
      return {
        memories: target.includes("memories") ? items : [],
        resources: [],
        skills: target.includes("skills") ? items : [],
        total: items.length,
      };
    }
    if (method === "GET" && p === "/api/v1/fs/ls") {
      const uri = q.get("uri") ?? "";
      const entries = this.dirs.get(uri.replace(/\/+$/, ""));
      if (!entries) throw notFound(`${uri} not found`);
      return entries;
    }
    if (method === "GET" && p === "/api/v1/fs/tree") {
      const uri = own(q.get("uri") ?? "");
      const under = [...this.files.keys()].filter((u) => u.startsWith(`${uri}/`));
      if (!under.length) throw notFound(`${uri} not found`, uri);
      const modTime = (uri: string) => this.modTimes.get(uri) ?? "2026-01-01T00:00:00Z";
      return under.map((uri) => ({ uri, isDir: false, modTime: modTime(uri) }));
    }
    if (method === "DELETE" && p === "/api/v1/fs") {
      const uri = own(q.get("uri") ?? "");
      return { uri, estimated_deleted_count: this.files.delete(uri) ? 1 : 0 };
    }
    if (method === "POST" && p === "/api/v1/resources/temp_upload") {
      const id = `upload_${this.uploads.size + 1}.ovpack`;
      this.uploads.set(id, filePart(body instanceof Uint8Array ? body : new Uint8Array()));
      return { temp_file_id: id };
    }
    if (method === "POST" && p === "/api/v1/pack/import" && !this.options.noPack) {
      const b = requireObject(body);
      const entries = unzipStored(this.uploads.get(String(b.temp_file_id)) ?? new Uint8Array());
      const names = Object.keys(entries);
      const base = names[0]?.split("/")[0];
      if (!base || names.some((n) => n.split("/")[0] !== base)) {
        throw new HttpError(400, "INVALID_ARGUMENT", "Invalid ovpack: expected one root directory");
      }
      const root = `${own(String(b.parent))}/${base}`;
      const held = [...this.files.keys()].filter((u) => u.startsWith(`${root}/`));
      if (held.length && b.on_conflict !== "overwrite") {
        throw new HttpError(409, "CONFLICT", `Resource already exists at ${root}.`, { resource: root });
      }
      for (const u of held) this.files.delete(u);
      for (const [n, text] of Object.entries(entries)) {
        if (!n.endsWith("/")) this.files.set(root + n.slice(base.length), text);
      }
      return { uri: root };
    }
    if (method === "GET" && p === "/api/v1/content/read") {
      const uri = own(q.get("uri") ?? "");
      const content = this.files.get(uri);
      if (content === undefined) throw notFound(`File not found: ${uri}`, uri, "file");
      return content;
    }
    if (method === "GET" && p === "/api/v1/tasks") {
      const [rid, type] = [q.get("resource_id"), q.get("task_type")];
      const limit = Number(q.get("limit") ?? 50);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
        throw new HttpError(422, "INVALID_ARGUMENT", "limit must be an integer from 1 to 200");
      }
      return [...this.tasks.values()].filter((t) =>
        (!rid || t.resource_id === rid) && (!type || t.task_type === type)
      )
        .sort((a, b) => b.created_at - a.created_at || (a.task_id < b.task_id ? 1 : -1)).slice(0, limit);
    }
    const task = /^\/api\/v1\/tasks\/([^/]+)$/.exec(p);
    if (task && method === "GET") {
      const t = this.tasks.get(decodeURIComponent(task[1]));
      if (!t) throw notFound("Task not found or expired", task[1], "task");
      return t;
    }
    const ctx = /^\/api\/v1\/sessions\/([^/]+)\/context$/.exec(p);
    if (ctx && method === "GET") {
      const s = this.session(decodeURIComponent(ctx[1]), false);
      const active = s.messages.slice(s.archived ?? 0);
      return { messages: active.map(asServerMessage) };
    }
    const meta = /^\/api\/v1\/sessions\/([^/]+)$/.exec(p);
    if (meta && method === "GET") {
      const id = decodeURIComponent(meta[1]);
      const s = this.session(id, false);
      return {
        session_id: id,
        uri: `viking://session/default/${id}`,
        message_count: s.messages.length - (s.archived ?? 0),
        commit_count: s.commits,
      };
    }
    const archive = /^\/api\/v1\/sessions\/([^/]+)\/archives\/archive_(\d+)$/.exec(p);
    if (archive && method === "GET") {
      const s = this.session(decodeURIComponent(archive[1]), false);
      const n = Number(archive[2]);
      const ends = s.archiveEnds ?? [];
      if (n < 1 || n > ends.length) {
        throw notFound(`Archive archive_${archive[2]} not found`); // 0.5.2 names nothing here
      }
      const messages = s.messages.slice(n > 1 ? ends[n - 2] : 0, ends[n - 1]);
      const id = `archive_${archive[2]}`;
      return { archive_id: id, abstract: "", overview: "", messages: messages.map(asServerMessage) };
    }
    const config = /^\/api\/v1\/sessions\/([^/]+)\/config$/.exec(p);
    if (config && method === "PATCH") {
      const b = requireObject(body);
      forbidExtra(b, ["auto_commit_policy", "memory_extraction_config", "telemetry"]);
      const s = this.session(decodeURIComponent(config[1]), false);
      const policy = requireObject(b.auto_commit_policy);
      forbidExtra(policy, POLICY_FIELDS);
      const idle = policy.idle_timeout_seconds;
      if (idle !== undefined && (typeof idle !== "number" || (idle !== 0 && idle < 300))) {
        throw new HttpError(400, "INVALID_ARGUMENT", "idle_timeout_seconds must be 0 or at least 300");
      }
      s.autoCommitPolicy = { ...s.autoCommitPolicy, ...policy as Record<string, number> };
      return { session_id: decodeURIComponent(config[1]), auto_commit_policy: s.autoCommitPolicy };
    }
    const m = /^\/api\/v1\/sessions\/([^/]+)(\/messages(?:\/batch)?|\/commit)?$/.exec(p);
    if (m && method === "POST") {
      const id = decodeURIComponent(m[1]);
      if (m[2]?.startsWith("/messages")) {
        const batch = m[2] === "/messages/batch";
        if (batch && this.options.noBatch) {
          throw new HttpError(this.options.noBatch, "NOT_FOUND", "Not Found");
        }
        const list = batch ? requireObject(body).messages : [body];
        if (!Array.isArray(list)) throw new HttpError(400, "INVALID_ARGUMENT", "messages must be a list");
        if (list.length > 100) throw new HttpError(400, "INVALID_ARGUMENT", "at most 100 messages");
        const msgs = list.map(validateMessage);
        const s = this.session(id, true);
        s.messages.push(...msgs);
        const added = batch ? { added: msgs.length } : {};
        return {
          session_id: id,
          message_count: s.messages.length,
          ...added,
          pending_tokens: pendingTokens(s),
        };
      }
      if (m[2] === "/commit") {
        if (body !== undefined) requireObject(body);
        const s = this.session(id, false);
        if (s.messages.length === (s.archived ?? 0)) {
          return { session_id: id, status: "skipped", archived: false, reason: "no_messages", task_id: null };
        }
        s.commits++;
        s.archived = s.messages.length;
        s.archiveEnds = [...(s.archiveEnds ?? []), s.messages.length];
        const taskId = `task-${id}-${s.commits}`;
        const n = String(s.commits).padStart(3, "0");
        const archive = `viking://user/default/sessions/${id}/history/archive_${n}`;
        const diffUri = `${archive}/memory_diff.json`;
        const [status, now] = [this.taskOutcome, Date.now() / 1000];
        const extracted = { memories_extracted: { memory_write: this.memoryAdds.length } };
        const result = { session_id: id, archive_uri: archive, ...extracted, memory_diff_uri: diffUri };
        const [done, error] = [status === "completed", status === "failed" ? this.taskError : null];
        const task = { task_id: taskId, task_type: "session_commit", status, resource_id: id } as const;
        this.tasks.set(taskId, {
          ...task,
          created_at: now,
          updated_at: now,
          result: done ? result : null,
          error,
        });
        const operations = { adds: this.memoryAdds, updates: [], deletes: [] };
        if (done) this.files.set(diffUri, JSON.stringify({ archive_uri: archive, operations }));
        return { session_id: id, status: "accepted", task_id: taskId, archive_uri: archive, archived: true };
      }
    }
    throw notFound("Not Found");
  }
}

/** Normalises a path to a route key (session ids become ":id"). */
function routeOf(path: string): string {
  return path.replace(/^\/api\/v1\/sessions\/[^/]+/, "/api/v1/sessions/:id");
}

function routeMatches(pattern: string, route: string): boolean {
  if (pattern === "*" || pattern === route) return true;
  if (pattern.endsWith("*")) return route.startsWith(pattern.slice(0, -1));
  return false;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, { "content-type": "application/json" }, JSON.stringify(body));
}

async function sendVerbatim(res: ServerResponse, raw: RawReply): Promise<void> {
  res.writeHead(raw.status, { ...raw.headers, connection: "close" });
  const body = typeof raw.body === "string"
    ? new TextEncoder().encode(raw.body)
    : raw.body ?? new Uint8Array();
  if (raw.repeatBytes === undefined) return void res.end(body);
  for (let sent = 0; sent < raw.repeatBytes && !res.destroyed && body.length > 0; sent += body.length) {
    if (!res.write(body)) await new Promise((r) => res.once("drain", r));
  }
  res.end();
}

/** The file of multipart body `body`: the bytes between its part's headers and the closing boundary. */
function filePart(body: Uint8Array): Uint8Array {
  const latin = Array.from(body, (b) => String.fromCharCode(b)).join("");
  return body.slice(latin.indexOf("\r\n\r\n") + 4, latin.lastIndexOf("\r\n--"));
}

function sendRaw(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Uint8Array,
): void {
  res.writeHead(status, { ...headers, connection: "close" });
  res.end(body);
}
