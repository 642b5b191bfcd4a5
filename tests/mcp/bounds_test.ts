/**
 * The proxy's bounds (in-process, with bounds shorter than production's): replies over the byte bounds
 * (a JSON body, one SSE event, an SSE stream, gzip bombs; error pages: proxy_fake_test), replies that
 * stall after their headers, SSE keep-alives, and stalled tool calls that must not hold up ping, tools/list
 * or initialize. Each failure is a JSON-RPC error for its own request, and the proxy goes on.
 */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, gzipBomb, type RawReply } from "../support/fake-openviking.ts";
import { OFFERED_TOOLS, serveFakeMcp, sseBody, sseReply } from "../support/fake-mcp.ts";
import { tempDir } from "../support/temp.ts";
import { errorOf, type Json, openSession, resultOf, startProxy, toolNames, until } from "./harness.ts";

const KIB = 1024;
const BYTES = { replyBytes: 64 * KIB, streamBytes: 256 * KIB };

const textOf = (response: Json) => String((resultOf(response).content as Json[])[0].text);

Deno.test("mcp/bounds: a JSON body or an SSE event over the bound is a -32005 error naming it; the next call works", async () => {
  await using home = await tempDir("ovk-mcp-");
  for (const sse of [false, true]) {
    await using fake = await FakeOpenViking.start({ mcp: { sse } });
    // The stream's bound left at production's: a big read of one event would pass a small one first.
    const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url }, {
      limits: { replyBytes: 64 * KIB },
    });
    await proxy.initialize();
    // the fake echoes the arguments: a 60 KiB reply fits, a 100 KiB one does not
    const small = "s".repeat(60 * KIB);
    const fits = await proxy.call(1, "write", { content: small });
    assertTrue(textOf(fits).includes(small));
    const error = errorOf(await proxy.call(2, "write", { content: "b".repeat(100 * KIB) }));
    assertEquals([error.code, error.data?.part], [-32005, sse ? "event" : "reply"]);
    assertMatch(error.message, /larger than 64 KiB.*fewer results.*narrower URI/);
    // Counted as inflated (a 1 MiB gzip bomb is ~1 KiB on the wire); 1 GiB streamed is not read to its end.
    const type = sse ? "text/event-stream" : "application/json";
    const start = sse ? 'data: {"x":"' : '{"x":"';
    const bomb: RawReply = { status: 200, headers: { "content-type": type, "content-encoding": "gzip" } };
    const giant: RawReply = { status: 200, headers: { "content-type": type }, repeatBytes: 1024 ** 3 };
    const replies = [{ ...bomb, body: await gzipBomb(1 << 20) }, { ...giant, body: start.padEnd(KIB, "y") }];
    // One id for both, as a client may reuse an answered request's id: each reply is its own request's.
    for (const raw of replies) {
      fake.fault({ route: "POST /mcp", raw, times: 1 });
      const refused = errorOf(await proxy.call(3, "read"));
      assertEquals([refused.code, refused.data?.part], [-32005, sse ? "event" : "reply"]);
    }
    assertEquals(proxy.messages().filter((m) => m.id === 3).length, 2);
    assertEquals(textOf(await proxy.call(4, "health")), "fake health: {}");
    assertEquals(toolNames(await proxy.request(5, "tools/list")), OFFERED_TOOLS);
    assertEquals(await proxy.close(), 0);
  }
});

Deno.test("mcp/bounds: an SSE stream over its bound without the response: the events before it arrive, then a -32005 error", async () => {
  await using session = await openSession({ mcp: { sse: true } }, { limits: BYTES });
  const { fake, proxy } = session;
  const params = (i: number) => ({ level: "info", data: `${i}`.padEnd(KIB) });
  const note = (i: number) => ({
    data: { jsonrpc: "2.0", method: "notifications/message", params: params(i) },
  });
  fake.mcp.script = (messages) =>
    messages[0].method === "tools/call" && (messages[0].params as Json).name === "tree"
      ? sseReply(sseBody(Array.from({ length: 400 }, (_, i) => note(i))))
      : undefined;
  const error = errorOf(await proxy.call(1, "tree"));
  assertEquals([error.code, error.data?.part], [-32005, "stream"]);
  assertMatch(error.message, /stream passed 256 KiB before the response/);
  const notes = proxy.messages().filter((m) => m.method === "notifications/message").length;
  assertTrue(notes > 100 && notes < 400, `${notes} notifications forwarded before the bound`);
  assertEquals(textOf(await proxy.call(2, "health")), "fake health: {}");
});

