/**
 * Benchmark: the latency `openviking-kimi mcp` adds to a tools/call, against a direct HTTP call to the same
 * server. The server is the fake OpenViking /mcp (stateless, SSE replies — what OpenViking's FastMCP endpoint
 * does) on 127.0.0.1 via Deno.serve with keep-alive; the proxy is a subprocess started like production (the
 * `cli` task's flags), driven over its stdio pipes. Warm: both paths are warmed up first, then calls alternate
 * direct/proxy so drift hits both equally.
 *
 * Run: `deno run --allow-read --allow-write --allow-net --allow-env --allow-run bench/mcp_bench.ts [calls] [states]`.
 */

import { FakeMcp } from "../tests/support/fake-mcp.ts";
import { cliArgs, denoEnv } from "../tests/support/run.ts";
import { secretPrint } from "../lib/redact.ts";

/** Latency figures in milliseconds. */
export interface McpBenchResult {
  calls: number;
  /** Through the proxy (stdin line → stdout line). */
  p50Ms: number;
  p95Ms: number;
  /** Direct HTTP POST + reading the SSE reply. */
  directP50Ms: number;
  directP95Ms: number;
  /** Proxy minus direct, per percentile. */
  overheadP50Ms: number;
  overheadP95Ms: number;
  /** From spawning the proxy to its initialize response (includes `deno run` start-up). */
  startupMs: number;
  /** CPU time the proxy process used (Linux; NaN elsewhere), which a loaded machine disturbs far less. */
  startupCpuMs: number;
  proxyCpuUsPerCall: number;
}

/** User + system CPU time of process `pid` in ms, from /proc (10 ms steps); NaN where there is none. */
function cpuMs(pid: number): number {
  try {
    const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Options of the benchmark. */
export interface McpBenchOptions {
  calls?: number;
  warmup?: number;
  /** SSE replies (OpenViking's default) or JSON bodies. */
  sse?: boolean;
  /** Capture states in the hook-state directory, each with 64 secret prints (what a tool call is redacted with). */
  states?: number;
}

/** `count` capture states under `home`'s hook-state directory, each holding 64 prints of made-up secrets. */
async function placeStates(home: string, count: number): Promise<void> {
  const dir = `${home}/.openviking/hook-state/kimicode`;
  await Deno.mkdir(dir, { recursive: true });
  for (let i = 0; i < count; i++) {
    const secrets = Array.from({ length: 64 }, (_, j) => `S${i}x${j}`.padEnd(6 + (i * 64 + j) % 60, "q7"));
    await Deno.writeTextFile(
      `${dir}/bench-${i}.json`,
      JSON.stringify({ secretPrints: secrets.map(secretPrint) }),
    );
  }
  const before = new Date(Date.now() - 60_000); // written a minute ago: the steady state, no write since
  await Deno.utime(dir, before, before);
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** Measures the proxy's added latency per tools/call (≥ 200 calls by default, after a warm-up). */
export async function benchMcpProxy(options: McpBenchOptions = {}): Promise<McpBenchResult> {
  const calls = Math.max(1, options.calls ?? 300);
  const warmup = options.warmup ?? 30;
  const fake = new FakeMcp({ sse: options.sse ?? true });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => headers[k] = v);
    const body = req.method === "POST" ? await req.json() : undefined;
    const reply = await fake.handle(req.method, headers, body);
    return new Response(reply.body || null, { status: reply.status, headers: reply.headers });
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  const home = await Deno.makeTempDir({ prefix: "ovk-mcp-bench-" });
  await placeStates(home, options.states ?? 0);
  const args = [...await cliArgs(), "mcp"];
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { HOME: home, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...denoEnv(), OPENVIKING_URL: url },
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.getReader();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let buffer = "";
  const nextLine = async (): Promise<string> => {
    for (;;) {
      const i = buffer.indexOf("\n");
      if (i >= 0) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the proxy closed its stdout");
      buffer += decoder.decode(value, { stream: true });
    }
  };
  const send = (m: unknown) => writer.write(encoder.encode(`${JSON.stringify(m)}\n`));
  try {
    await send({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "kimi-code", version: "bench" },
      },
    });
    await nextLine();
    const startupMs = performance.now() - started;
    const startupCpuMs = cpuMs(child.pid);
    await send({ jsonrpc: "2.0", method: "notifications/initialized" });

    const args = { query: "tabs or spaces", limit: 5 };
    let id = 1;
    const viaProxy = async (): Promise<number> => {
      const t0 = performance.now();
      const n = id++;
      await send({ jsonrpc: "2.0", id: n, method: "tools/call", params: { name: "find", arguments: args } });
      const line = await nextLine();
      const ms = performance.now() - t0;
      if (!line.includes(`"id":${n},`)) throw new Error(`unexpected reply: ${line.slice(0, 200)}`);
      return ms;
    };
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-11-25",
      "User-Agent": "bench",
    };
    const direct = async (): Promise<number> => {
      const t0 = performance.now();
      const n = id++;
      const res = await fetch(`${url}/mcp`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: n,
          method: "tools/call",
          params: { name: "find", arguments: args },
        }),
      });
      const text = await res.text();
      const data = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).join("") ||
        text;
      const parsed = JSON.parse(data) as { id: number };
      const ms = performance.now() - t0;
      if (parsed.id !== n) throw new Error(`unexpected reply: ${text.slice(0, 200)}`);
      return ms;
    };
    for (let i = 0; i < warmup; i++) {
      await direct();
      await viaProxy();
    }
    const proxied: number[] = [];
    const straight: number[] = [];
    const cpuBefore = cpuMs(child.pid);
    for (let i = 0; i < calls; i++) {
      straight.push(await direct());
      proxied.push(await viaProxy());
    }
    const proxyCpuUsPerCall = round((cpuMs(child.pid) - cpuBefore) / calls * 1000);
    proxied.sort((a, b) => a - b);
    straight.sort((a, b) => a - b);
    const p50 = percentile(proxied, 50);
    const p95 = percentile(proxied, 95);
    const d50 = percentile(straight, 50);
    const d95 = percentile(straight, 95);
    return {
      calls,
      p50Ms: round(p50),
      p95Ms: round(p95),
      directP50Ms: round(d50),
      directP95Ms: round(d95),
      overheadP50Ms: round(p50 - d50),
      overheadP95Ms: round(p95 - d95),
      startupMs: round(startupMs),
      startupCpuMs,
      proxyCpuUsPerCall,
    };
  } finally {
    await writer.close().catch(() => {});
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    await server.shutdown();
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const calls = Number(Deno.args[0] ?? 300);
  const states = Number(Deno.args[1] ?? 0);
  for (const sse of [true, false]) {
    const r = await benchMcpProxy({ calls, sse, states });
    console.log(
      `mcp proxy, ${sse ? "SSE" : "JSON"} replies, ${states} capture states, ${r.calls} warm tools/call: ` +
        `proxy p50 ${r.p50Ms} ms / p95 ${r.p95Ms} ms; direct p50 ${r.directP50Ms} ms / p95 ${r.directP95Ms} ms; ` +
        `added p50 ${r.overheadP50Ms} ms / p95 ${r.overheadP95Ms} ms; start-up to initialize ${r.startupMs} ms; ` +
        `proxy CPU: ${r.startupCpuMs} ms to initialize, ${r.proxyCpuUsPerCall} µs per call`,
    );
  }
}
