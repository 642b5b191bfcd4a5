/** The proxy subprocess started like production, on raw pipes: stdout, exit codes, SIGTERM, bounded RSS. */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, gzipBomb, type RawReply } from "../support/fake-openviking.ts";
import { OFFERED_TOOLS, serveFakeMcp } from "../support/fake-mcp.ts";
import { tempDir } from "../support/temp.ts";
import { until } from "./harness.ts";
import { childEnv, productionCommand, REPO_ROOT } from "./subprocess.ts";

const KEY = "e2e-secret-key-8d41b2";

const INIT = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "kimi-code", version: "2.1.0" },
  },
};

const textOf = (result: unknown) => (result as { content: { text: string }[] }).content[0].text;

/** The proxy on raw pipes. */
async function spawnRaw(home: string, env: Record<string, string>) {
  const { command, args } = await productionCommand();
  const child = new Deno.Command(command, {
    args,
    cwd: REPO_ROOT,
    env: await childEnv(home, env),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const lines: string[] = [];
  const reader = child.stdout.getReader();
  let ended = false;
  const reading = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for (let got = await reader.read(); !got.done; got = await reader.read()) {
      buffer += decoder.decode(got.value, { stream: true });
      for (let i; (i = buffer.indexOf("\n")) >= 0; buffer = buffer.slice(i + 1)) {
        lines.push(buffer.slice(0, i));
      }
    }
    return buffer;
  })().finally(() => ended = true);
  const stderr = new Response(child.stderr).text();
  /** `find()`'s value once it has one; fails when stdout ended first (the proxy died) or after 30 s. */
  const poll = async <T>(find: () => T | undefined, what: string): Promise<T> => {
    for (let i = 0; i < 3000; i++) {
      const hit = find();
      if (hit !== undefined) return hit;
      if (ended) throw new Error(`stdout ended before ${what}; stderr: ${await stderr}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`no ${what} within 30 s`);
  };
  return {
    child,
    lines,
    stderr,
    reading,
    send: (m: unknown) => writer.write(encoder.encode(`${JSON.stringify(m)}\n`)),
    closeStdin: () => writer.close(),
    /** The client stops reading stdout (its end of the pipe closes). */
    stopReading: () => reader.cancel(),
    linesAtLeast: (n: number) => poll(() => lines.length >= n || undefined, `${n} lines`),
    /** The response to request `id`. */
    response: (id: unknown) =>
      poll(
        () =>
          lines.map((l) => JSON.parse(l) as Record<string, unknown>)
            .find((m) => m.id === id && ("result" in m || "error" in m)),
        `the response to ${JSON.stringify(id)}`,
      ),
  };
}

/**
 * A field of /proc/<pid>/status in MiB (VmRSS: now, VmHWM: the peak so far); Linux only. Read by `cat`, as
 * Deno's permissions keep /proc from `--allow-read`.
 */
async function memoryMiB(pid: number, field: "VmRSS" | "VmHWM"): Promise<number> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/status`], stdout: "piped" }).output();
  const status = new TextDecoder().decode(out.stdout);
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return Math.round(kb / 1024);
}

for (const how of ["stdin EOF", "SIGTERM"] as const) {
  Deno.test(`mcp/e2e: raw pipes: stdout is JSON-RPC lines only; ${how} exits 0`, async () => {
    await using home = await tempDir("ovk-mcp-");
    const fake = await FakeOpenViking.start({ apiKey: KEY, mcp: { sse: true } });
    try {
      const p = await spawnRaw(home.path, {
        OPENVIKING_URL: fake.url,
        OPENVIKING_API_KEY: KEY,
        OPENVIKING_DEBUG: "1",
      });
      await p.send(INIT);
      await p.linesAtLeast(1);
      await p.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      const big = (i: number) => `${i}:`.padEnd(100_000, "xyz");
      for (let i = 1; i <= 30; i++) {
        await p.send({
          jsonrpc: "2.0",
          id: i,
          method: "tools/call",
          params: { name: "write", arguments: { uri: "viking://x", content: big(i) } },
        });
      }
      await p.send({ jsonrpc: "2.0", id: 31, method: "tools/call", params: { name: "nope", arguments: {} } });
      await p.linesAtLeast(32);
      if (how === "SIGTERM") p.child.kill("SIGTERM");
      else await p.closeStdin();
      const status = await p.child.status;
      assertEquals(status.code, 0);
      assertEquals(await p.reading, ""); // nothing but whole lines
      const messages = p.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      assertEquals(messages.map((m) => m.id).sort((a, b) => Number(a) - Number(b)), [...Array(32).keys()]);
      for (const m of messages.filter((m) => typeof m.id === "number" && m.id >= 1 && m.id <= 30)) {
        assertTrue(JSON.stringify(m).includes(big(m.id as number)), `reply ${m.id} intact`);
      }
      assertEquals(((messages.find((m) => m.id === 31)!.error) as { code: number }).code, -32602);
      const stderr = await p.stderr;
      const log = await Deno.readTextFile(`${home.path}/.openviking/logs/kimicode-hooks.log`);
      for (const text of [stderr, log, p.lines.join("\n")]) assertNotMatch(text, new RegExp(KEY));
      assertEquals(stderr, "");
    } finally {
      await fake.close();
    }
  });
}

