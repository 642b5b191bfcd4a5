/** The one classification of replies: only OpenViking's own envelope rejects; everything else keeps writes. */

import fc from "fast-check";
import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { neutralize } from "../lib/neutralize.ts";
import {
  AnyResult,
  Budget,
  classifyReply,
  cleanFailure,
  createClient,
  type FailureKind,
  readBody,
} from "./client.ts";
import { withoutUserinfo } from "../lib/redact.ts";
import { hostileText, params } from "../tests/fuzz/arbitraries.ts";
import { FakeOpenViking, FINAL_CODES, SERVER_ERROR_CODES } from "../tests/support/fake-openviking.ts";
import * as z from "zod/mini";

const origin = "http://127.0.0.1:1933";
const json = (body: string) => ({ status: 200, headers: { "content-type": "application/json" }, body });
const env = (status: "ok" | "error", extra: Record<string, unknown> = {}) =>
  JSON.stringify({ status, ...extra });
const err = (code: string, message = "m", details?: unknown) =>
  env("error", { error: { code, message, ...(details ? { details } : {}) } });

// deno-fmt-ignore: one reply a line, a table
const CASES: [string, number, string, FailureKind | "ok", Record<string, string>?][] = [
  ["envelope ok", 200, env("ok", { result: { a: 1 } }), "ok"],
  ["/health (fields beside status)", 200, env("ok", { healthy: true, version: "0.5.2" }), "ok"],
  ["HTML 200", 200, "<html><title>Welcome to nginx!</title></html>", "not-openviking"],
  ["non-JSON 200", 200, "OK", "not-openviking"],
  ["empty 200", 200, "", "not-openviking"],
  ["foreign JSON 200", 200, '{"result": 1}', "not-openviking"],
  ["FastAPI 404", 404, '{"detail":"Not Found"}', "not-openviking"],
  ["HTML 404", 404, "<h1>404</h1>", "not-openviking"],
  ["OpenViking route 404", 404, err("NOT_FOUND", "Not Found"), "missing-route"],
  ["OpenViking 405", 405, err("METHOD_NOT_ALLOWED"), "missing-route"],
  ["session not found", 404, err("NOT_FOUND", "Not found: kc-x", { type: "session", resource: "kc-x" }), "rejected"],
  ["invalid argument", 400, err("INVALID_ARGUMENT"), "rejected"],
  ["too long (OpenViking)", 413, err("INVALID_ARGUMENT"), "rejected"],
  ["too long (proxy)", 413, "<html>413 Request Entity Too Large</html>", "not-openviking"],
  ["conflict", 409, err("CONFLICT"), "server"],
  ["retryable conflict", 409, err("CONFLICT", "busy", { retryable: true }), "server"],
  ["an error envelope with no code, in a 200", 200, env("error"), "server"],
  ["an error envelope with no code, in a 400", 400, env("error", { error: { message: "no" } }), "server"],
  ["a final code in a 200", 200, err("INVALID_ARGUMENT"), "server"],
  ["an ok envelope with a final code, in a 400", 400, env("ok", { error: { code: "INVALID_ARGUMENT" } }), "server"],
  ["a code OpenViking does not send", 400, err("NO_SUCH_CODE"), "server"],
  ["an upstream model refused the server's request", 400, err("INVALID_ARGUMENT", "Upstream model request was rejected (HTTP 400)", { upstream_message: "bad model" }), "model"],
  // A model provider refusing the server's key is passed on as a 401: the server's model, not our key.
  ["an upstream model refused the server's key", 401, err("UNAUTHENTICATED", "Upstream model authentication failed (HTTP 401): Incorrect API key", { upstream_message: "Incorrect API key" }), "model"],
  ["an upstream 401 without details", 401, err("UNAUTHENTICATED", "Upstream model authentication failed"), "model"],
  ["the server's embedding model unreachable", 503, err("UNAVAILABLE", "Upstream model service unavailable: Connect call failed", { upstream_message: "x" }), "model"],
  ["401 envelope", 401, err("UNAUTHENTICATED"), "auth"],
  ["401 bare", 401, "Unauthorized", "auth"],
  ["403", 403, err("PERMISSION_DENIED"), "auth"],
  ["auth code in a 200 error", 200, err("UNAUTHENTICATED"), "auth"],
  ["unavailable in a 200 error", 200, err("UNAVAILABLE"), "server"],
  ["500 envelope", 500, err("INTERNAL"), "server"],
  ["502 HTML", 502, "<html>Bad Gateway</html>", "server"],
  ["429", 429, "", "server"],
  ["408", 408, "", "server"],
  ["301 to https", 301, "", "redirect", { location: "https://user:sekrit@example.com/ov" }],
  ["307", 307, "", "redirect", { location: "/api/v2/x" }],
];

