import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { FakeOpenViking as FakeOpenViking, gzipBomb } from "../tests/support/fake-openviking.ts";
import * as z from "zod/mini";
import { AnyResult, Budget, createClient } from "./client.ts";

Deno.test("client: headers, envelope, never the key in an error", async () => {
  const fake = await FakeOpenViking.start({ apiKey: "sekrit-key-123" });
  try {
    const client = createClient({
      baseUrl: `${fake.url}/`,
      apiKey: "sekrit-key-123",
      account: "acct",
      user: "alice",
      peerId: "github.com-x-y",
      userAgent: "openviking-memory-kimicode/0.1.0",
      timeoutMs: 2000,
    });
    const ok = await client.request("GET", "/api/v1/system/status", AnyResult);
    assertEquals(ok, { ok: true, status: 200, result: { initialized: true, user: "default" } });
    const h = fake.requests[0].headers;
    assertEquals([
      h.authorization,
      h["x-openviking-account"],
      h["x-openviking-user"],
      h["x-openviking-actor-peer"],
      h["user-agent"],
    ], [
      "Bearer sekrit-key-123",
      "acct",
      "alice",
      "github.com-x-y",
      "openviking-memory-kimicode/0.1.0",
    ]);
    const noPeer = await client.request("POST", "/api/v1/sessions/kc-1/messages", AnyResult, {
      body: { role: "user", content: "x" },
      peerId: null,
    });
    assertTrue(noPeer.ok);
    assertEquals(fake.requests[1].headers["x-openviking-actor-peer"], undefined);
    assertEquals(fake.requests[1].headers["content-type"], "application/json");
    const bad = createClient({ ...client.options, apiKey: "wrong-key-456" });
    const denied = await bad.request("GET", "/api/v1/system/status", AnyResult);
    assertEquals(denied.ok, false);
    if (!denied.ok) {
      assertEquals([denied.status, denied.kind, denied.retryable, denied.error.code], [
        401,
        "auth",
        true,
        "UNAUTHENTICATED",
      ]);
      assertTrue(!JSON.stringify(denied).includes("wrong-key-456"));
    }
    const notFound = await client.request("POST", "/api/v1/sessions/nope/commit", AnyResult, { body: {} });
    assertEquals(notFound.ok ? 0 : notFound.status, 404);
  } finally {
    await fake.close();
  }
});

Deno.test("client: /health is asked without the key (an address not known to be OpenViking gets none)", async () => {
  await using fake = await FakeOpenViking.start({ apiKey: "sekrit-key-123" });
  const client = createClient({
    baseUrl: fake.url,
    apiKey: "sekrit-key-123",
    userAgent: "t",
    timeoutMs: 2000,
  });
  assertTrue((await client.request("GET", "/health", AnyResult)).ok);
  assertTrue((await client.request("GET", "/api/v1/system/status", AnyResult)).ok);
  assertEquals(fake.requests.map((r) => [r.path, r.headers.authorization]), [
    ["/health", undefined],
    ["/api/v1/system/status", "Bearer sekrit-key-123"],
  ]);
});

Deno.test("client: 5xx, dropped connections and timeouts are retryable failures with status 0 or 5xx", async () => {
  const fake = await FakeOpenViking.start();
  try {
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 300 });
    fake.fault({ route: "GET /api/v1/system/status", status: 503, times: 1 });
    fake.fault({ route: "GET /api/v1/system/status", drop: true, times: 1 });
    fake.fault({ route: "GET /api/v1/system/status", delayMs: 1500, times: 1 });
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await client.request("GET", "/api/v1/system/status", AnyResult));
    assertEquals(results.map((r) => [r.ok, r.status, !r.ok && r.retryable]), [[false, 503, true], [
      false,
      0,
      true,
    ], [false, 0, true]]);
    const timeout = results[2];
    if (!timeout.ok) assertMatch(timeout.error.message, /within 300 ms/);
  } finally {
    await fake.close();
  }
});

Deno.test("client: a spent budget fails fast without a request; the timeout never exceeds the budget", async () => {
  const fake = await FakeOpenViking.start();
  try {
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 60_000 });
    const spent = await client.request("GET", "/health", AnyResult, { budget: new Budget(10) });
    assertEquals(spent.ok ? "" : spent.error.code, "BUDGET_SPENT");
    assertEquals(fake.requests.length, 0);
    fake.fault({ route: "GET /health", delayMs: 2000, times: 1 });
    const budget = new Budget(300);
    const r = await client.request("GET", "/health", AnyResult, { budget });
    assertEquals(r.ok ? "" : r.error.code, "TIMEOUT");
    assertTrue(budget.remaining() === 0 || budget.remaining() < 50);
  } finally {
    await fake.close();
  }
});

Deno.test("client: network failure names the origin and never throws", async () => {
  const client = createClient({
    baseUrl: "http://127.0.0.1:9",
    apiKey: "k-secret",
    userAgent: "t",
    timeoutMs: 1000,
  });
  const r = await client.request("GET", "/health", AnyResult);
  assertEquals(r.ok, false);
  if (!r.ok) {
    assertEquals([r.status, r.retryable, r.error.code], [0, true, "NETWORK"]);
    assertMatch(r.error.message, /127\.0\.0\.1:9/);
    assertTrue(!r.error.message.includes("k-secret"));
  }
});

