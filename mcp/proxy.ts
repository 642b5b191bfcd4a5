/** The stdio ↔ Streamable HTTP proxy on the MCP SDK's client transport: `handle` client messages, `send` out. */

// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type {
  JSONRPCError,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResponse,
} from "@modelcontextprotocol/sdk/types.js";
import { setTimeout as delay } from "node:timers/promises";
import type { Logger } from "../lib/log.ts";
import { isRecord } from "../lib/parsed.ts";
import { withoutUserinfo } from "../lib/redact.ts";
import { VERSION } from "../lib/version.ts";
import { buildHeaders, readBody, serverMessageOf } from "../openviking/client.ts";
import { type Config, keyFor } from "../openviking/config.ts";
import { BUILTIN_TOOLS, offeredTools } from "../memory/tools.ts";
import { type Failure, failureError } from "./errors.ts";
import { MAX_DEPTH, neutralized, redacted, REDACTED_PARAMS } from "./gate.ts";

/** The production bounds (decision 44): times in ms; bytes as inflated, of a JSON body or SSE event, a stream. */
export const PROXY_LIMITS = {
  startupMs: 10_000,
  toolCallMs: 600_000,
  silenceMs: 30_000,
  offlineStartMs: 2_000,
  replyBytes: 16 << 20,
  streamBytes: 64 << 20,
};
type ProxyLimits = typeof PROXY_LIMITS;

/** The most read of an error page or redirect body. */
const ERROR_BODY_BYTES = 64 * 1024;

/** One exchange's time limits (ms): headers; a body or SSE stream without a byte; all. */
type Timing = { headersMs: number; bodyIdleMs: number; streamIdleMs: number; totalMs: number };

/** The time limits of one exchange of `method` ("": a notification or a response). */
export function exchangeTiming(method: string, timeoutMs: number, limits = PROXY_LIMITS): Timing {
  if (method === "initialize" || method === "tools/list") {
    const ms = Math.min(timeoutMs, limits.startupMs);
    return { headersMs: ms, bodyIdleMs: ms, streamIdleMs: ms, totalMs: ms };
  }
  const totalMs = Math.max(timeoutMs, limits.toolCallMs);
  // A tool call fails with the proxy's words before Kimi gives up with none: no byte for silenceMs, at most.
  const silence = limits.silenceMs;
  return method === "tools/call"
    ? { headersMs: silence, bodyIdleMs: Math.min(timeoutMs, silence), streamIdleMs: silence, totalMs }
    : { headersMs: timeoutMs, bodyIdleMs: timeoutMs, streamIdleMs: Math.max(timeoutMs, silence), totalMs };
}

/** The loaded configuration, the actor peer ("": none), and why memory is off in the workspace (kimi/gates.ts gateReason; "" or absent: on). */
type ProxySettings = { config: Config; peerId: string; off?: string };

/** Protocol version sent before an initialize result told better (what OpenViking speaks). */
const DEFAULT_PROTOCOL_VERSION = "2025-06-18";
const KNOWN_PROTOCOL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/** The version an offline `initialize` answers: the client's ask when known and no newer than OpenViking's. */
export function offlineProtocolVersion(asked: unknown): string {
  const known = typeof asked === "string" && KNOWN_PROTOCOL_VERSIONS.includes(asked);
  return known && asked <= DEFAULT_PROTOCOL_VERSION ? asked : DEFAULT_PROTOCOL_VERSION;
}

function offlineReason(f: Failure): string {
  if (f.kind === "auth") return `refused the credentials (HTTP ${f.status})`;
  if ("status" in f) return `answered HTTP ${f.status} instead of an MCP result`;
  if (f.kind === "too-large") return "sent a reply larger than the proxy reads";
  return "ms" in f ? "did not answer in time" : "was not reachable";
}

/** The short cause of a fetch error, without Deno's "error sending request for url (…)" prefix or userinfo. */
export function networkCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return withoutUserinfo(message.replace(/^error sending request for url \([^)]*\):\s*/i, "")) ||
    "unknown network error";
}

const idKey = (id: string | number) => `${typeof id}:${id}`;