Deno.test("mcp/e2e: raw pipes: when the client stops reading stdout, the proxy exits instead of lingering", async () => {
  await using home = await tempDir("ovk-mcp-");
  // (the fake on Deno.serve, not on node:http: the proxy exits with requests in flight, which node reports)
  await using server = serveFakeMcp();
  const p = await spawnRaw(home.path, { OPENVIKING_URL: server.url });
  await p.send(INIT);
  await p.linesAtLeast(1);
  await p.stopReading(); // stdin stays open
  await p.reading;
  for (let i = 1; i <= 3; i++) await p.send({ jsonrpc: "2.0", id: i, method: "ping" }).catch(() => {});
  assertEquals((await p.child.status).code, 0);
  await p.stderr;
});

Deno.test("mcp/e2e: gzip bombs and 1 GB replies (JSON, SSE) to tools/call become JSON-RPC errors; RSS stays bounded; the proxy lives", async () => {
  await using home = await tempDir("ovk-mcp-");
  await using fake = await FakeOpenViking.start();
  const p = await spawnRaw(home.path, { OPENVIKING_URL: fake.url });
  await p.send(INIT);
  await p.response(0);
  await p.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await until(
    () =>
      fake.requestsTo("POST /mcp").some((r) =>
        (r.body as Record<string, unknown>)?.method === "notifications/initialized"
      ),
    "notifications/initialized",
  );
  const before = await memoryMiB(p.child.pid, "VmRSS");
  const bomb = await gzipBomb(2 * 1024 ** 3);
  const gzip = { "content-encoding": "gzip" };
  const replies: RawReply[] = [];
  for (const type of ["application/json", "text/event-stream"]) {
    // ~2.8 MB on the wire, 2 GiB once fetch inflates it
    replies.push({ status: 200, headers: { "content-type": type, ...gzip }, body: bomb });
    // 1 GiB of plain bytes, streamed: one JSON body, or one SSE event that never ends
    const start = type === "application/json" ? '{"x":"' : 'data: {"x":"';
    replies.push({
      status: 200,
      headers: { "content-type": type },
      body: `${start}${"y".repeat(65_536 - start.length)}`,
      repeatBytes: 1024 ** 3,
    });
  }
  let id = 1;
  for (const raw of replies) {
    fake.fault({ route: "POST /mcp", raw, times: 1 });
    await p.send({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "read", arguments: { uris: ["viking://big"] } },
    });
    const refused = (await p.response(id++)).error as { code: number; message: string };
    assertEquals(refused?.code, -32005, JSON.stringify(refused));
    assertMatch(refused.message, /16 MiB/);
    assertMatch(refused.message, /fewer results|narrower/);
    // the next requests work
    await p.send({ jsonrpc: "2.0", id, method: "tools/list" });
    assertEquals(
      ((await p.response(id++)).result as { tools: { name: string }[] }).tools.map((t) => t.name),
      OFFERED_TOOLS,
    );
    await p.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "health", arguments: {} } });
    assertEquals(textOf((await p.response(id++)).result), "fake health: {}");
  }
  const peak = await memoryMiB(p.child.pid, "VmHWM");
  console.log(`proxy RSS before the giant replies: ${before} MiB; peak after all four: ${peak} MiB`);
  assertTrue(peak - before < 256, `peak RSS ${peak} MiB grew more than 256 MiB from ${before} MiB`);
  await p.closeStdin();
  assertEquals((await p.child.status).code, 0);
  assertEquals(await p.stderr, "");
});
