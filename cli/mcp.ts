/** `openviking-kimi mcp`: the stdio MCP server proxying to OpenViking's `/mcp`; stdout carries JSON-RPC only. */

// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { loadConfig } from "../openviking/config.ts";
import { isOpen, readBreaker } from "../openviking/breaker.ts";
import { createLogger } from "../lib/log.ts";
import { type Env, hookStateDir, orNoHome, processEnv, sharedStateDir } from "../lib/paths.ts";
import { machinePrints } from "../memory/state.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { gateReason } from "../kimi/gates.ts";
import { printable } from "../lib/neutralize.ts";
import { withoutUserinfo } from "../lib/redact.ts";
import { Proxy, type ProxyOptions } from "../mcp/proxy.ts";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { Readable, Writable } from "node:stream";
import type { ReadableStream as NodeReadable } from "node:stream/web";

/** The workspace of the actor peer: the cwd, or the inherited `PWD` when Kimi runs us from the plugin folder. */
export function workspaceDir(env: Env, cwd: string): string | undefined {
  const norm = (p: string) => p.replace(/\\/g, "/").replace(/\/+$/, "");
  const root = env.KIMI_PLUGIN_ROOT ? norm(env.KIMI_PLUGIN_ROOT) : "";
  const inside = (p: string) => root !== "" && (norm(p) === root || norm(p).startsWith(`${root}/`));
  return !inside(cwd) ? cwd : env.PWD && !inside(env.PWD) ? env.PWD : undefined;
}

/** I/O of one server run (tests run it in-process): `diagnostic` is stderr; `signal` stops it at once (SIGTERM). */
type McpServerIo = {
  env: Env;
  cwd: string;
  input: ReadableStream<Uint8Array>;
  writeLine: (line: string) => Promise<void>;
  diagnostic: (text: string) => void;
  signal?: AbortSignal;
  limits?: ProxyOptions["limits"];
};

/** The most output (in characters) waiting for the client to read it past which notifications are dropped. */
const BACKLOG_CHARS = 1024 * 1024;
const FLOODED =
  "openviking-kimi mcp: OpenViking sends notifications faster than the client reads them; past " +
  "1 MiB waiting to be read they are dropped (replies are never dropped).";

/** Runs the proxy until stdin ends, the output goes away or `signal` aborts; resolves to the exit code. */
export async function runMcpServer(io: McpServerIo): Promise<number> {
  const workspace = workspaceDir(io.env, io.cwd);
  const load = async () => {
    const { config, warnings } = await loadConfig(io.env, workspace);
    const peer = await resolvePeer(workspace, config);
    return {
      settings: { config, peerId: peer.peerId, off: gateReason(config, "", workspace ?? "") },
      warnings,
    };
  };
  const first = await load();
  for (const warning of first.warnings) io.diagnostic(printable(`openviking-kimi mcp: ${warning}`)); // a workspace file's words
  const { settings, settings: { config } } = first;
  const secrets = config.apiKey ? [config.apiKey] : [];
  const log = createLogger({ enabled: config.debug, path: config.debugLogPath, source: "mcp", secrets });
  // Stopped at once: by `signal`, or when the output went away.
  const { promise: stopped, resolve: stop } = Promise.withResolvers<"signal">();
  if (io.signal?.aborted) stop("signal");
  io.signal?.addEventListener("abort", () => stop("signal"), { once: true });
  // The SDK's stdio transport frames the lines (a line that is not a message is dropped, one over 10 MiB
  // ends the session); its output goes line by line to `writeLine`, the lines not yet written counted.
  const stdout = new Writable({
    decodeStrings: false,
    write: (line: string, _, done) => void io.writeLine(line.trimEnd()).then(() => done(), done),
  }).on("error", () => stop("signal")).setMaxListeners(0); // a `drain` listener per send waiting for it
  const stdin = Readable.fromWeb(io.input as NodeReadable);
  const stdio = new StdioServerTransport(stdin, stdout);
  let dropped = 0;
  const write = async (message: JSONRPCMessage) => {
    const line = "id" in message ? "" : JSON.stringify(message); // a notification may be dropped
    if (line && stdout.writableLength + line.length > BACKLOG_CHARS) {
      if (dropped++ === 0) io.diagnostic(FLOODED);
      return;
    }
    await Promise.race([stdio.send(message), stopped]);
  };
  const proxy: Proxy = new Proxy({
    settings,
    reload: async () => (await load()).settings,
    send: write,
    log,
    limits: io.limits,
    prints: () => machinePrints(orNoHome(() => hookStateDir(io.env)) ?? ""),
    paused: async () => {
      const b = await readBreaker(orNoHome(() => sharedStateDir(io.env)) ?? "", proxy.settings.config.mcpUrl);
      return b !== undefined && isOpen(b);
    },
  });
  const { credentialSource, apiKeySource } = config;
  const url = withoutUserinfo(config.mcpUrl);
  log.stage("start", { url, credentialSource, apiKeySource, peer: settings.peerId || undefined });
  const read = new Promise<"eof">((resolve) => {
    stdio.onclose = () => resolve("eof");
    stdin.on("close", () => resolve("eof"));
  });
  stdio.onmessage = (message) => void proxy.handle(message);
  stdio.onerror = (error) => log.stage("client-line-dropped", { error: error.name });
  await stdio.start();
  const why = await Promise.race([read, stopped]);
  await proxy.shutdown(why === "eof" ? 5_000 : 0); // running requests may finish after stdin closed
  log.stage("exit", { why, droppedNotifications: dropped || undefined });
  await log.flush();
  return 0;
}

/** `openviking-kimi mcp` (the table has refused any argument). */
export async function mcpCommand(): Promise<number> {
  const stop = new AbortController();
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGTERM", "SIGINT", "SIGHUP"];
  for (const s of signals) Deno.addSignalListener(s, () => stop.abort());
  const [writer, encoder] = [Deno.stdout.writable.getWriter(), new TextEncoder()];
  const code = await runMcpServer({
    env: processEnv(),
    cwd: Deno.cwd(),
    input: Deno.stdin.readable,
    writeLine: (line) => writer.write(encoder.encode(`${line}\n`)),
    diagnostic: (text) => Deno.stderr.writeSync(encoder.encode(`${text}\n`)),
    signal: stop.signal,
  });
  await writer.close().catch(() => {});
  // Everything is written and the log flushed; a stdin read may still be pending (after SIGTERM or when the
  // client closed only stdout), and it must not keep the process alive.
  Deno.exit(code);
}