Deno.test("classifyReply: every reply kind users meet, one verdict each", () => {
  for (const [name, status, text, want, headers] of CASES) {
    const r = classifyReply({ status, text, origin, location: headers?.location, contentType: "text/html" });
    assertEquals(r.ok ? "ok" : r.kind, want, name);
  }
});

// What each code OpenViking 0.5.2 sends means for a write: only a request that would get the same answer
// unchanged, whatever an admin does, is final.
Deno.test("classifyReply: every code OpenViking sends, with its status — only a malformed request is final", () => {
  const verdicts = Object.entries(SERVER_ERROR_CODES).map(([code, status]) => {
    const r = classifyReply({ status, text: err(code, "Model provider API key is not configured"), origin });
    return [code, r.ok ? "ok" : r.kind];
  });
  assertEquals(
    verdicts,
    Object.entries(SERVER_ERROR_CODES).map(([code]) => [
      code,
      code === "NOT_FOUND"
        ? "missing-route" // naming no resource: the route itself is missing (an older server)
        : FINAL_CODES.includes(code)
        ? "rejected"
        : code === "UNAUTHENTICATED" || code === "PERMISSION_DENIED"
        ? "auth"
        : "server",
    ]),
  );
});

Deno.test("classifyReply: a redirect names where it points, without user info", () => {
  const r = classifyReply({ status: 301, text: "", origin, location: "https://user:sekrit@example.com/ov" });
  assertEquals(r.ok ? "" : [r.kind, r.location], ["redirect", "https://example.com/ov"]);
  assertEquals(r.ok ? "" : r.error.message.includes("sekrit"), false);
  assertEquals(withoutUserinfo("http://a:b@h:1/p"), "http://h:1/p");
  const bad = classifyReply({ status: 301, text: "", origin, location: "http://exa mple.com/" });
  assertEquals(bad.ok ? "" : [bad.kind, bad.location, bad.error.message], [
    "redirect",
    undefined,
    `${origin} redirects (HTTP 301) to an address that is not a URL`,
  ]);
});

Deno.test("fuzz: a failure as the client hands it out is neutral and holds no secret, whatever the server said", () => {
  const key = "sk-fuzz-0123456789abcdef";
  fc.assert(
    fc.property(
      hostileText,
      hostileText,
      fc.constantFrom("", key, `Bearer ${key}`, "https://u:p4ss@h/"),
      (a, b, s) => {
        const said = classifyReply({ status: 401, origin, text: err("UNAUTHENTICATED", `${a}${s}${b}`) });
        if (said.ok) throw new Error("a 401 is a failure");
        const told = cleanFailure(said, [key]);
        assertEquals(neutralize(told.error.message), told.error.message);
        assertTrue(!told.error.message.includes(key) && !told.error.message.includes("p4ss"));
      },
    ),
    params(300),
  );
});