const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }).catch(() => {});

/** Resolves once every task settled, or after `ms`. */
async function settledWithin(tasks: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  const done = new AbortController();
  await Promise.race([Promise.allSettled([...tasks]), sleep(ms, done.signal)]);
  done.abort();
}

/** `reload`: settings afresh (a refused key); `send`: to the client; `paused`: the breaker is open. */
export type ProxyOptions = {
  settings: ProxySettings;
  reload?: () => Promise<ProxySettings>;
  send: (message: JSONRPCMessage) => Promise<void>;
  log: Logger;
  limits?: Partial<ProxyLimits>;
  paused?: () => Promise<boolean>;
  prints?: () => Promise<ReadonlySet<string>>;
};

type Outcome = JSONRPCMessage | Failure;
const failed = (out: Outcome): out is Failure => "kind" in out;

/** A request waiting for its response; its fetch records what went wrong (`failure`: a redirect not followed). */
type Pending = {
  timing: Timing;
  signal: AbortSignal;
  settle(outcome: Outcome): void;
  failure?: Failure;
  status?: number;
  sse?: boolean;
  sample?: string;
};

/** `free` slots, first come first served: a slot's release, or `undefined` (its slot given back) once aborted. */
function slots(free: number) {
  const waiting: (() => void)[] = [];
  return async (signal: AbortSignal): Promise<(() => void) | undefined> => {
    if (free > 0) free--;
    else await new Promise<void>((grant) => waiting.push(grant));
    const release = () => void (waiting.length ? waiting.shift()!() : free++);
    if (!signal.aborted) return release;
    release();
  };
}

/** Fails `entry`'s request with `failure`; the error to throw through the transport. */
function refuse(entry: Pending | undefined, failure: Failure): Error {
  entry?.settle(failure);
  return new Error(failure.kind);
}

/** `message` neutralised (see {@link neutralized}), or why not: it nests deeper than the proxy walks. */
const gated = <T extends JSONRPCMessage>(message: T, catalog: boolean): T | Failure =>
  neutralized(message, catalog) ?? { kind: "too-deep", levels: MAX_DEPTH };

export class Proxy {
  settings: ProxySettings;
  private http!: StreamableHTTPClientTransport;
  private protocolVersion = DEFAULT_PROTOCOL_VERSION;
  private readonly pending = new Map<string, Pending>();
  private readonly inFlight = new Map<string, { controller: AbortController; sent: boolean }>();
  private readonly tasks = new Set<Promise<unknown>>();
  private readonly slots = slots(24);
  private readonly limits: ProxyLimits;
  private barrier: Promise<void> = Promise.resolve();
  /** The client's initialize params, to initialise the server again; the server's answer to ours. */
  private clientInit: Record<string, unknown> | undefined;
  private initReply: JSONRPCMessage | undefined;
  private ready = false;
  private initializing: Promise<Failure | undefined> | undefined;
  private reloading: Promise<boolean> | undefined;
  private generation = 0;
  private inits = 0;
  /** The proxy's initialize goes on after the client's was answered without it (offline). */
  private startingOffline = false;
  private readonly stopped = new AbortController();

  constructor(private readonly options: ProxyOptions) {
    this.settings = options.settings;
    this.limits = { ...PROXY_LIMITS, ...options.limits };
    this.connect();
  }

  /** Handles one client message; returns once it is answered. */
  handle(message: JSONRPCMessage): Promise<void> {
    // A response to a request the server sent inside a stream: delivered now (the stream may wait for it).
    if (!("method" in message)) {
      const reply = this.settings.config.redact ? this.redacted(message, "The client's reply") : message;
      return this.track(Promise.resolve(reply).then((r) => this.forward(r)));
    }
    return "id" in message ? this.track(this.request(message)) : Promise.resolve(this.notify(message));
  }

