/**
 * The stdio side of the proxy: each stdin line is read (single message or batch), requests run concurrently
 * (replies in whatever order they finish: at most 16 tool calls at once, and other requests in slots of their
 * own, so stalled tool calls never hold up `tools/list`; `initialize` needs no slot and `ping` is answered by
 * the proxy itself), notifications keep their order, cancelled requests are withdrawn or cancelled upstream,
 * every outgoing message is one whole line, every exchange is bounded in time (see `exchangeTiming`) and
 * bytes, and when OpenViking cannot be reached `initialize` and `tools/list` are still answered so Kimi keeps
 * its tools.
 */

import type { Logger } from "../runtime/log.ts";
import { isRecord } from "../runtime/record.ts";
import { BUILTIN_TOOLS, type ToolDefinition } from "./catalog.ts";
import { failureError } from "./errors.ts";
import {
  type Classified,
  isErrorReply,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  parseLine,
  toLine,
} from "./jsonrpc.ts";
import { Limiter } from "./limiter.ts";
import {
  catalogResult,
  offlineInitializeResult,
  offlineProtocolVersion,
  offlineReason,
  pingResult,
  TOOLS_CHANGED,
} from "./offline.ts";
import type { Session } from "./session.ts";
import { displayUrl, type Failure, type Timing, uniformTiming } from "./upstream.ts";
import { validTools } from "./tool-cache.ts";

/** How many tool calls may be in flight upstream at once. */
export const MAX_IN_FLIGHT = 16;
/** How many other requests (`tools/list`, `resources/…`) may be in flight at once, in slots of their own. */
export const MAX_OTHER_IN_FLIGHT = 8;
/** Limit for `initialize` / `tools/list`, as a whole, so a dead host still leaves Kimi's 30 s startup budget. */
export const STARTUP_TIMEOUT_CAP_MS = 10_000;
/**
 * Limit for a tool call as a whole (headers, body, SSE reconnections), and for any request: long tools are
 * bounded by the client's own timeout (Kimi's default is 60 s), this only ends what nobody waits for anymore.
 */
export const TOOL_CALL_TIMEOUT_MS = 600_000;
/**
 * How long an SSE reply may go without a byte. OpenViking's server sends a keep-alive comment every 15 s, so
 * this is eight missed in a row; a server without keep-alives must send progress at least this often.
 */
export const STREAM_IDLE_MS = 120_000;
/** How long the session DELETE may take at shutdown. */
export const DELETE_TIMEOUT_MS = 2_000;

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

/** Where tool lists are remembered between sessions. */
export interface ToolStore {
  read(): Promise<ToolDefinition[] | undefined>;
  write(tools: ToolDefinition[]): Promise<unknown>;
}

/** Options of the proxy. */
export interface ProxyOptions {
  session: Session;
  /** Writes one line (without its newline) to stdout; the proxy never calls it concurrently. */
  writeLine: (line: string) => Promise<void>;
  log: Logger;
  tools?: ToolStore;
  /** Tool calls in flight at once (default {@link MAX_IN_FLIGHT}). */
  maxInFlight?: number;
  /** Time bounds (default {@link PROXY_LIMITS}). */
  limits?: ProxyLimits;
}

interface InFlight {
  controller: AbortController;
  /** The request went (or is going) upstream, so a cancel must be forwarded. */
  sent: boolean;
}

const idKey = (id: JsonRpcId) => `${typeof id}:${id}`;

/** Serialises output: whole lines, one at a time, in call order. */
export class LineWriter {
  private chain: Promise<void> = Promise.resolve();
  /** Set when the output is gone (the client went away). */
  closed = false;

  constructor(
    private readonly writeLine: (line: string) => Promise<void>,
    private readonly onClose: () => void,
  ) {}

  /** Queues a message (or batch) for output. */
  write(message: JsonRpcMessage | JsonRpcMessage[]): Promise<void> {
    const line = toLine(message);
    this.chain = this.chain.then(async () => {
      if (this.closed) return;
      try {
        await this.writeLine(line);
      } catch {
        this.closed = true;
        this.onClose();
      }
    });
    return this.chain;
  }

  /** Resolves once everything queued is written. */
  idle(): Promise<void> {
    return this.chain;
  }
}

/** The stdio ↔ Streamable HTTP proxy. */
export class Proxy {
  /** Slots of tool calls, and of every other request: tool calls cannot take the others'. */
  private readonly toolSlots: Limiter;
  private readonly otherSlots = new Limiter(MAX_OTHER_IN_FLIGHT);
  private readonly limits: ProxyLimits;
  private readonly inFlight = new Map<string, InFlight>();
  private readonly tasks = new Set<Promise<unknown>>();
  /** Settles when every notification dispatched so far has been sent (their order is kept). */
  private barrier: Promise<void> = Promise.resolve();
  /** Settles when the client's initialize (if one is running) is done; later messages wait for it. */
  private initGate: Promise<void> = Promise.resolve();
  private servedCatalog = false;
  private closing = false;
  readonly writer: LineWriter;
  /** Aborted when the output is gone or shutdown begins. */
  readonly stopped = new AbortController();