Deno.test("client: identity headers and envelope (refusals: classifyReply, secrets: below); /health is asked without the key", async () => {
  await using fake = await FakeOpenViking.start({ apiKey: "sekrit-key-123" });
  const identity = { apiKey: "sekrit-key-123", account: "acct", user: "alice", peerId: "github.com-x-y" };
  const userAgent = "openviking-memory-kimicode/0.1.0";
  const client = createClient(
    { baseUrl: `${fake.url}/`, ...identity, userAgent, timeoutMs: 2000 },
    identity.peerId,
  );
  const ok = await client.request("GET", "/api/v1/system/status", AnyResult);
  assertEquals(ok, { ok: true, status: 200, result: { initialized: true, user: "default" } });
  const sent = "authorization x-openviking-account x-openviking-user x-openviking-actor-peer user-agent";
  const want = ["Bearer sekrit-key-123", "acct", "alice", "github.com-x-y", userAgent];
  assertEquals(sent.split(" ").map((k) => fake.requests[0].headers[k]), want);
  const noPeer = await client.request("POST", "/api/v1/sessions/kc-1/messages", AnyResult, {
    body: { role: "user", content: "x" },
    peerId: null,
  });
  assertTrue(noPeer.ok);
  assertEquals(fake.requests[1].headers["x-openviking-actor-peer"], undefined);
  assertEquals(fake.requests[1].headers["content-type"], "application/json");
  assertTrue((await client.request("GET", "/health", AnyResult)).ok);
  assertEquals(fake.requests.at(-1)?.headers.authorization, undefined, "no key for an address not known yet");
});

Deno.test("client: 5xx, dropped connections and timeouts are retryable failures with status 0 or 5xx", async () => {
  await using fake = await FakeOpenViking.start();
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 300 });
  fake.fault({ route: "GET /api/v1/system/status", status: 503, times: 1 });
  fake.fault({ route: "GET /api/v1/system/status", drop: true, times: 1 });
  fake.fault({ route: "GET /api/v1/system/status", delayMs: 1500, times: 1 });
  const results = [];
  for (let i = 0; i < 3; i++) results.push(await client.request("GET", "/api/v1/system/status", AnyResult));
  assertEquals(results.map((r) => [r.ok, r.status, !r.ok && r.kind]), [
    [false, 503, "server"],
    [false, 0, "unreachable"],
    [false, 0, "unreachable"],
  ]);
  assertEquals(results.map((r) => r.ok ? "" : r.error.code).slice(1), ["NETWORK", "TIMEOUT"]);
  const timeout = results[2];
  if (!timeout.ok) assertMatch(timeout.error.message, /within 300 ms/);
});

Deno.test("client: a spent budget fails fast without a request; the timeout never exceeds the budget", async () => {
  await using fake = await FakeOpenViking.start();
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 60_000 });
  const spent = await client.request("GET", "/health", AnyResult, { budget: new Budget(10) });
  assertEquals(spent.ok ? "" : spent.error.code, "BUDGET_SPENT");
  assertEquals(fake.requests.length, 0);
  fake.fault({ route: "GET /health", delayMs: 2000, times: 1 });
  const budget = new Budget(300);
  const r = await client.request("GET", "/health", AnyResult, { budget });
  assertEquals(r.ok ? "" : r.error.code, "TIMEOUT");
  // The figure is the budget the caller set, not what was left of it when the request started.
  assertEquals(r.ok ? "" : r.error.message, `no answer from ${fake.url} within its time budget (300 ms)`);
  assertTrue(budget.remaining() === 0 || budget.remaining() < 50);
});

Deno.test("client: no connection names the origin, never throws, and is CONNECT when refused (nothing reached the server)", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const client = createClient({
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey: "k-secret",
    userAgent: "t",
    timeoutMs: 1000,
  });
  const r = await client.request("POST", "/api/v1/sessions/kc-s/messages/batch", AnyResult, { body: {} });
  assertEquals(r.ok ? "" : [r.status, r.kind, r.error.code], [0, "unreachable", "CONNECT"]);
  assertMatch(r.ok ? "" : r.error.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
  assertTrue(!JSON.stringify(r).includes("k-secret"));
});

