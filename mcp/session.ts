/**
 * The MCP session with OpenViking: remembers the client's `initialize`, initialises the server lazily when it
 * was unreachable at start, re-initialises transparently when the session expired (404, or 400 from servers
 * that say it that way) and retries once, and reloads credentials after a 401/403 when the credential files
 * changed. Stateless servers (no `Mcp-Session-Id`, like OpenViking's) go through the same paths.
 */

import type { Logger } from "../lib/log.ts";
import { isRecord } from "../lib/parsed.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import type { ProxySettings } from "./credentials.ts";
import type { Classified, JsonRpcId, JsonRpcMessage, JsonRpcRequest } from "./jsonrpc.ts";
import type { MessageSink } from "./reply.ts";
import { type Timing, uniformTiming } from "./limits.ts";
import { DEFAULT_PROTOCOL_VERSION, type Exchange, type Failure, type Upstream } from "./upstream.ts";

/** Reloads the settings when the credential files changed (`undefined` when they did not). */
export interface CredentialReloader {
  reloadIfChanged(): Promise<ProxySettings | undefined>;
}

/** Options of one forwarded message. */
export interface SendOptions {
  expectId?: JsonRpcId;
  sink: MessageSink;
  signal?: AbortSignal;
  timing: Timing;
}

/** What the session needs. */
export interface SessionOptions {
  upstream: Upstream;
  settings: ProxySettings;
  credentials?: CredentialReloader;
  log: Logger;
  /** Limit for each of the proxy's own initialize exchanges, as a whole (ms). */
  initTimeoutMs: number;
  /** Receives messages the server sends during the proxy's own initialize (notifications, requests). */
  passthrough: MessageSink;
  /** Called after the server was (re)initialised by the proxy itself. */
  onReinitialized?: () => void | Promise<void>;
}

type Ready = { ok: true } | { ok: false; failure: Failure };

/** The session state and the retry rules. */
export class Session {
  settings: ProxySettings;
  /** Params of the client's initialize (protocolVersion possibly replaced by the one answered offline). */
  private clientInit: Record<string, unknown> | undefined;
  /** Whether the server is initialised for the current session and credentials. */
  private ready = false;
  private initializing: Promise<Ready> | undefined;
  private reloading: Promise<boolean> | undefined;
  /** Bumped on every credential reload, so concurrent 401s reload once and all retry. */
  private generation = 0;
  private initCount = 0;

  constructor(private readonly options: SessionOptions) {
    this.settings = options.settings;
  }

  /** Forwards the client's `initialize`; remembers it for later re-initialisation. */
  async initialize(request: JsonRpcRequest, options: SendOptions): Promise<Exchange> {
    const upstream = this.options.upstream;
    this.clientInit = isRecord(request.params) ? { ...request.params } : {};
    this.ready = false;
    upstream.sessionId = undefined;
    let retried = false;
    for (;;) {
      const generation = this.generation;
      let result: unknown = undefined;
      const exchange = await upstream.post(request, {
        ...options,
        withSession: false,
        sink: (item) => {
          if (item.kind === "response" && item.message.id === request.id && "result" in item.message) {
            result = item.message.result;
          }
          return options.sink(item);
        },
      });
      if (exchange.ok) {
        if (isRecord(result)) {
          this.adopt(exchange.sessionId, result);
          this.ready = true;
        }
        return exchange;
      }
      if (!retried && exchange.failure.kind === "auth" && await this.reloadCredentials(generation)) {
        retried = true;
        continue;
      }
      return exchange;
    }
  }

  /** Keeps the client's `initialize` without sending it (the server is known not to answer): sent when needed. */
  deferInitialize(request: JsonRpcRequest): void {
    this.clientInit = isRecord(request.params) ? { ...request.params } : {};
    this.ready = false;
    this.options.upstream.sessionId = undefined;
  }

  /** After an offline `initialize`: initialise the server later asking for the version the client was given. */
  answeredOffline(protocolVersion: string): void {
    if (this.clientInit) this.clientInit.protocolVersion = protocolVersion;
    this.options.upstream.protocolVersion = protocolVersion;
    this.ready = false;
  }

