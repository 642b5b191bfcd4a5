/**
 * `openviking-kimi mcp`: the stdio MCP server Kimi Code starts at every session start, proxying to
 * OpenViking's `/mcp`. Wires configuration, credentials watching, the actor peer, the log and stdio together;
 * stdout carries JSON-RPC lines only, diagnostics go to stderr and the debug log. Never contacts the server
 * before the client sends its first message.
 */

import { credentialFilePaths, loadConfig } from "../openviking/config.ts";
import { isOpen, readBreaker } from "../openviking/breaker.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { type Env, orNoHome, processEnv, sharedStateDir } from "../lib/paths.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import { CredentialWatcher, type ProxySettings, proxySettings } from "../mcp/credentials.ts";
import { lineSink, readLines } from "../mcp/lines.ts";
import { BYTE_LIMITS, type ByteLimits, PROXY_LIMITS, type ProxyLimits } from "../mcp/limits.ts";
import { Proxy } from "../mcp/proxy.ts";
import { Session } from "../mcp/session.ts";
import { readToolCache, toolCachePath, writeToolCache } from "../mcp/tool-cache.ts";
import { Upstream } from "../mcp/upstream.ts";

/** How long running requests may finish after stdin closed. */
const EOF_GRACE_MS = 5_000;

/**
 * The workspace the actor peer is derived from: the process cwd, except when Kimi runs us from a plugin's
 * folder (cwd = `$KIMI_PLUGIN_ROOT`), where the inherited `PWD` is the folder Kimi was started in.
 */
export function workspaceDir(env: Env, cwd: string): string | undefined {
  const norm = (p: string) => p.replace(/\\/g, "/").replace(/\/+$/, "");
  const root = env.KIMI_PLUGIN_ROOT ? norm(env.KIMI_PLUGIN_ROOT) : "";
  const inside = (p: string) => root !== "" && (norm(p) === root || norm(p).startsWith(`${root}/`));
  if (!inside(cwd)) return cwd;
  const pwd = env.PWD;
  return pwd && !inside(pwd) ? pwd : undefined;
}

/** I/O of one server run, so tests can run it in-process. */
export interface McpServerIo {
  env: Env;
  cwd: string;
  input: ReadableStream<Uint8Array>;
  writeLine: (line: string) => Promise<void>;
  /** Diagnostics for humans (stderr). */
  diagnostic: (text: string) => void;
  /** Aborting it stops the server at once (SIGTERM). */
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Time and byte bounds (tests shorten them; the command uses the production ones). */
  limits?: ProxyLimits;
  bytes?: ByteLimits;
}

/** The settings the proxy runs with, loaded (again after a credential change) for the workspace. */
interface Loaded {
  settings: ProxySettings;
  warnings: string[];
  debug: boolean;
  log: string;
  /** The MCP tools offered to the model (`OPENVIKING_MCP_TOOLS`). */
  offer: readonly string[];
}

/** Loads the config for `workspace` and resolves its actor peer. */
async function loadSettings(env: Env, workspace: string | undefined): Promise<Loaded> {
  const { config, warnings } = await loadConfig(env, workspace);
  const peer = await resolvePeer(workspace, config);
  return {
    settings: proxySettings(config, peer.peerId),
    warnings,
    debug: config.debug,
    log: config.debugLogPath,
    offer: config.mcpTools,
  };
}