// A gzip bomb's bytes count as inflated (readBody over a fetch: mcp/bounds_test); its RSS: world_faults_test.
Deno.test("client: a giant reply is not read past the bound (1 MiB); the client works on", async () => {
  await using fake = await FakeOpenViking.start();
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 20_000 });
  fake.fault({
    route: "GET /api/v1/content/read",
    raw: { status: 200, body: "x".repeat(1 << 16), repeatBytes: 1 << 30 },
  });
  const big = await client.request("GET", "/api/v1/content/read", AnyResult, {
    query: { uri: "viking://x" },
  });
  assertEquals(big.ok ? "" : big.kind, "too-large");
  const allowed = await client.request("GET", "/health", AnyResult, { maxReplyBytes: 1 << 20 });
  assertTrue(allowed.ok, "the client works on after refusing a giant");
});

Deno.test("client: an OK envelope whose result is not the route's shape is a not-openviking failure, never a cast", async () => {
  await using fake = await FakeOpenViking.start();
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
  const Status = z.looseObject({ user: z.string() });
  const fine = await client.request("GET", "/api/v1/system/status", Status);
  assertEquals(fine.ok ? fine.result.user : "", "default", "a matching result comes back parsed");
  for (const result of ["not an object", { user: 42 }, null]) {
    fake.clearFaults();
    fake.fault({ route: "GET /api/v1/system/status", raw: json(JSON.stringify({ status: "ok", result })) });
    const r = await client.request("GET", "/api/v1/system/status", Status);
    const why = JSON.stringify(result);
    assertEquals(
      r.ok ? "ok" : [r.kind, r.status, r.error.code],
      ["not-openviking", 200, "UNEXPECTED_RESULT"],
      why,
    );
    assertMatch(r.ok ? "" : r.error.message, /GET \/api\/v1\/system\/status answered OK, but .* is not what/);
  }
  // A write takes any result: only the envelope's "ok" counts.
  fake.clearFaults();
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", raw: json('{"status":"ok","result":"stored"}') });
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
  const page = {
    status: 200,
    headers: { "content-type": "text/html" },
    body: `<title>Sign\x1b[8m in ${"x".repeat(500)}</title>`,
  };
  fake.fault({ route: "GET /health", raw: page, times: 1 });
  const said = await client.request("GET", "/health", AnyResult);
  const title = `Sign in ${"x".repeat(68)}`; // 80 characters of it, its escape sequence removed
  const words = `${fake.url} answered HTTP 200 with text/html "${title}", not an OpenViking reply`;
  assertEquals(said.ok ? "" : said.error.message, words);
});

Deno.test("readBody: a bound, a stall or an abort stops the read at once, cancels the body and says why", async () => {
  let cancelled = 0;
  const body = (chunks: string[], stall = false) =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          for (const x of chunks) c.enqueue(new TextEncoder().encode(x));
          if (!stall) c.close();
        },
        cancel: () => void cancelled++,
      }),
    );
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  assertEquals(text((await readBody(body(["ab", "cd"]), { maxBytes: 4 })).bytes), "abcd");
  const large = await readBody(body(["ab", "cde"], true), { maxBytes: 4 });
  assertEquals(
    [text(large.bytes), large.stop],
    ["abcde", { kind: "too-large", limitBytes: 4 }],
    "what came is kept",
  );
  const stalled = await readBody(body(["ab"], true), { maxBytes: 100, idleMs: 50 });
  assertEquals([text(stalled.bytes), stalled.stop], ["ab", { kind: "stalled", ms: 50 }]);
  const aborted = await readBody(body(["ab"], true), { maxBytes: 100, signal: AbortSignal.timeout(50) });
  assertEquals(aborted.stop?.kind, "cut");
  assertEquals(cancelled, 3, "every stopped body was cancelled");
});
