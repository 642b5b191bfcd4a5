/**
 * `openviking-kimi mcp`: the stdio MCP server Kimi Code starts at every session start, proxying to
 * OpenViking's `/mcp`. Wires configuration, credentials watching, the actor peer, the log and stdio together;
 * stdout carries JSON-RPC lines only, diagnostics go to stderr and the debug log. Never contacts the server
 * before the client sends its first message.
 */

import { Readable, Writable } from "node:stream";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { credentialFilePaths, loadConfig } from "../openviking/config.ts";
import { isOpen, readBreaker } from "../openviking/breaker.ts";
import { createLogger } from "../lib/log.ts";
import { readTextIfExists } from "../lib/fs.ts";
import { type Env, orNoHome, processEnv, sharedStateDir } from "../lib/paths.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import { type ByteLimits, Proxy, type ProxyLimits, type ProxySettings, proxySettings } from "../mcp/proxy.ts";
import { readToolCache, toolCachePath, writeToolCache } from "../mcp/tool-cache.ts";
import { type LineRefusal, lineRefusals } from "../mcp/errors.ts";
import { concatBytes } from "../lib/bytes.ts";
// @ts-types="@modelcontextprotocol/sdk/shared/stdio"
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";

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

/**
 * A reloader of the settings that loads them again only when a credential file's content changed since the
 * last look (mtime can stay the same within one tick; content cannot).
 */
export async function credentialReloader(
  paths: readonly string[],
  load: () => Promise<ProxySettings>,
  read: (path: string) => Promise<string | undefined> = (path) =>
    readTextIfExists(path).catch(() => undefined),
): Promise<() => Promise<ProxySettings | undefined>> {
  const seen = new Map<string, string | undefined>();
  const look = async () => {
    let changed = false;
    for (const path of paths) {
      const now = await read(path);
      changed ||= seen.has(path) && now !== seen.get(path);
      seen.set(path, now);
    }
    return changed;
  };
  await look();
  return async () => await look() ? await load() : undefined;
}

/**
 * `input` without the lines that are not JSON-RPC messages, each answered by `refuse` instead (the SDK
 * would drop them unanswered). A line longer than the SDK reads is passed on as it is, for the SDK to refuse.
 */
export function screened(
  input: ReadableStream<Uint8Array>,
  refuse: (refusals: LineRefusal[]) => void,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  let passing = false;
  return input.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        let start = 0;
        for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
          const line = concatBytes([...held.splice(0), chunk.subarray(start, nl + 1)]);
          start = nl + 1;
          heldBytes = 0;
          const refusals = passing ? [] : lineRefusals(decoder.decode(line));
          passing = false;
          if (refusals.length) refuse(refusals);
          else controller.enqueue(line);
        }
        if (start === chunk.length) return;
        if (passing) return controller.enqueue(chunk.subarray(start));
        held.push(chunk.slice(start));
        heldBytes += chunk.length - start;
        if (heldBytes > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
          controller.enqueue(concatBytes(held.splice(0)));
          heldBytes = 0;
          passing = true;
        }
      },
      flush(controller) {
        if (held.length) controller.enqueue(concatBytes(held));
      },
    }),
  );
}

/** Runs the proxy until stdin ends, the output goes away or `signal` aborts; resolves to the exit code. */
export async function runMcpServer(io: McpServerIo): Promise<number> {
  const workspace = workspaceDir(io.env, io.cwd);
  const load = async () => {
    const { config, warnings } = await loadConfig(io.env, workspace);
    const peer = await resolvePeer(workspace, config);
    return { settings: proxySettings(config, peer.peerId), warnings, config };
  };
  const first = await load();
  for (const warning of first.warnings) io.diagnostic(`openviking-kimi mcp: ${warning}`);
  const settings = first.settings;
  const log = createLogger({
    enabled: first.config.debug,
    path: first.config.debugLogPath,
    source: "mcp",
    secrets: settings.context.secrets as string[],
  });
  const paths = credentialFilePaths(io.env);
  const cachePath = toolCachePath(io.env);
  const input = screened(io.input, (refusals) => {
    log.stage("client-line-refused", { codes: refusals.map((r) => r.error.code) });
    for (const r of refusals) void io.writeLine(JSON.stringify(r)).catch(() => {});
  });
  const stdin = Readable.fromWeb(input as import("node:stream/web").ReadableStream<Uint8Array>);
  const stdout = new Writable({
    write: (chunk, _encoding, done) =>
      void io.writeLine(String(chunk).replace(/\n$/, "")).then(() => done(), done),
  });
  stdout.setMaxListeners(0);
  const gone = new Promise<"signal">((resolve) => stdout.on("error", () => resolve("signal")));
  const stdio = new StdioServerTransport(stdin, stdout);
  const proxy: Proxy = new Proxy({
    settings,
    reload: await credentialReloader([paths.cli, paths.ov], async () => (await load()).settings),
    send: async (message) => void await Promise.race([stdio.send(message), gone]),
    log,
    offer: first.config.mcpTools,
    limits: io.limits,
    bytes: io.bytes,
    fetch: io.fetch,
    tools: {
      read: () => readToolCache(cachePath, proxy.settings.target.mcpUrl),
      write: (tools) => writeToolCache(cachePath, proxy.settings.target.mcpUrl, tools),
    },
    paused: async () => {
      const b = await readBreaker(orNoHome(() => sharedStateDir(io.env)) ?? "", proxy.settings.target.mcpUrl);
      return b !== undefined && isOpen(b);
    },
  });
  log.stage("start", {
    url: withoutUserinfo(settings.target.mcpUrl),
    credentialSource: settings.context.credentialSource,
    apiKeySource: settings.context.apiKeySource,
    peer: settings.target.peerId || undefined,
  });
  const why = await new Promise<"eof" | "signal">((resolve) => {
    stdin.on("end", () => resolve("eof")).on("error", () => resolve("eof"));
    void gone.then(resolve);
    if (io.signal?.aborted) resolve("signal");
    io.signal?.addEventListener("abort", () => resolve("signal"), { once: true });
    stdio.onmessage = (message) => void proxy.handle(message);
    stdio.onerror = (error) => log.stage("stdin-unreadable", { error: error.message });
    void stdio.start();
  });
  await proxy.shutdown(why === "eof" ? EOF_GRACE_MS : 0);
  await stdio.close();
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
  const writeLine = async (line: string) => {
    await writer.ready;
    await writer.write(encoder.encode(`${line}\n`));
  };
  const code = await runMcpServer({
    env: processEnv(),
    cwd: Deno.cwd(),
    input: Deno.stdin.readable,
    writeLine,
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