  constructor(private readonly options: ProxyOptions) {
    this.toolSlots = new Limiter(options.maxInFlight ?? MAX_IN_FLIGHT);
    this.limits = options.limits ?? PROXY_LIMITS;
    this.writer = new LineWriter(options.writeLine, () => this.stopped.abort());
  }

  /** Called by the session after the proxy itself (re)initialised the server. */
  async onReinitialized(): Promise<void> {
    if (!this.servedCatalog) return;
    this.servedCatalog = false;
    await this.writer.write(TOOLS_CHANGED);
  }

  /** Messages the server sends outside a client request's reply go straight to the client. */
  passthrough = (item: Classified): Promise<void> => this.writer.write(item.message);

  /** Handles one stdin line; returns once it is fully answered (callers need not wait). */
  handleLine(line: string): Promise<void> {
    if (line.trim() === "") return Promise.resolve();
    return this.track(this.dispatchLine(line));
  }

  /** Remembers work that shutdown must wait for; errors are logged, never thrown. */
  private track(work: Promise<unknown>): Promise<void> {
    const task = work.then(() => {}, (error) => this.options.log.stage("internal-error", { error }));
    this.tasks.add(task);
    task.finally(() => this.tasks.delete(task));
    return task;
  }

  private async dispatchLine(line: string): Promise<void> {
    const parsed = parseLine(line);
    if (parsed.kind === "invalid") return await this.writer.write(parsed.reply);
    if (parsed.kind === "single") {
      const reply = await this.dispatch(parsed.item, false);
      if (reply) await this.writer.write(reply);
      return;
    }
    const replies = await Promise.all(
      parsed.items.map((item) => isErrorReply(item) ? Promise.resolve(item) : this.dispatch(item, true)),
    );
    const out = replies.filter((r): r is JsonRpcResponse => r !== undefined);
    if (out.length > 0) await this.writer.write(out);
  }

  /** Handles one message; returns the response to output (only for requests; `collect` = part of a batch). */
  private dispatch(item: Classified, collect: boolean): Promise<JsonRpcResponse | undefined> {
    if (item.kind === "request") {
      const method = item.message.method;
      // The client's peer is the proxy: it is alive when it answers, whatever OpenViking is doing.
      if (method === "ping") return Promise.resolve(pingResult(item.message.id));
      return method === "initialize"
        ? this.initialize(item.message, collect)
        : this.request(item.message, collect);
    }
    if (item.kind === "notification") {
      this.notify(item.message);
      return Promise.resolve(undefined);
    }
    // A response to a request the server sent inside a stream: deliver it now (the stream may wait for it).
    this.track(this.forward(item.message, "response"));
    return Promise.resolve(undefined);
  }

  private timing(method: string | undefined): Timing {
    return exchangeTiming(method, this.options.session.settings.timeoutMs, this.limits);
  }

  /** A sink writing every message, except the response to `id` when it is collected for a batch. */
  private sinkFor(id: JsonRpcId, collect: boolean, seen: (r: JsonRpcResponse) => void) {
    return (item: Classified): Promise<void> | void => {
      if (item.kind === "response" && item.message.id === id) {
        seen(item.message);
        if (collect) return;
      }
      return this.writer.write(item.message);
    };
  }

  private async initialize(request: JsonRpcRequest, collect: boolean): Promise<JsonRpcResponse | undefined> {
    let open!: () => void;
    const previous = this.initGate;
    this.initGate = new Promise<void>((resolve) => open = resolve);
    try {
      await previous;
      let response: JsonRpcResponse | undefined;
      const exchange = await this.options.session.initialize(request, {
        expectId: request.id,
        sink: this.sinkFor(request.id, collect, (r) => response = r),
        signal: this.stopped.signal,
        timing: this.timing(request.method),
      });
      if (exchange.ok) return collect ? response : undefined;
      if (exchange.failure.kind === "aborted") return undefined;
      const params = isRecord(request.params) ? request.params : {};
      const url = displayUrl(this.options.session.settings.target.mcpUrl);
      this.options.session.answeredOffline(offlineProtocolVersion(params.protocolVersion));
      this.options.log.stage("offline-initialize", { failure: describe(exchange.failure) });
      return offlineInitializeResult(
        request.id,
        params.protocolVersion,
        url,
        offlineReason(exchange.failure),
      );
    } finally {
      open();
    }
  }

