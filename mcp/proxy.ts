/**
 * The stdio side of the proxy: each stdin line is read (single message or batch), requests run concurrently
 * (replies in whatever order they finish: at most 16 tool calls at once, and other requests in slots of their
 * own, so stalled tool calls never hold up `tools/list`; `initialize` needs no slot and `ping` is answered by
 * the proxy itself), notifications keep their order, cancelled requests are withdrawn or cancelled upstream,
 * every outgoing message is one whole line, every exchange is bounded in time (see `exchangeTiming`) and
 * bytes, and when OpenViking cannot be reached `initialize` and `tools/list` are still answered so Kimi keeps
 * its tools.
 */

import type { Logger } from "../lib/log.ts";
import { isRecord } from "../lib/parsed.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import { BUILTIN_TOOLS, offeredTools, type ToolDefinition } from "../memory/tools.ts";
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
import type { Exchange, Failure } from "./upstream.ts";
import { exchangeTiming, PROXY_LIMITS, type ProxyLimits, type Timing } from "./limits.ts";
import { LineWriter } from "./lines.ts";
import { validTools } from "./tool-cache.ts";

/** How many tool calls may be in flight upstream at once. */
const MAX_IN_FLIGHT = 16;
/** How many other requests (`tools/list`, `resources/…`) may be in flight at once, in slots of their own. */
const MAX_OTHER_IN_FLIGHT = 8;
/** How long the session DELETE may take at shutdown. */
const DELETE_TIMEOUT_MS = 2_000;

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
  /** Which tools `tools/list` offers the model (the `OPENVIKING_MCP_TOOLS` knob; default: memory's). */
  offer?: readonly string[];
  /** Tool calls in flight at once (default {@link MAX_IN_FLIGHT}). */
  maxInFlight?: number;
  /** Time bounds (default {@link PROXY_LIMITS}). */
  limits?: ProxyLimits;
  /**
   * Whether OpenViking is known not to answer now (its recall breaker is open, runtime/breaker.ts): then
   * `initialize`, `tools/list` and every other request but a tool call are answered at once, offline.
   */
  paused?: () => Promise<boolean>;
}

interface InFlight {
  controller: AbortController;
  /** The request went (or is going) upstream, so a cancel must be forwarded. */
  sent: boolean;
}

const idKey = (id: JsonRpcId) => `${typeof id}:${id}`;

/** Why a request was answered here while the server's recall breaker is open. */
const PAUSED: Failure = { kind: "network", cause: "it left a recent request unanswered; memory is paused" };

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

  /** Sends a request upstream (as the client's initialize, or any other), catching its response. */
  private async exchange(
    how: "initialize" | "send",
    request: JsonRpcRequest,
    collect: boolean,
    signal: AbortSignal,
  ): Promise<{ exchange: Exchange; response?: JsonRpcResponse }> {
    let response: JsonRpcResponse | undefined;
    const options = {
      expectId: request.id,
      sink: this.sinkFor(request.id, collect, (r) => response = r),
      signal,
      timing: this.timing(request.method),
    };
    const session = this.options.session;
    const exchange = how === "initialize"
      ? await session.initialize(request, options)
      : await session.send(request, options);
    return { exchange, response };
  }

  private async initialize(request: JsonRpcRequest, collect: boolean): Promise<JsonRpcResponse | undefined> {
    let open!: () => void;
    const previous = this.initGate;
    this.initGate = new Promise<void>((resolve) => open = resolve);
    try {
      await previous;
      if (await this.paused()) {
        this.options.session.deferInitialize(request);
        return this.offlineInitialize(request, "paused", "did not answer in time");
      }
      const { exchange, response } = await this.exchange("initialize", request, collect, this.stopped.signal);
      if (exchange.ok) return collect ? response : undefined;
      if (exchange.failure.kind === "aborted") return undefined;
      return this.offlineInitialize(request, describe(exchange.failure), offlineReason(exchange.failure));
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
      // Start-up and listings are answered here while the server is known not to answer; a tool call tries it.
      if (request.method !== "tools/call" && await this.paused()) {
        return await this.fallback(request, PAUSED);
      }
      entry.sent = true;
      const list = request.method === "tools/list"; // its reply is filtered, so it is never written as it came
      const { exchange, response } = await this.exchange(
        "send",
        request,
        collect || list,
        entry.controller.signal,
      );
      if (exchange.ok) {
        if (list && response) {
          this.remember(request, response);
          return this.offered(response);
        }
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

  /** The client's `initialize` answered by the proxy itself; the server is initialised at the first request. */
  private offlineInitialize(request: JsonRpcRequest, failure: string, reason: string): JsonRpcResponse {
    const params = isRecord(request.params) ? request.params : {};
    const url = withoutUserinfo(this.options.session.settings.target.mcpUrl);
    this.options.session.answeredOffline(offlineProtocolVersion(params.protocolVersion));
    this.options.log.stage("offline-initialize", { failure });
    return offlineInitializeResult(request.id, params.protocolVersion, url, reason);
  }

  /** Whether OpenViking is known not to answer now (never throws). */
  private async paused(): Promise<boolean> {
    return await this.options.paused?.().catch(() => false) ?? false;
  }

  /** The answer when the server could not give one: a local result where Kimi needs it, else an error. */
  private async fallback(request: JsonRpcRequest, failure: Failure): Promise<JsonRpcResponse> {
    const session = this.options.session;
    const params = isRecord(request.params) ? request.params : {};
    if (request.method === "tools/list" && params.cursor === undefined) {
      const cached = await this.options.tools?.read().catch(() => undefined);
      this.servedCatalog = true;
      this.options.log.stage("offline-tools-list", { failure: describe(failure), cached: Boolean(cached) });
      return catalogResult(request.id, offeredTools(cached ?? BUILTIN_TOOLS, this.options.offer ?? []));
    }
    this.options.log.stage("request-failed", { method: request.method, failure: describe(failure) });
    return failureError(request.id, failure, session.settings.context);
  }

  /** A `tools/list` reply with only the tools offered to the model (anything else passes as it came). */
  private offered(response: JsonRpcResponse): JsonRpcResponse {
    if (!("result" in response) || !isRecord(response.result) || !Array.isArray(response.result.tools)) {
      return response;
    }
    const tools = offeredTools(response.result.tools, this.options.offer ?? []);
    return { ...response, result: { ...response.result, tools } };
  }

  /** Saves a served tool list (all of it) for sessions that start while the server is down. */
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
