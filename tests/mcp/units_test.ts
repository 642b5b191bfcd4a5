/**
 * Unit tests of the pure parts: SSE parser, JSON-RPC validation, limiter, line framing, error texts, the
 * bounded body reader and the time limits of each exchange.
 */

import fc from "fast-check";
import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { isEmptyEventData, parseSse, SseParser } from "../../mcp/sse.ts";
import { classifyUpstream, ErrorCode, parseLine } from "../../mcp/jsonrpc.ts";
import { Limiter } from "../../mcp/limiter.ts";
import { readLines } from "../../mcp/lines.ts";
import { readReply } from "../../mcp/reply.ts";
import { authError, type ErrorContext, failureError } from "../../mcp/errors.ts";
import { networkCause, Upstream } from "../../mcp/upstream.ts";
import { BoundedBody, readPrefix, serverMessageOf } from "../../openviking/client.ts";
import { withoutUserinfo } from "../../lib/scrub.ts";
import { CredentialWatcher, type ProxySettings } from "../../mcp/credentials.ts";
import { workspaceDir } from "../../commands/mcp.ts";
import { exchangeTiming, PROXY_LIMITS } from "../../mcp/limits.ts";

Deno.test("sse: events, comments, multi-line data, ids, retry, BOM, unknown fields", () => {
  const text = '\ufeff: hello\n\nevent: message\nid: 1\nretry: 250\ndata: {"a":\ndata: 1}\n\n' +
    "data:no-space\nfoo: bar\n\nid\ndata\n\nevent: custom\ndata: x\n\n";
  const parser = new SseParser();
  const events = [...parser.push(text), ...parser.end()];
  assertEquals(events, [
    { event: "message", data: '{"a":\n1}', id: "1" },
    { event: "message", data: "no-space", id: "1" },
    { event: "message", data: "", id: "" },
    { event: "custom", data: "x", id: "" },
  ]);
  assertEquals(parser.retryMs, 250);
  assertEquals(parser.lastEventId, "");
});

Deno.test("sse: CR, LF and CRLF line ends; the last event without a blank line is kept", () => {
  assertEquals(parseSse("data: a\r\rdata: b\r\n\r\ndata: c\n\ndata: d").map((e) => e.data), [
    "a",
    "b",
    "c",
    "d",
  ]);
  assertEquals(parseSse(": only a comment\n"), []);
  assertTrue(isEmptyEventData(" [DONE] "));
  assertTrue(isEmptyEventData(""));
  assertTrue(!isEmptyEventData("{}"));
});