Deno.test("mcp/bounds: SSE keep-alives reset the idle limit; silence ends a stream or a JSON body; endless keep-alives end at the tool-call limit", async () => {
  await using home = await tempDir("ovk-mcp-");
  let probing = false; // once set, a stalled reply writes every tick: a connection the proxy closed shows at once
  const keepAlive = (n: number) => n % 4 ? "" : ": keep-alive\n\n"; // every 200 ms
  const result = (id: number) => {
    const result = { content: [{ type: "text", text: "after 10 keep-alives" }] };
    return { end: `data: ${JSON.stringify({ jsonrpc: "2.0", id, result })}\n\n` };
  };
  await using server = serveFakeMcp({
    find: { sse: true, head: "", tick: (n) => n > 40 ? result(1) : keepAlive(n) }, // 2 s, idle limit 1 s
    grep: { sse: true, head: ": open\n\n", tick: () => probing ? ":\n" : "" },
    glob: { sse: true, head: "", tick: keepAlive },
    read: { sse: false, head: '{"jsonrpc":"2.0",', tick: () => probing ? " " : "" }, // OPENVIKING_TIMEOUT_MS
    search: "hang", // a stopped server: the silence bound, not the tool-call limit, and no knob to raise
  });
  const proxy = startProxy(
    { HOME: home.path, OPENVIKING_URL: server.url, OPENVIKING_TIMEOUT_MS: "1000" },
    { limits: { toolCallMs: 3_000, silenceMs: 1_000 } },
  );
  await proxy.initialize();
  for (const [id, name] of [[1, "find"], [2, "grep"], [3, "glob"], [5, "read"], [6, "search"]] as const) {
    await proxy.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } });
  }
  assertEquals(textOf(await proxy.response(1)), "after 10 keep-alives");
  for (const id of [2, 5]) {
    const { code, message } = errorOf(await proxy.response(id));
    assertEquals([code, /started its reply, then sent nothing for 1 s/.test(message)], [-32004, true]);
  }
  const hung = errorOf(await proxy.response(6)).message;
  assertMatch(hung, /did not answer within 1 s\..*openviking-kimi doctor/);
  assertNotMatch(hung, /OPENVIKING_TIMEOUT_MS/);
  const endless = errorOf(await proxy.response(3));
  assertMatch(
    `${endless.code} ${endless.message}`,
    /^-32004 .*did not finish its reply within 3 s, the proxy's limit for one request/,
  );
  probing = true;
  await until(() => server.counts.cancelled === 3, "the three bodies closed").catch((e) => {
    throw new Error(`${e.message}: ${JSON.stringify(server.counts)}`);
  });
  assertEquals(textOf(await proxy.call(4, "health")), "fake health: {}");
  assertEquals(await proxy.close(), 0);
});

Deno.test("mcp/bounds: 24 requests at once; stalled tool calls delay no other call within them, nor ping or initialize; a cancel withdraws a queued call and is sent for a running one", async () => {
  await using session = await openSession();
  const { fake, proxy } = session;
  const held = fake.mcp.hold("find");
  const call = (id: unknown) =>
    proxy.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "find" } });
  const cancel = (requestId: unknown) =>
    proxy.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "user" } });
  for (let i = 0; i < 23; i++) await call(i);
  await until(() => fake.mcp.active === 23, "23 calls in flight");
  // Replies come back out of order: a held call does not block another.
  const fast = await proxy.call("fast", "read", { uris: ["viking://x"] });
  assertEquals(textOf(fast), 'fake read: {"uris":["viking://x"]}');
  await call(23);
  await until(() => fake.mcp.active === 24, "24 calls in flight");
  await call("queued");
  assertEquals(resultOf(await proxy.request("ping", "ping")), {});
  const params = {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "kimi-code", version: "2" },
  };
  const again = await proxy.request("init-again", "initialize", params);
  assertEquals((resultOf(again).serverInfo as Json).name, "openviking");
  // the calls were still stalled all along
  assertEquals(proxy.messages().filter((m) => typeof m.id === "number").length, 0);
  await cancel("queued");
  await cancel(3);
  await until(() => fake.mcp.receivedMethod("notifications/cancelled").length === 1, "the forwarded cancel");
  held.release();
  for (const i of [0, 1, 2, 4, 23]) resultOf(await proxy.response(i));
  assertEquals(toolNames(await proxy.request("list", "tools/list")), OFFERED_TOOLS);
  assertEquals(await proxy.close(), 0);
  assertEquals(fake.mcp.maxActive, 24);
  assertEquals(fake.mcp.receivedMethod("ping").length, 0); // answered by the proxy, Kimi's peer
  assertEquals(fake.mcp.receivedMethod("notifications/cancelled").map((m) => (m.params as Json).requestId), [
    3,
  ]);
  assertEquals(fake.mcp.received.some((m) => m.id === "queued"), false);
  assertEquals(proxy.messages().some((m) => m.id === "queued" || m.id === 3), false);
});