  private async request(request: JsonRpcRequest, collect: boolean): Promise<JsonRpcResponse | undefined> {
    const key = idKey(request.id);
    const entry: InFlight = { controller: new AbortController(), sent: false };
    const onStop = () => entry.controller.abort();
    this.stopped.signal.addEventListener("abort", onStop, { once: true });
    if (this.stopped.signal.aborted) entry.controller.abort();
    this.inFlight.set(key, entry);
    const barrier = this.barrier;
    const initGate = this.initGate;
    const slots = request.method === "tools/call" ? this.toolSlots : this.otherSlots;
    const release = await slots.acquire(entry.controller.signal);
    try {
      if (!release) return undefined;
      await barrier;
      await initGate;
      if (entry.controller.signal.aborted) return undefined;
      entry.sent = true;
      let response: JsonRpcResponse | undefined;
      const exchange = await this.options.session.send(request, {
        expectId: request.id,
        sink: this.sinkFor(request.id, collect, (r) => response = r),
        signal: entry.controller.signal,
        timing: this.timing(request.method),
      });
      if (exchange.ok) {
        if (request.method === "tools/list" && response) this.remember(request, response);
        return collect ? response : undefined;
      }
      if (exchange.failure.kind === "aborted" || entry.controller.signal.aborted) return undefined;
      return await this.fallback(request, exchange.failure);
    } finally {
      release?.();
      this.stopped.signal.removeEventListener("abort", onStop);
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    }
  }

  /** The answer when the server could not give one: a local result where Kimi needs it, else an error. */
  private async fallback(request: JsonRpcRequest, failure: Failure): Promise<JsonRpcResponse> {
    const session = this.options.session;
    const params = isRecord(request.params) ? request.params : {};
    if (request.method === "tools/list" && params.cursor === undefined) {
      const cached = await this.options.tools?.read().catch(() => undefined);
      this.servedCatalog = true;
      this.options.log.stage("offline-tools-list", { failure: describe(failure), cached: Boolean(cached) });
      return catalogResult(request.id, cached ?? BUILTIN_TOOLS);
    }
    this.options.log.stage("request-failed", { method: request.method, failure: describe(failure) });
    return failureError(request.id, failure, session.settings.context);
  }

  /** Saves a served tool list for sessions that start while the server is down. */
  private remember(request: JsonRpcRequest, response: JsonRpcResponse): void {
    const store = this.options.tools;
    if (!store || !("result" in response) || !isRecord(response.result)) return;
    if (isRecord(request.params) && request.params.cursor !== undefined) return;
    if (response.result.nextCursor !== undefined) return;
    const tools = validTools(response.result.tools);
    if (!tools) return;
    this.track(store.write(tools));
  }

  private notify(message: JsonRpcNotification): void {
    if (message.method === "notifications/cancelled" && isRecord(message.params)) {
      const requestId = message.params.requestId;
      const entry = typeof requestId === "string" || typeof requestId === "number"
        ? this.inFlight.get(idKey(requestId))
        : undefined;
      if (entry && !entry.sent) {
        // Never left the proxy: withdraw it; the server has nothing to cancel.
        entry.controller.abort();
        return;
      }
      if (entry) {
        // Tell the server first (a dropped connection is not a cancellation), then stop reading the reply.
        this.enqueueNotification(message).finally(() => entry.controller.abort());
        return;
      }
    }
    void this.enqueueNotification(message);
  }

  private enqueueNotification(message: JsonRpcNotification): Promise<void> {
    const initGate = this.initGate;
    const sent = this.track(
      this.barrier.then(() => initGate).then(() => this.forward(message, "notification")),
    );
    this.barrier = sent;
    return sent;
  }

  /** Sends a notification or response upstream; failures are only logged (there is no one to answer). */
  private async forward(message: JsonRpcMessage, what: string): Promise<void> {
    const exchange = await this.options.session.send(message, {
      sink: this.passthrough,
      signal: this.stopped.signal,
      timing: this.timing(undefined),
    });
    if (!exchange.ok && exchange.failure.kind !== "aborted") {
      this.options.log.stage(`${what}-failed`, {
        method: "method" in message ? message.method : undefined,
        failure: describe(exchange.failure),
      });
    }
  }

  /**
   * Stops: lets running requests finish for up to `graceMs` (0 = abort them now), then ends the server session
   * (DELETE, at most 2 s) and waits for the output to be written.
   */
  async shutdown(graceMs: number, deleteTimeoutMs = DELETE_TIMEOUT_MS): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (graceMs > 0 && this.tasks.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...this.tasks]),
        new Promise((resolve) => timer = setTimeout(resolve, graceMs)),
      ]);
      clearTimeout(timer);
    }
    this.stopped.abort();
    const status = await this.options.session.close(deleteTimeoutMs);
    if (status !== undefined) this.options.log.stage("session-deleted", { status });
    await Promise.allSettled([...this.tasks]);
    await this.writer.idle();
  }
}

/** A failure in a few words, for the log. */
function describe(failure: Failure): string {
  switch (failure.kind) {
    case "network":
    case "cut":
      return `${failure.kind}: ${failure.cause}`;
    case "auth":
    case "http":
      return `${failure.kind} ${failure.status}`;
    default:
      return failure.kind;
  }
}