Deno.test("sse: any chunking of a stream yields the same events (property)", () => {
  const eventArb = fc.record({
    lines: fc.array(fc.string({ unit: fc.constantFrom("a", "é", "{", "}", ":", " ", "\u{1F600}") }), {
      minLength: 1,
      maxLength: 3,
    }),
    comment: fc.boolean(),
    id: fc.option(fc.stringMatching(/^[a-z0-9]{1,4}$/), { nil: undefined }),
  });
  fc.assert(
    fc.property(
      fc.array(eventArb, { minLength: 1, maxLength: 5 }),
      fc.constantFrom("\n", "\r\n", "\r"),
      fc.array(fc.nat(), { maxLength: 8 }),
      (events, nl, cuts) => {
        let text = "";
        for (const e of events) {
          if (e.comment) text += `: c${nl}`;
          if (e.id !== undefined) text += `id: ${e.id}${nl}`;
          for (const line of e.lines) text += `data: ${line}${nl}`;
          text += nl;
        }
        const whole = parseSse(text);
        assertEquals(whole.map((e) => e.data), events.map((e) => e.lines.join("\n")));
        const parser = new SseParser();
        const bytes = new TextEncoder().encode(text);
        const decoder = new TextDecoder();
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const got = [];
        let last = 0;
        for (const p of [...points, bytes.length]) {
          got.push(...parser.push(decoder.decode(bytes.subarray(last, p), { stream: true })));
          last = p;
        }
        got.push(...parser.push(decoder.decode()), ...parser.end());
        assertEquals(got, whole);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("jsonrpc: lines are classified or answered with the right error", () => {
  assertEquals(parseLine("{").kind, "invalid");
  const parse = parseLine("nope");
  assertEquals(parse.kind === "invalid" && [parse.reply.id, parse.reply.error.code], [
    null,
    ErrorCode.ParseError,
  ]);
  const req = parseLine(
    '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"},"_meta":{"k":1}}',
  );
  assertEquals(req.kind === "single" && req.item.kind, "request");
  // unknown members survive validation
  assertEquals(req.kind === "single" && (req.item.message as Record<string, unknown>)._meta, { k: 1 });
  const note = parseLine('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  assertEquals(note.kind === "single" && note.item.kind, "notification");
  const res = parseLine('{"jsonrpc":"2.0","id":3,"result":{}}');
  assertEquals(res.kind === "single" && res.item.kind, "response");
  const err = parseLine('{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}');
  assertEquals(err.kind === "single" && err.item.kind, "response");
  for (
    const [line, id] of [
      ['{"jsonrpc":"2.0","id":{},"method":"x"}', null],
      ['{"jsonrpc":"2.0","id":5,"method":""}', 5],
      ['{"jsonrpc":"2.0","id":5,"method":"x","params":3}', 5],
      ['{"jsonrpc":"2.0","id":5,"error":{"code":"x","message":"m"}}', 5],
      ['{"jsonrpc":"2.0","id":6}', 6],
      ["[1]", null],
      ['"str"', null],
    ] as const
  ) {
    const p = parseLine(line);
    const reply = p.kind === "invalid" ? p.reply : p.kind === "batch" ? p.items[0] : undefined;
    assertTrue(reply && "error" in reply, line);
    assertEquals([reply.id, reply.error.code], [id, ErrorCode.InvalidRequest], line);
  }
  assertEquals(classifyUpstream({ nope: 1 }), undefined);
});

Deno.test("limiter: bounds concurrency, serves in order, lets waiters withdraw", async () => {
  const limiter = new Limiter(2);
  const a = await limiter.acquire();
  const b = await limiter.acquire();
  const order: string[] = [];
  const withdraw = new AbortController();
  const c = limiter.acquire().then((r) => (order.push("c"), r));
  const d = limiter.acquire(withdraw.signal).then((r) => (order.push(r ? "d" : "d-withdrawn"), r));
  const e = limiter.acquire().then((r) => (order.push("e"), r));
  assertEquals([limiter.running, limiter.queued], [2, 3]);
  withdraw.abort();
  await d;
  a!();
  a!(); // releasing twice is harmless
  (await c)!();
  b!();
  (await e)!();
  assertEquals(order, ["d-withdrawn", "c", "e"]);
  assertEquals([limiter.running, limiter.queued], [0, 0]);
  assertEquals(await limiter.acquire(AbortSignal.abort()), undefined);
});

Deno.test("lines: LF and CRLF, multi-byte characters split across chunks, last line without newline", async () => {
  const bytes = new TextEncoder().encode('{"a":"é"}\r\n\n{"b":"\u{1F600}"}\nlast');
  const chunks = [...bytes].map((b) => new Uint8Array([b]));
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  const lines: string[] = [];
  for await (const line of readLines(stream)) lines.push(line);
  assertEquals(lines, ['{"a":"é"}', "", '{"b":"\u{1F600}"}', "last"]);
});

const CTX: ErrorContext = {
  mcpUrl: "http://user:pw@ov.example:1933/mcp",
  credentialSource: "ovcli.conf",
  apiKeySource: "ovcli.conf",
  cliConfigPath: "/h/.openviking/ovcli.conf",
  ovConfigPath: "/h/.openviking/ov.conf",
  account: "acct",
  user: "me",
  secrets: ["sk-very-secret-123"],
};

Deno.test("errors: every failure says what to do; URLs lose their user info; keys are scrubbed", () => {
  const cases = [
    [{ kind: "network", cause: "Connection refused" }, -32004, /cannot reach http:\/\/ov\.example:1933\/mcp/],
    [{ kind: "timeout", ms: 15000 }, -32004, /within 15 s.*OPENVIKING_TIMEOUT_MS/],
    [{ kind: "cut", cause: "reset" }, -32004, /broke before the reply/],
    [
      { kind: "http", status: 502, serverMessage: "bad gateway sk-very-secret-123" },
      -32002,
      /HTTP 502.*check its log/,
    ],
    [{ kind: "empty", status: 200 }, -32003, /no response/],
    [{ kind: "bad-reply", status: 200, sample: "<html>" }, -32002, /not JSON-RPC/],
    [{ kind: "redirect", status: 302, location: "https://evil.example/" }, -32002, /another origin/],
    [
      { kind: "auth", status: 401, serverMessage: "Bearer sk-very-secret-123 invalid" },
      -32001,
      /ovcli\.conf/,
    ],
  ] as const;
  for (const [failure, code, pattern] of cases) {
    const reply = failureError(9, failure, CTX);
    assertEquals([reply.id, reply.error.code], [9, code]);
    assertMatch(reply.error.message, pattern);
    const all = JSON.stringify(reply);
    assertNotMatch(all, /sk-very-secret-123/);
    assertNotMatch(all, /user:pw/);
  }
  const none = authError(1, 401, "", { ...CTX, apiKeySource: "none" });
  assertMatch(
    none.error.message,
    /no API key is configured.*Add "api_key" to \/h\/\.openviking\/ovcli\.conf/,
  );
  const ov = authError(1, 401, "", { ...CTX, apiKeySource: "ov.conf" });
  assertMatch(ov.error.message, /comes from \/h\/\.openviking\/ov\.conf/);
  assertEquals(ov.error.data, {
    status: 401,
    credentialSource: "ov.conf",
    credentialPath: "/h/.openviking/ov.conf",
    url: "http://ov.example:1933/mcp",
    serverMessage: "",
  });
  const env = authError(1, 401, "", { ...CTX, apiKeySource: "env OPENVIKING_BEARER_TOKEN" });
  assertMatch(env.error.message, /environment variable OPENVIKING_BEARER_TOKEN/);
  const deflt = failureError(1, { kind: "network", cause: "x" }, { ...CTX, credentialSource: "default" });
  assertMatch(deflt.error.message, /the default, as nothing is configured/);
});

Deno.test("upstream helpers: server messages, network causes, display URLs", () => {
  assertEquals(
    serverMessageOf('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'),
    "Session not found",
  );
  assertEquals(serverMessageOf('{"status":"error","error":{"code":"X","message":"m"}}'), "m");
  assertEquals(serverMessageOf('{"detail":"d"}'), "d");
  assertEquals(serverMessageOf("plain"), "plain");
  assertEquals(serverMessageOf(""), "");
  assertEquals(
    networkCause(
      new TypeError("error sending request for url (http://a:b@x/mcp): tcp connect error: refused"),
    ),
    "tcp connect error: refused",
  );
  assertEquals(withoutUserinfo("https://u:p@h.example/mcp"), "https://h.example/mcp");
});

Deno.test("upstream helpers: a password holding an @ never shows in a network cause", () => {
  assertEquals(
    networkCause(new TypeError("proxy http://u:p@ss@x:8080/ refused the tunnel")),
    "proxy http://x:8080/ refused the tunnel",
  );
});

Deno.test("upstream: the session DELETE gives up after its time limit", async () => {
  const hung = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of hung) accepted.push(conn); // never answers
  })().catch(() => {});
  try {
    const upstream = new Upstream({
      mcpUrl: `http://127.0.0.1:${(hung.addr as Deno.NetAddr).port}/mcp`,
      apiKey: "",
      account: "",
      user: "",
      peerId: "",
      userAgent: "t",
    });
    upstream.sessionId = "s-1";
    assertEquals(await upstream.deleteSession(100), undefined);
    assertEquals(upstream.sessionId, undefined);
    assertEquals(await upstream.deleteSession(100), undefined); // no session: nothing sent
    assertEquals(accepted.length, 1);
  } finally {
    hung.close();
    for (const c of accepted) c.close();
    await accepting;
  }
});

Deno.test("credentials watcher: reloads only when a file's content changed", async () => {
  await using dir = await tempDir("ovk-mcp-");
  const path = `${dir.path}/ovcli.conf`;
  await Deno.writeTextFile(path, '{"api_key":"a"}');
  let loads = 0;
  const watcher = new CredentialWatcher([path, `${dir.path}/absent.conf`], () => {
    loads++;
    return Promise.resolve({ timeoutMs: loads } as unknown as ProxySettings);
  });
  await watcher.snapshot();
  assertEquals(await watcher.reloadIfChanged(), undefined);
  await Deno.writeTextFile(path, '{"api_key":"b"}'); // same size, maybe same mtime: content decides
  assertEquals((await watcher.reloadIfChanged())?.timeoutMs, 1);
  assertEquals(await watcher.reloadIfChanged(), undefined);
  await Deno.writeTextFile(`${dir.path}/absent.conf`, "{}");
  assertEquals((await watcher.reloadIfChanged())?.timeoutMs, 2);
});

Deno.test("workspace: the process cwd, or the inherited PWD when Kimi runs us from the plugin folder", () => {
  assertEquals(workspaceDir({}, "/work/proj"), "/work/proj");
  const plugin = { KIMI_PLUGIN_ROOT: "/k/plugins/managed/ovk", PWD: "/work/proj" };
  assertEquals(workspaceDir(plugin, "/k/plugins/managed/ovk"), "/work/proj");
  assertEquals(
    workspaceDir({ ...plugin, PWD: "/k/plugins/managed/ovk" }, "/k/plugins/managed/ovk"),
    undefined,
  );
  assertEquals(
    workspaceDir({ KIMI_PLUGIN_ROOT: "/k/plugins/managed/ovk" }, "/k/plugins/managed/ovk"),
    undefined,
  );
  assertEquals(workspaceDir(plugin, "/elsewhere"), "/elsewhere");
  const win = { KIMI_PLUGIN_ROOT: "C:\\Users\\me\\.kimi-code\\plugins\\ovk\\", PWD: "C:\\work\\proj" };
  assertEquals(workspaceDir(win, "C:\\Users\\me\\.kimi-code\\plugins\\ovk"), "C:\\work\\proj");
});

Deno.test("reply: JSON batch bodies, batches inside SSE events, and a stream left open after the response", async () => {
  const got: unknown[] = [];
  const sink = (item: { message: unknown }) => void got.push(item.message);
  const json = new Response(
    JSON.stringify([{ jsonrpc: "2.0", method: "n/a" }, { jsonrpc: "2.0", id: 1, result: {} }, { bogus: 1 }]),
    { headers: { "content-type": "application/json" } },
  );
  const a = await readReply(json, 1, sink);
  assertEquals([a.answered, a.delivered, a.invalid], [true, 2, 1]);

  // the server never closes the stream: reading stops once the response is in
  const encoder = new TextEncoder();
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(': hi\n\nid: 7\ndata: [{"jsonrpc":"2.0","method":"x/y"},'));
      controller.enqueue(encoder.encode('\ndata: {"jsonrpc":"2.0","id":"r","result":{"ok":true}}]\n\n'));
    },
    cancel() {
      cancelled = true;
    },
  });
  const sse = new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8" } });
  const b = await readReply(sse, "r", sink);
  assertEquals([b.answered, b.delivered, b.lastEventId], [true, 2, "7"]);
  assertTrue(cancelled, "the open stream was released");
  assertEquals(got.length, 4);
});