  /** A fresh transport (no session yet), its messages routed to the waiting requests or the client. */
  private connect(): void {
    if (this.pending.size === 0) void this.http?.close();
    const http = new StreamableHTTPClientTransport(new URL(this.settings.config.mcpUrl), {
      fetch: this.fetchBounded,
      reconnectionOptions: {
        initialReconnectionDelay: 0,
        maxReconnectionDelay: 0,
        reconnectionDelayGrowFactor: 1,
        maxRetries: 0,
      },
    });
    http.onmessage = (message) => {
      if ("method" in message) return void this.track(this.fromServer(message));
      // A response no request waits for any more (it failed or was cancelled) is not the client's to see.
      const entry = message.id === undefined ? undefined : this.pending.get(idKey(message.id));
      entry?.settle(message);
    };
    http.setProtocolVersion(this.protocolVersion);
    void http.start();
    this.http = http;
  }

  /** The transport's fetch: our headers, bounded in time and bytes; a bound that stops a reply fails it. */
  private fetchBounded = async (url: string | URL, init: RequestInit = {}): Promise<Response> => {
    const { config, peerId } = this.settings;
    const identity = { ...config, apiKey: keyFor(config, config.mcpUrl) };
    const headers = buildHeaders(identity, peerId, init.method === "POST");
    new Headers(init.headers).forEach((value, name) => headers.set(name, value));
    const entry = this.entryOf(init.body);
    const timing = entry?.timing ?? exchangeTiming("", this.settings.config.timeoutMs, this.limits);
    const giveUp = [init.signal, entry?.signal].filter((s): s is AbortSignal => s != null);
    const upstream = new AbortController();
    const abort = () => upstream.abort();
    let timedOut = false;
    const clock = setTimeout(() => (timedOut = true, abort()), timing.headersMs);
    for (const s of giveUp) s.aborted ? abort() : s.addEventListener("abort", abort, { once: true });
    let response: Response;
    try {
      response = await fetch(url, { ...init, headers, signal: upstream.signal });
    } catch (error) {
      throw timedOut ? refuse(entry, { kind: "timeout", ms: timing.headersMs }) : error;
    } finally {
      clearTimeout(clock);
      for (const s of giveUp) s.removeEventListener("abort", abort);
    }
    const { status, statusText } = response;
    const reply = (body: BodyInit | null) =>
      new Response(body, { status, statusText, headers: response.headers });
    if (entry) entry.status = status;
    if (!response.ok) {
      const [idleMs, signal] = [timing.bodyIdleMs, init.signal ?? undefined];
      const { bytes } = await readBody(response, { maxBytes: ERROR_BODY_BYTES, idleMs, signal });
      const failure = this.refusal(response, new TextDecoder().decode(bytes.subarray(0, ERROR_BODY_BYTES)));
      if (status < 300 || status >= 400) throw refuse(entry, failure);
      // A redirect the transport follows within the origin; the failure stands if it does not.
      if (entry) entry.failure = failure;
      return reply(null);
    }
    if (!response.body) return response;
    const sse = /^\s*text\/event-stream\s*(;|$)/i.test(response.headers.get("content-type") ?? "");
    if (entry) entry.sse = sse;
    if (sse) return reply(this.bounded(response.body, timing, entry, giveUp));
    const limits = {
      maxBytes: this.limits.replyBytes,
      idleMs: timing.bodyIdleMs,
      signal: AbortSignal.any(giveUp),
    };
    const { bytes, stop } = await readBody(response, limits);
    if (stop?.kind === "cut") throw refuse(entry, { kind: "cut", cause: networkCause(stop.cause) });
    if (stop) throw refuse(entry, stop.kind === "too-large" ? { ...stop, part: "reply" } : stop);
    if (entry) entry.sample = new TextDecoder().decode(bytes.subarray(0, 200));
    return reply(bytes as Uint8Array<ArrayBuffer>);
  };

  /** The failure an HTTP error status (or a redirect the transport does not follow) stands for. */
  private refusal(response: Response, said: string): Failure {
    const status = response.status;
    const serverMessage = serverMessageOf(said);
    if (status === 401 || status === 403) return { kind: "auth", status, serverMessage };
    const location = response.headers.get("location");
    if (status >= 300 && status < 400 && location) {
      const next = new URL(location, this.settings.config.mcpUrl);
      if (next.origin !== new URL(this.settings.config.mcpUrl).origin) {
        return { kind: "redirect", status, location: withoutUserinfo(next.toString()) };
      }
      return { kind: "http", status, serverMessage: "too many redirects" };
    }
    return { kind: "http", status, serverMessage };
  }