Deno.test("client: a 300 KB gzip reply that inflates to 2 GB is not read past the bound", async () => {
  await using fake = await FakeOpenViking.start();
  const bomb = await gzipBomb(2 * 1024 ** 3);
  fake.fault({
    route: "POST /api/v1/search/search",
    raw: {
      status: 200,
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: bomb,
    },
  });
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 20_000 });
  const before = Deno.memoryUsage().rss;
  const r = await client.request("POST", "/api/v1/search/search", AnyResult, { body: { query: "x" } });
  const grown = Deno.memoryUsage().rss - before;
  assertEquals(r.ok ? "" : r.kind, "too-large");
  assertTrue(grown < 256 * 1024 ** 2, `RSS grew ${Math.round(grown / 1024 ** 2)} MB`);
  // A plain giant reply (no compression) is cut at the bound too.
  fake.clearFaults();
  fake.fault({
    route: "GET /api/v1/content/read",
    raw: { status: 200, body: "x".repeat(1 << 16), repeatBytes: 1 << 30 },
  });
  const big = await client.request("GET", "/api/v1/content/read", AnyResult, {
    query: { uri: "viking://x" },
  });
  assertEquals(big.ok ? "" : big.kind, "too-large");
  const allowed = await client.request("GET", "/health", AnyResult, { maxReplyBytes: 1 << 20 });
  assertTrue(allowed.ok, "the client works on after refusing giants");
});

Deno.test("client: an OK envelope whose result is not the route's shape is a not-openviking failure, never a cast", async () => {
  await using fake = await FakeOpenViking.start();
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
  const Status = z.looseObject({ user: z.string() });
  const fine = await client.request("GET", "/api/v1/system/status", Status);
  assertEquals(fine.ok ? fine.result.user : "", "default", "a matching result comes back parsed");
  for (const result of ["not an object", { user: 42 }, null]) {
    fake.clearFaults();
    fake.fault({
      route: "GET /api/v1/system/status",
      raw: {
        status: 200,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ status: "ok", result }),
      },
    });
    const r = await client.request("GET", "/api/v1/system/status", Status);
    assertEquals(r.ok ? "ok" : [r.kind, r.status, r.retryable, r.error.code], [
      "not-openviking",
      200,
      true,
      "UNEXPECTED_RESULT",
    ], JSON.stringify(result));
    if (!r.ok) {
      assertMatch(
        r.error.message,
        /GET \/api\/v1\/system\/status answered OK, but .* is not what OpenViking sends/,
      );
    }
  }
  // A write takes any result: only the envelope's "ok" counts.
  fake.clearFaults();
  fake.fault({
    route: "POST /api/v1/sessions/:id/messages",
    raw: {
      status: 200,
      headers: { "content-type": "application/json" },
      body: '{"status":"ok","result":"stored"}',
    },
  });
  const write = await client.request("POST", "/api/v1/sessions/s/messages", AnyResult, { body: { x: 1 } });
  assertEquals(write.ok, true);
});

Deno.test("client: a failure's words come neutralised and without a secret, whatever the server put in them", async () => {
  const key = "sk-client-0123456789abcdef";
  await using fake = await FakeOpenViking.start({ apiKey: "another-key" });
  const client = createClient({ baseUrl: fake.url, apiKey: key, userAgent: "t", timeoutMs: 2000 });
  fake.fault({
    route: "GET /api/v1/system/status",
    status: 401,
    error: {
      code: "UNAUTHENTICATED\x1b[2J",
      message: `no: Bearer ${key} (${key})\x1b]0;owned\x07 <b>at</b> https://u:pw-123456@h.example/`,
      details: { key, note: "\x1b[31m" },
    },
    times: 1,
  });
  const refused = await client.request("GET", "/api/v1/system/status", AnyResult);
  assertEquals(refused.ok ? "" : [refused.kind, refused.error], ["auth", {
    code: "UNAUTHENTICATED",
    message: "no: Bearer *** (***) &lt;b>at&lt;/b> https://h.example/",
  }]);
  fake.fault({
    route: "GET /health",
    raw: { status: 200, headers: { "content-type": "text/html" }, body: "<title>Sign\x1b[8m in</title>" },
    times: 1,
  });
  const page = await client.request("GET", "/health", AnyResult);
  assertEquals(
    page.ok ? "" : page.error.message,
    `${fake.url} answered HTTP 200 with text/html "Sign in", not an OpenViking reply`,
  );
});

Deno.test("client: a redirect to an address that is not a URL is a redirect failure, never a throw", async () => {
  await using fake = await FakeOpenViking.start();
  fake.fault({ route: "*", raw: { status: 301, headers: { location: "http://exa mple.com/" } } });
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
  const r = await client.request("GET", "/health", AnyResult);
  assertEquals(r.ok ? "" : [r.kind, r.status, r.location, r.error.message], [
    "redirect",
    301,
    undefined,
    `${fake.url} redirects (HTTP 301) to an address that is not a URL`,
  ]);
});

Deno.test("client: a connection never made (refused) is CONNECT: nothing reached the server", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, userAgent: "t", timeoutMs: 1000 });
  const r = await client.request("POST", "/api/v1/sessions/kc-s/messages/batch", AnyResult, { body: {} });
  assertEquals(r.ok ? "" : [r.status, r.error.code], [0, "CONNECT"]);
});