/** The session and the proxy over it, with credentials watched and tool lists cached. */
async function startProxy(io: McpServerIo, first: Loaded, log: Logger, reload: () => Promise<Loaded>) {
  const paths = credentialFilePaths(io.env);
  const watcher = new CredentialWatcher([paths.cli, paths.ov], async () => (await reload()).settings);
  await watcher.snapshot();
  const cachePath = toolCachePath(io.env);
  const late: { proxy?: Proxy } = {};
  const limits = io.limits ?? PROXY_LIMITS;
  const session = new Session({
    upstream: new Upstream(first.settings.target, io.fetch, io.bytes ?? BYTE_LIMITS),
    settings: first.settings,
    credentials: watcher,
    log,
    initTimeoutMs: Math.min(first.settings.timeoutMs, limits.startupMs),
    passthrough: (item) => late.proxy?.passthrough(item),
    onReinitialized: () => late.proxy?.onReinitialized(),
  });
  late.proxy = new Proxy({
    session,
    writeLine: io.writeLine,
    log,
    limits,
    offer: first.offer,
    tools: {
      read: () => readToolCache(cachePath, session.settings.target.mcpUrl),
      write: (tools) => writeToolCache(cachePath, session.settings.target.mcpUrl, tools),
    },
    paused: async () => {
      const b = await readBreaker(
        orNoHome(() => sharedStateDir(io.env)) ?? "",
        session.settings.target.mcpUrl,
      );
      return b !== undefined && isOpen(b);
    },
  });
  return late.proxy;
}

/** Feeds stdin's lines to the proxy until stdin ends ("eof"), `signal` aborts or the output goes ("signal"). */
async function serve(io: McpServerIo, running: Proxy): Promise<"eof" | "signal"> {
  const reading = (async () => {
    for await (const line of readLines(io.input)) {
      if (running.stopped.signal.aborted) break;
      running.handleLine(line);
    }
    return "eof" as const;
  })().catch(() => "eof" as const);
  const stopped = new Promise<"signal">((resolve) => {
    if (io.signal?.aborted) resolve("signal");
    io.signal?.addEventListener("abort", () => resolve("signal"), { once: true });
    running.stopped.signal.addEventListener("abort", () => resolve("signal"), { once: true });
  });
  return await Promise.race([reading, stopped]);
}

/** Runs the proxy until stdin ends, the output goes away or `signal` aborts; resolves to the exit code. */
export async function runMcpServer(io: McpServerIo): Promise<number> {
  const workspace = workspaceDir(io.env, io.cwd);
  const load = () => loadSettings(io.env, workspace);
  const first = await load();
  for (const warning of first.warnings) io.diagnostic(`openviking-kimi mcp: ${warning}`);
  const log = createLogger({
    enabled: first.debug,
    path: first.log,
    source: "mcp",
    secrets: first.settings.context.secrets as string[],
  });
  const running = await startProxy(io, first, log, load);
  log.stage("start", {
    url: withoutUserinfo(first.settings.target.mcpUrl),
    credentialSource: first.settings.context.credentialSource,
    apiKeySource: first.settings.context.apiKeySource,
    peer: first.settings.target.peerId || undefined,
  });
  const why = await serve(io, running);
  await running.shutdown(why === "eof" ? EOF_GRACE_MS : 0);
  log.stage("exit", { why });
  await log.flush();
  return 0;
}

/** Entry point of `openviking-kimi mcp` (no options: cli/commands.ts has refused any argument). */
export async function mcpCommand(): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGTERM", "SIGINT", "SIGHUP"];
  for (const s of signals) {
    try {
      Deno.addSignalListener(s, onSignal);
    } catch {
      // not supported on this platform
    }
  }
  const writer = Deno.stdout.writable.getWriter();
  const encoder = new TextEncoder();
  const code = await runMcpServer({
    env: processEnv(),
    cwd: Deno.cwd(),
    input: Deno.stdin.readable,
    writeLine: lineSink(writer),
    diagnostic: (text) => Deno.stderr.writeSync(encoder.encode(`${text}\n`)),
    signal: stop.signal,
  });
  for (const s of signals) {
    try {
      Deno.removeSignalListener(s, onSignal);
    } catch {
      // not registered
    }
  }
  await writer.close().catch(() => {});
  // Everything is written and the log flushed; a stdin read may still be pending (after SIGTERM or when the
  // client closed only stdout), and it must not keep the process alive.
  Deno.exit(code);
}