  /** The request a POST body carries, when one is waiting for its response. */
  private entryOf(body: unknown): Pending | undefined {
    const message: unknown = typeof body === "string" ? JSON.parse(body) : undefined; // the SDK's own JSON
    const id = isRecord(message) && "method" in message ? message.id : undefined;
    return typeof id === "string" || typeof id === "number" ? this.pending.get(idKey(id)) : undefined;
  }

  /** An SSE reply within its byte and idle bounds, in whole lines; ending the pipe cancels the body. */
  private bounded(
    body: ReadableStream<Uint8Array>,
    timing: Timing,
    entry: Pending | undefined,
    giveUp: AbortSignal[],
  ) {
    const stop = new AbortController();
    let idle: ReturnType<typeof setTimeout> | undefined;
    const fail = (failure: Failure) => {
      clearTimeout(idle);
      stop.abort(refuse(entry, failure));
    };
    const awake = () => {
      clearTimeout(idle);
      idle = setTimeout(() => fail({ kind: "stalled", ms: timing.streamIdleMs }), timing.streamIdleMs);
    };
    const [decoder, encoder] = [new TextDecoder(), new TextEncoder()];
    const { streamBytes, replyBytes } = this.limits;
    let [bytes, eventChars, held] = [0, 0, ""];
    const lines = new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        awake();
        bytes += chunk.length;
        if (bytes > streamBytes) return fail({ kind: "too-large", limitBytes: streamBytes, part: "stream" });
        const text = decoder.decode(chunk, { stream: true });
        const events = text.split(/\r?\n\r?\n|\r\r/);
        const longest = Math.max(eventChars + events[0].length, ...events.slice(1).map((e) => e.length));
        eventChars = events.length > 1 ? events[events.length - 1].length : eventChars + text.length;
        if (longest > replyBytes) return fail({ kind: "too-large", limitBytes: replyBytes, part: "event" });
        const end = Math.max(text.lastIndexOf("\n"), text.lastIndexOf("\r"));
        if (end >= 0) controller.enqueue(encoder.encode(held + text.slice(0, end + 1)));
        held = end >= 0 ? text.slice(end + 1) : held + text;
      },
      flush: (controller) => {
        clearTimeout(idle);
        if (held) controller.enqueue(encoder.encode(held));
        // What the transport makes of the last events reaches it first; then a request is empty.
        if (entry) setTimeout(() => fail({ kind: "empty", status: entry.status ?? 200 }));
      },
    });
    awake();
    const signal = AbortSignal.any([stop.signal, ...giveUp]);
    body.pipeTo(lines.writable, { signal }).catch((error) =>
      fail({ kind: "cut", cause: networkCause(error) })
    );
    return lines.readable;
  }

  /** Sends a request upstream and waits for its response, within `timing`; never throws. */
  private exchange(request: JSONRPCRequest, timing: Timing, cancel?: AbortSignal): Promise<Outcome> {
    const key = idKey(request.id);
    const controller = new AbortController();
    const { promise, resolve } = Promise.withResolvers<Outcome>();
    let settled = false;
    const entry: Pending = {
      timing,
      signal: controller.signal,
      settle: (outcome) => {
        if (settled) return;
        settled = true;
        if (this.pending.get(key) === entry) this.pending.delete(key);
        clearTimeout(deadline);
        cancel?.removeEventListener("abort", onCancel);
        if (failed(outcome)) controller.abort();
        resolve(outcome);
      },
    };
    const deadline = setTimeout(() => {
      entry.settle({ kind: entry.status === undefined ? "timeout" : "deadline", ms: timing.totalMs });
    }, timing.totalMs);
    const onCancel = () => entry.settle({ kind: "aborted" });
    this.pending.set(key, entry);
    if (cancel?.aborted) return (onCancel(), promise);
    cancel?.addEventListener("abort", onCancel, { once: true });
    void this.http.send(request).then(
      () => entry.sse || entry.settle({ kind: "empty", status: entry.status ?? 202 }),
      (error: unknown) => entry.settle(this.failureOf(error, entry)),
    );
    return promise;
  }

  /** The failure a transport error stands for, when the fetch did not record a better one. */
  private failureOf(error: unknown, entry: Pending): Failure {
    const status = entry.status ?? 200;
    // The transport's own errors here: a redirect not followed, a 2xx neither JSON nor SSE.
    if (error instanceof StreamableHTTPError) {
      return entry.failure ?? { kind: "bad-reply", status, sample: error.message };
    }
    if (error instanceof TypeError || entry.status === undefined) {
      return { kind: "network", cause: networkCause(error) };
    }
    return entry.sample?.trim()
      ? { kind: "bad-reply", status, sample: entry.sample }
      : { kind: "empty", status };
  }

  /** Sends a request, the session initialised first; again after a new key or a joined initialize's break. */
  private async send(request: JSONRPCRequest, timing: Timing, cancel?: AbortSignal): Promise<Outcome> {
    for (let retried = false;; retried = true) {
      const generation = this.generation;
      const joined = this.initializing !== undefined;
      const unready = await this.ensureReady();
      if (joined && unready?.kind === "network" && !retried && !cancel?.aborted) continue;
      const out = unready ?? await this.exchange(request, timing, cancel);
      if (!failed(out) || retried || cancel?.aborted) return out;
      if (out.kind === "auth" && await this.reloadCredentials(generation)) continue;
      return out;
    }
  }

  private ensureReady(): Promise<Failure | undefined> {
    if (!this.clientInit || this.ready) return Promise.resolve(undefined);
    return this.initializing ??= this.reinitialize().finally(() => this.initializing = undefined);
  }

  /** The proxy's own initialize (the client's params) + initialized; `initReply` keeps the server's answer. */
  private async reinitialize(): Promise<Failure | undefined> {
    this.connect();
    const timing = exchangeTiming("initialize", this.settings.config.timeoutMs, this.limits);
    const id = `openviking-kimi-init-${++this.inits}`;
    const request = { jsonrpc: "2.0" as const, id, method: "initialize", params: this.clientInit };
    const out = await this.exchange(request, timing, this.stopped.signal);
    if (failed(out)) return out;
    this.initReply = out;
    if (!("result" in out)) {
      const said = "error" in out ? out.error.message : "";
      return { kind: "http", status: 200, serverMessage: `initialize refused: ${said}` };
    }
    this.adopt(out.result.protocolVersion);
    await this.http.send({ jsonrpc: "2.0", method: "notifications/initialized" }).catch(() => {});
    this.ready = true;
    return undefined;
  }

  private adopt(version: unknown): void {
    this.protocolVersion = typeof version === "string" ? version : DEFAULT_PROTOCOL_VERSION;
    this.http.setProtocolVersion(this.protocolVersion);
  }

  /** Loads the settings again (or waits for the request already doing so); true = they changed, retry. */
  private async reloadCredentials(used: number): Promise<boolean> {
    if (this.generation !== used) return true;
    const reload = this.options.reload;
    if (!reload) return false;
    this.reloading ??= reload().then((next) => {
      if (JSON.stringify(next) === JSON.stringify(this.settings)) return false;
      this.settings = next;
      this.generation++;
      if (this.clientInit) this.ready = false;
      return true;
    }, () => false).finally(() => this.reloading = undefined);
    return await this.reloading;
  }

  /** Remembers work that shutdown waits for; errors are logged, never thrown. */
  private track(work: Promise<unknown>): Promise<void> {
    const task = work.then(
      () => {},
      (error) => this.options.log.stage("internal-error", { error: String(error) }),
    );
    this.tasks.add(task);
    task.finally(() => this.tasks.delete(task));
    return task;
  }

  private paused = async () => await this.options.paused?.().catch(() => false) ?? false;

  /** A client request, answered (`ping` here). */
  private async request(request: JSONRPCRequest): Promise<void> {
    if (request.method === "ping") {
      return await this.options.send({ jsonrpc: "2.0", id: request.id, result: {} });
    }
    // An initialize is not withdrawn (a cancel of it is only forwarded).
    if (request.method === "initialize") return await this.initialize(request);
    const key = idKey(request.id);
    const entry = { controller: new AbortController(), sent: false };
    const signal = AbortSignal.any([entry.controller.signal, this.stopped.signal]);
    this.inFlight.set(key, entry);
    const barrier = this.barrier;
    const release = await this.slots(signal);
    try {
      if (!release) return;
      await barrier;
      if (signal.aborted) return;
      if (this.settings.off && request.method === "tools/call") {
        const message = `Memory is off here (${this.settings.off}): no memory tool is offered.`;
        return await this.options.send({ jsonrpc: "2.0", id: request.id, error: { code: -32602, message } });
      }
      // While the proxy's initialize goes on after the client's was answered without it, a tools/list is too.
      const starting = request.method === "tools/list" && this.startingOffline;
      if (starting || await this.paused()) {
        return await this.options.send(this.fallback(request, { kind: "paused" }));
      }
      const redacts = Object.hasOwn(REDACTED_PARAMS, request.method) && this.settings.config.redact;
      const outgoing = redacts ? await this.redacted(request, "The arguments") : request;
      if (signal.aborted) return;
      if ("error" in outgoing) return await this.options.send(outgoing);
      entry.sent = true;
      const timing = exchangeTiming(request.method, this.settings.config.timeoutMs, this.limits);
      const out = await this.send(outgoing, timing, signal);
      if (signal.aborted || (failed(out) && out.kind === "aborted")) return;
      const catalog = request.method === "tools/list";
      const clean = failed(out) ? out : gated(out, catalog);
      const reply = failed(clean)
        ? neutralized(this.fallback(request, clean), catalog)!
        : (request.method === "tools/list" ? this.listed(clean) : clean);
      await this.options.send(reply);
    } finally {
      release?.();
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    }
  }

  /** `work`'s outcome, or a timeout when the breaker opens or `offlineStartMs` after `since`. */
  private async startup(work: Promise<Failure | undefined>, since: number): Promise<Failure | undefined> {
    const done = new AbortController();
    const early: Failure = { kind: "timeout", ms: this.limits.offlineStartMs };
    const end = since + this.limits.offlineStartMs;
    const waited = async () => {
      while (!done.signal.aborted) {
        await sleep(Math.max(0, Math.min(250, end - Date.now())), done.signal); // the breaker, every 250 ms
        if (!done.signal.aborted && (Date.now() >= end || await this.paused())) return early;
      }
    };
    try {
      return await Promise.race([work, waited()]);
    } finally {
      done.abort();
    }
  }

  /** `message` redacted (see {@link redacted}), else an error saying why (never sent raw). */
  private async redacted<T extends JSONRPCRequest | JSONRPCResponse | JSONRPCError>(
    message: T,
    what: string,
  ) {
    const refused = (text: string): JSONRPCError => ({
      jsonrpc: "2.0",
      id: message.id,
      error: { code: -32602, message: `${what} ${text}` },
    });
    try {
      return redacted(message, await this.options.prints?.()) ??
        refused(`nested deeper than ${MAX_DEPTH} levels.`);
    } catch (error) {
      this.options.log.stage("redact-failed", { error: String(error) });
      return refused("could not be redacted, so nothing was sent; try again with less.");
    }
  }

  /** The client's initialize: the server's answer to the proxy's own, or answered here when there is none. */
  private async initialize(request: JSONRPCRequest): Promise<void> {
    [this.clientInit, this.ready, this.initReply] = [{ ...request.params }, false, undefined];
    const [generation, at] = [this.generation, Date.now()];
    const starting = await this.paused() ? undefined : this.ensureReady();
    let failure = starting ? await this.startup(starting, at) : { kind: "timeout" as const, ms: 0 };
    if (failure?.kind === "auth" && await this.reloadCredentials(generation)) {
      failure = await this.ensureReady();
    }
    if (failure?.kind === "aborted") return;
    if (!failure || this.initReply) {
      const reply = gated({ ...this.initReply!, id: request.id }, false);
      return await this.options.send(failed(reply) ? this.fallbackError(request, reply) : reply);
    }
    this.startingOffline = starting !== undefined;
    const version = offlineProtocolVersion(request.params?.protocolVersion);
    this.clientInit.protocolVersion = version;
    this.adopt(version);
    // Answered before the server did: a session it makes later in another version than the client was
    // given is made again in that one.
    void starting?.then(() => {
      this.startingOffline = false;
      if (this.ready && this.protocolVersion !== version) this.ready = false;
    });
    this.options.log.stage("offline-initialize", { failure });
    const url = withoutUserinfo(this.settings.config.mcpUrl);
    const result = {
      protocolVersion: version,
      capabilities: { tools: {} },
      serverInfo: {
        name: "openviking",
        title: "OpenViking (via openviking-kimi)",
        version: `proxy-${VERSION}`,
      },
      instructions: `OpenViking at ${url} ${offlineReason(failure)} when this session started. Its tools ` +
        `are listed anyway and work as soon as the server answers; until then they return an error that says why.`,
    };
    await this.options.send({ jsonrpc: "2.0", id: request.id, result });
  }

  /** The answer when the server gave none: the built-in catalog for `tools/list`, else an error. */
  private fallback(request: JSONRPCRequest, failure: Failure): JSONRPCMessage {
    if (request.method === "tools/list" && request.params?.cursor === undefined) {
      this.options.log.stage("offline-tools-list", { failure });
      return { jsonrpc: "2.0", id: request.id, result: { tools: this.offered(BUILTIN_TOOLS) } };
    }
    return this.fallbackError(request, failure);
  }

  private fallbackError(request: JSONRPCRequest, failure: Failure): JSONRPCMessage {
    this.options.log.stage("request-failed", { method: request.method, failure });
    return failureError(request.id, failure, this.settings.config);
  }

  /** A server's request or notification, to the client neutralised; one nested too deep is dropped. */
  private async fromServer(message: JSONRPCRequest | JSONRPCNotification): Promise<void> {
    const clean = gated(message, false);
    if (!failed(clean)) return await this.options.send(clean);
    this.options.log.stage("server-message-dropped", { method: message.method, failure: clean });
  }

  /** A `tools/list` reply with only the tools offered. */
  private listed(response: JSONRPCMessage): JSONRPCMessage {
    if (!("result" in response) || !Array.isArray(response.result.tools)) return response;
    return { ...response, result: { ...response.result, tools: this.offered(response.result.tools) } };
  }

  /** The tools of `tools` the model is offered: none while memory is off in this workspace. */
  private offered<T>(tools: readonly T[]): T[] {
    return this.settings.off ? [] : offeredTools(tools);
  }

  private notify(message: JSONRPCNotification): void {
    const id = message.method === "notifications/cancelled" ? message.params?.requestId : undefined;
    const entry = typeof id === "string" || typeof id === "number" ? this.inFlight.get(idKey(id)) : undefined;
    // Never left the proxy: withdraw it. Else tell the server first, then stop reading the reply.
    if (entry && !entry.sent) return entry.controller.abort();
    const sent = this.track(this.barrier.then(() => this.forward(message)));
    this.barrier = sent;
    if (entry) void sent.finally(() => entry.controller.abort());
  }

  /** Sends a notification or response upstream; failures are only logged (no one to answer). */
  private async forward(message: JSONRPCMessage): Promise<void> {
    if ("method" in message && message.method === "notifications/initialized") return;
    await this.ensureReady();
    await this.http.send(message).catch((e) =>
      this.options.log.stage("forward-failed", { error: networkCause(e) })
    );
  }

  /** Lets requests finish for up to `graceMs`, aborts the rest and closes the transport; bounded. */
  async shutdown(graceMs: number): Promise<void> {
    if (graceMs > 0 && this.tasks.size > 0) await settledWithin(this.tasks, graceMs);
    this.stopped.abort();
    await this.http.close();
    await settledWithin(this.tasks, 1_000); // what was aborted ends
  }
}