Deno.test("sse: one giant line costs linear time, and what the parser holds of it is counted", () => {
  const parser = new SseParser();
  const chunk = "x".repeat(4096);
  const started = Date.now();
  assertEquals(parser.push("data: "), []);
  for (let i = 0; i < 4096; i++) assertEquals(parser.push(chunk), []); // 16 MiB, no line end yet
  assertEquals(parser.pendingChars, 6 + 16 * 1024 * 1024);
  assertEquals(parser.push("\r"), []);
  assertEquals(parser.pendingChars, 16 * 1024 * 1024 + 1);
  const [event] = parser.push("\n\n");
  assertEquals(event.data.length, 16 * 1024 * 1024);
  assertEquals(parser.pendingChars, 0);
  // generous: scanning the held text again at every chunk (the old parser) took minutes
  assertTrue(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
});

/** An endless body of 1 KiB chunks that counts its pulls and whether it was cancelled. */
function endless(silent = false) {
  const state = { pulls: 0, cancelled: false };
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      state.pulls++;
      if (silent) return new Promise(() => {});
      controller.enqueue(new Uint8Array(1024).fill(65));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { body, state };
}

Deno.test("body: reading stops and cancels at the byte bound, after idleMs of silence, and on abort", async () => {
  const big = endless();
  const bounded = new BoundedBody(big.body, { maxBytes: 4096, idleMs: 10_000 });
  let got = 0;
  for (let c = await bounded.next(); c; c = await bounded.next()) got += c.length;
  assertEquals(got, 4096);
  assertEquals(bounded.stop, { kind: "too-large", limitBytes: 4096 });
  assertTrue(big.state.cancelled && big.state.pulls <= 6, `pulls: ${big.state.pulls}`);
  assertEquals(await bounded.next(), undefined);

  const quiet = endless(true);
  const stalled = new BoundedBody(quiet.body, { maxBytes: 4096, idleMs: 50 });
  assertEquals(await stalled.next(), undefined);
  assertEquals(stalled.stop, { kind: "stalled", ms: 50 });
  assertTrue(quiet.state.cancelled);

  const abort = new AbortController();
  const cancelled = endless(true);
  const reading = new BoundedBody(cancelled.body, { maxBytes: 4096, idleMs: 10_000, signal: abort.signal });
  const next = reading.next();
  abort.abort();
  assertEquals(await next, undefined);
  assertEquals(reading.stop?.kind, "cut");
  assertTrue(cancelled.state.cancelled);

  const page = endless();
  assertEquals(await readPrefix(new Response(page.body), 1500, 10_000), "A".repeat(1500));
  assertTrue(page.state.cancelled && page.state.pulls <= 4, `pulls: ${page.state.pulls}`);
});

Deno.test("timing: startup methods within the startup cap; tool calls within the tool-call limit; streams idle-bounded", () => {
  const at = (method: string | undefined, timeoutMs = 15_000) =>
    exchangeTiming(method, timeoutMs, PROXY_LIMITS);
  for (const method of ["initialize", "tools/list"]) {
    assertEquals(at(method), {
      headersMs: 10_000,
      bodyIdleMs: 10_000,
      streamIdleMs: 10_000,
      totalMs: 10_000,
    });
    assertEquals(at(method, 5_000).totalMs, 5_000);
  }
  assertEquals(at("tools/call"), {
    headersMs: 600_000,
    bodyIdleMs: 15_000,
    streamIdleMs: 120_000,
    totalMs: 600_000,
  });
  assertEquals(at("resources/read"), {
    headersMs: 15_000,
    bodyIdleMs: 15_000,
    streamIdleMs: 120_000,
    totalMs: 600_000,
  });
  assertEquals(at(undefined), {
    headersMs: 15_000,
    bodyIdleMs: 15_000,
    streamIdleMs: 15_000,
    totalMs: 15_000,
  });
  // raising OPENVIKING_TIMEOUT_MS never makes a limit stricter
  assertEquals(at("tools/call", 300_000), {
    headersMs: 600_000,
    bodyIdleMs: 300_000,
    streamIdleMs: 300_000,
    totalMs: 600_000,
  });
});

Deno.test("errors: replies over a bound, silent or overdue say which limit and what to do", () => {
  const cases = [
    [
      { kind: "too-large", limitBytes: 16 * 1024 * 1024, part: "reply" },
      -32005,
      /larger than 16 MiB.*fewer results/,
    ],
    [
      { kind: "too-large", limitBytes: 16 * 1024 * 1024, part: "event" },
      -32005,
      /larger than 16 MiB.*narrower URI/,
    ],
    [
      { kind: "too-large", limitBytes: 64 * 1024 * 1024, part: "stream" },
      -32005,
      /stream passed 64 MiB.*offset/,
    ],
    [{ kind: "stalled", ms: 15_000 }, -32004, /sent nothing for 15 s.*OPENVIKING_TIMEOUT_MS/],
    [{ kind: "deadline", ms: 600_000 }, -32004, /within 600 s, the proxy's limit for one request/],
  ] as const;
  for (const [failure, code, pattern] of cases) {
    const reply = failureError(9, failure, CTX);
    assertEquals([reply.id, reply.error.code], [9, code]);
    assertMatch(reply.error.message, pattern);
    assertNotMatch(JSON.stringify(reply), /user:pw/);
  }
});
