/** The proxy as a subprocess started like production (the cli task's flags), on raw pipes: stdout framing, exit on EOF and SIGTERM. */

import { assertEquals, assertNotMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";
import { until } from "./harness.ts";
import { cliArgs, denoEnv } from "../support/run.ts";

const KEY = "e2e-secret-key-8d41b2";
const INIT = {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "kimi-code", version: "2" },
};

for (const how of ["stdin EOF", "SIGTERM"] as const) {
  Deno.test(`mcp/e2e: raw pipes: stdout is JSON-RPC lines only; ${how} exits 0`, async () => {
    await using home = await tempDir("ovk-mcp-");
    await using fake = await FakeOpenViking.start({ apiKey: KEY, mcp: { sse: true } });
    const env = { HOME: home.path, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...denoEnv() };
    const child = new Deno.Command(Deno.execPath(), {
      args: [...await cliArgs(), "mcp"],
      env: { ...env, OPENVIKING_URL: fake.url, OPENVIKING_API_KEY: KEY, OPENVIKING_DEBUG: "1" },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    const send = (m: unknown) => writer.write(new TextEncoder().encode(`${JSON.stringify(m)}\n`));
    let out = "";
    const reading = child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({ write: (text) => void (out += text) }),
    );
    const stderr = new Response(child.stderr).text();
    const lines = () => out.split("\n").slice(0, -1);
    await send({ jsonrpc: "2.0", id: 0, method: "initialize", params: INIT });
    await until(() => lines().length === 1, "the initialize response");
    await send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const big = (i: number) => `${i}:`.padEnd(100_000, "xyz");
    for (let id = 1; id <= 30; id++) {
      const params = { name: "write", arguments: { uri: "viking://x", content: big(id) } };
      await send({ jsonrpc: "2.0", id, method: "tools/call", params });
    }
    await send({ jsonrpc: "2.0", id: 31, method: "tools/call", params: { name: "nope", arguments: {} } });
    await until(() => lines().length >= 32, "32 lines");
    if (how === "SIGTERM") child.kill("SIGTERM");
    else await writer.close();
    assertEquals((await child.status).code, 0);
    await reading;
    assertTrue(out.endsWith("\n"), "nothing but whole lines");
    const messages = lines().map((l) => JSON.parse(l) as { id: number; error?: { code: number } });
    assertEquals(messages.map((m) => m.id).sort((a, b) => a - b), [...Array(32).keys()]);
    for (const m of messages.filter((m) => m.id >= 1 && m.id <= 30)) {
      assertTrue(JSON.stringify(m).includes(big(m.id)), `reply ${m.id} intact`);
    }
    assertEquals(messages.find((m) => m.id === 31)?.error?.code, -32602);
    const log = await Deno.readTextFile(`${home.path}/.openviking/logs/kimicode-hooks.log`);
    for (const text of [log, out]) assertNotMatch(text, new RegExp(KEY));
    assertEquals(await stderr, "");
  });
}