  /** Forwards a request, notification or response, with the re-initialise and credential retries. */
  async send(message: JsonRpcMessage, options: SendOptions): Promise<Exchange> {
    if ("method" in message && message.method === "notifications/initialized" && !("id" in message)) {
      // After an offline initialize the proxy sends its own once the server is reachable.
      if (!this.ready) return { ok: true, status: 202, reply: emptyReply() };
    }
    const upstream = this.options.upstream;
    let retried = false;
    for (;;) {
      const generation = this.generation;
      const ready = await this.ensureReady();
      const exchange: Exchange = ready.ok
        ? await upstream.post(message, { ...options, withSession: true })
        : { ok: false, failure: ready.failure, delivered: 0 };
      if (exchange.ok || retried || exchange.delivered > 0 || options.signal?.aborted) return exchange;
      const failure = exchange.failure;
      if (
        failure.kind === "http" && (failure.status === 404 || failure.status === 400) &&
        failure.sessionId !== undefined && this.clientInit
      ) {
        this.options.log.stage("session-expired", { status: failure.status });
        if (upstream.sessionId === failure.sessionId) {
          this.ready = false;
          upstream.sessionId = undefined;
        }
        retried = true;
        continue;
      }
      if (failure.kind === "auth" && await this.reloadCredentials(generation)) {
        retried = true;
        continue;
      }
      return exchange;
    }
  }

  /** Ends the server-side session, if there is one (DELETE, at most `timeoutMs`). */
  async close(timeoutMs: number): Promise<number | undefined> {
    return await this.options.upstream.deleteSession(timeoutMs);
  }

  private adopt(sessionId: string | undefined, result: Record<string, unknown>): void {
    const upstream = this.options.upstream;
    upstream.sessionId = sessionId || undefined;
    upstream.protocolVersion = typeof result.protocolVersion === "string"
      ? result.protocolVersion
      : DEFAULT_PROTOCOL_VERSION;
  }

  private ensureReady(): Promise<Ready> {
    if (!this.clientInit || this.ready) return Promise.resolve({ ok: true });
    this.initializing ??= this.reinitialize().finally(() => {
      this.initializing = undefined;
    });
    return this.initializing;
  }

  /** The proxy's own initialize + initialized, with the client's remembered params. */
  private async reinitialize(): Promise<Ready> {
    const upstream = this.options.upstream;
    const id = `openviking-kimi-init-${++this.initCount}`;
    upstream.sessionId = undefined;
    let result: unknown = undefined;
    let error = "";
    const sink = (item: Classified) => {
      if (item.kind === "response" && item.message.id === id) {
        if ("result" in item.message) result = item.message.result;
        else if ("error" in item.message) error = item.message.error.message;
        return;
      }
      return this.options.passthrough(item);
    };
    const exchange = await upstream.post(
      { jsonrpc: "2.0", id, method: "initialize", params: this.clientInit ?? {} },
      { expectId: id, sink, timing: uniformTiming(this.options.initTimeoutMs), withSession: false },
    );
    if (!exchange.ok) {
      this.options.log.stage("reinit-failed", { failure: exchange.failure.kind });
      return { ok: false, failure: exchange.failure };
    }
    if (!isRecord(result)) {
      return {
        ok: false,
        failure: { kind: "http", status: exchange.status, serverMessage: `initialize refused: ${error}` },
      };
    }
    this.adopt(exchange.sessionId, result);
    const note = await upstream.post(
      { jsonrpc: "2.0", method: "notifications/initialized" },
      {
        sink: this.options.passthrough,
        timing: uniformTiming(this.options.initTimeoutMs),
        withSession: true,
      },
    );
    if (!note.ok) this.options.log.stage("initialized-notification-failed", { failure: note.failure.kind });
    this.ready = true;
    this.options.log.stage("reinitialized", { session: Boolean(upstream.sessionId) });
    await this.options.onReinitialized?.();
    return { ok: true };
  }

  /** Reloads the credentials if the files changed (or another request already did); true = retry. */
  private async reloadCredentials(usedGeneration: number): Promise<boolean> {
    if (this.generation !== usedGeneration) return true;
    const credentials = this.options.credentials;
    if (!credentials) return false;
    this.reloading ??= (async () => {
      const next = await credentials.reloadIfChanged().catch(() => undefined);
      if (!next) return false;
      this.settings = next;
      this.options.upstream.target = next.target;
      this.generation++;
      if (this.clientInit) this.ready = false;
      this.options.log.stage("credentials-reloaded", { url: withoutUserinfo(next.target.mcpUrl) });
      return true;
    })().finally(() => {
      this.reloading = undefined;
    });
    return await this.reloading;
  }
}

function emptyReply() {
  return { delivered: 0, answered: false, invalid: 0, lastEventId: "", bytes: 0 };
}
