/** Unit tests of the pure parts: error texts, network causes, the workspace, the time limits, the gate. */

import { assertEquals, assertMatch, assertNotMatch } from "../support/assert.ts";
import { type ErrorContext, type Failure, failureError } from "../../mcp/errors.ts";
import { exchangeTiming, networkCause, offlineProtocolVersion, PROXY_LIMITS } from "../../mcp/proxy.ts";
import { serverMessageOf } from "../../openviking/client.ts";
import { workspaceDir } from "../../cli/mcp.ts";
import { mapStrings, MAX_DEPTH, redacted, TOO_DEEP } from "../../mcp/gate.ts";

const CTX: ErrorContext = {
  mcpUrl: "http://user:pw@ov.example:1933/mcp",
  credentialSource: "ovcli.conf",
  apiKeySource: "ovcli.conf",
  cliConfigPath: "/h/.openviking/ovcli.conf",
  ovConfigPath: "/h/.openviking/ov.conf",
  account: "acct",
  user: "me",
  apiKey: "sk-very-secret-123",
};

// The other kinds' words are proven end to end: proxy_fake_test (HTTP, empty, not JSON-RPC, unreachable, auth,
// redirect), bounds_test (too large, stalled, deadline, timeout), offline_test (unreachable, paused).
Deno.test("errors: failures say what to do; URLs lose their user info; keys are scrubbed", () => {
  const auth = { kind: "auth", status: 401, serverMessage: "" } as const;
  const [net, http] = [
    { kind: "network", cause: "x" } as const,
    { kind: "http", serverMessage: "" } as const,
  ];
  const big = { kind: "too-large", limitBytes: 16 << 20, part: "reply" } as const;
  const rows: [Failure, Partial<ErrorContext>, number, RegExp][] = [
    [net, {}, -32004, /cannot reach http:\/\/ov\.example:1933\/mcp \(x\)/],
    [net, { credentialSource: "default" }, -32004, /the default, as nothing is configured/],
    [{ kind: "cut", cause: "reset" }, {}, -32004, /broke before the reply/],
    [{ ...http, status: 502, serverMessage: "bad gateway sk-very-secret-123" }, {}, -32002, /502.*its log/],
    [{ ...http, status: 404 }, {}, -32002, /HTTP 404\. There is no MCP endpoint at/],
    [{ ...auth, serverMessage: "Bearer sk-very-secret-123 invalid" }, {}, -32001, /ovcli\.conf/],
    [{ ...auth, status: 403, serverMessage: "no" }, {}, -32001, /denied .*HTTP 403: no.*"acct", user "me"/],
    [
      auth,
      { apiKeySource: "none" },
      -32001,
      /no API key is configured.*Add "api_key" to \/h\/\.openviking\//,
    ],
    [auth, { apiKeySource: "env OPENVIKING_BEARER_TOKEN" }, -32001, /environment variable OPENVIKING_BEARER/],
    [auth, { apiKeySource: "ov.conf" }, -32001, /comes from \/h\/\.openviking\/ov\.conf/],
    [big, {}, -32005, /larger than 16 MiB.*fewer results/],
  ];
  for (const [failure, ctx, code, pattern] of rows) {
    const reply = failureError(9, failure, { ...CTX, ...ctx });
    assertEquals([reply.id, reply.error.code], [9, code]);
    assertMatch(reply.error.message, pattern);
    assertNotMatch(JSON.stringify(reply), /sk-very-secret-123|user:pw/);
  }
  assertEquals(failureError(1, auth, { ...CTX, apiKeySource: "ov.conf" }).error.data, {
    ...auth,
    credentialSource: "ov.conf",
    credentialPath: "/h/.openviking/ov.conf",
    url: "http://ov.example:1933/mcp",
  });
});

Deno.test("upstream helpers: server messages; network causes without prefix or userinfo; offline version", () => {
  const said = [
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}',
    "plain",
    "",
  ];
  said.push('{"status":"error","error":{"code":"X","message":"m"}}', '{"detail":"d"}');
  assertEquals(said.map(serverMessageOf), ["Session not found", "plain", "", "m", "d"]);
  const refused = "error sending request for url (http://a:b@x/mcp): tcp connect error: refused";
  assertEquals(networkCause(new TypeError(refused)), "tcp connect error: refused");
  // a password holding an @ never shows
  const tunnel = new TypeError("proxy http://u:p@ss@x:8080/ refused the tunnel");
  assertEquals(networkCause(tunnel), "proxy http://x:8080/ refused the tunnel");
  // The version an offline initialize answers: the client's when known and no newer than OpenViking's.
  const asked = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", undefined];
  const answered = ["2025-06-18", "2025-06-18", "2025-03-26", "2024-11-05", "2025-06-18", "2025-06-18"];
  assertEquals(asked.map(offlineProtocolVersion), answered);
});

Deno.test("workspace: the process cwd, or the inherited PWD when Kimi runs us from the plugin folder", () => {
  const root = "/k/plugins/managed/ovk";
  const plugin = { KIMI_PLUGIN_ROOT: root, PWD: "/work/proj" };
  const win = { KIMI_PLUGIN_ROOT: "C:\\Users\\me\\.kimi-code\\plugins\\ovk\\", PWD: "C:\\work\\proj" };
  const rows: [Record<string, string>, string, string | undefined][] = [
    [{}, "/work/proj", "/work/proj"],
    [plugin, root, "/work/proj"],
    [{ ...plugin, PWD: root }, root, undefined],
    [{ KIMI_PLUGIN_ROOT: root }, root, undefined],
    [plugin, "/elsewhere", "/elsewhere"],
    [win, "C:\\Users\\me\\.kimi-code\\plugins\\ovk", "C:\\work\\proj"],
  ];
  for (const [env, cwd, workspace] of rows) assertEquals(workspaceDir(env, cwd), workspace, cwd);
});

Deno.test("timing: startup methods within the startup cap; tool calls silent for well under Kimi's 60 s; streams idle-bounded", () => {
  // [method, OPENVIKING_TIMEOUT_MS, headers, JSON body idle, stream idle, total]
  const rows = [
    ["initialize", 15_000, 10_000, 10_000, 10_000, 10_000],
    ["tools/list", 15_000, 10_000, 10_000, 10_000, 10_000],
    ["tools/list", 5_000, 5_000, 5_000, 5_000, 5_000],
    ["tools/call", 15_000, 30_000, 15_000, 30_000, 600_000],
    ["resources/read", 15_000, 15_000, 15_000, 30_000, 600_000],
    ["", 15_000, 15_000, 15_000, 30_000, 600_000], // a notification or a response
    ["tools/call", 300_000, 30_000, 30_000, 30_000, 600_000], // no timeout outlasts Kimi's 60 s for a silent call
  ] as const;
  for (const [method, timeout, headersMs, bodyIdleMs, streamIdleMs, totalMs] of rows) {
    const timing = exchangeTiming(method, timeout);
    assertEquals(timing, { headersMs, bodyIdleMs, streamIdleMs, totalMs }, `${method} at ${timeout}`);
  }
  // README's byte bounds: 16 MiB for a JSON body or an SSE event, 64 MiB for a stream (tests shorten them).
  assertEquals([PROXY_LIMITS.replyBytes, PROXY_LIMITS.streamBytes], [16 << 20, 64 << 20]);
});

Deno.test("mcp/gate: walks copy without recursion to MAX_DEPTH levels, keep key order and __proto__ keys", () => {
  const nest = (n: number) => JSON.parse("[".repeat(n) + "]".repeat(n));
  const same = { value: (v: string) => v };
  assertEquals(JSON.stringify(mapStrings(nest(MAX_DEPTH), same)), JSON.stringify(nest(MAX_DEPTH)));
  assertEquals([mapStrings(nest(MAX_DEPTH + 1), same), mapStrings(nest(1_000_000), same)], [
    TOO_DEEP,
    TOO_DEEP,
  ]);
  const value = JSON.parse('{"b":"x","a":[1,"y",null],"__proto__":"z"}');
  const out = mapStrings(value, { value: (v) => v.toUpperCase() }) as Record<string, unknown>;
  assertEquals(Object.keys(out), ["b", "a", "__proto__"]);
  assertEquals(JSON.stringify(out), '{"b":"X","a":[1,"Y",null],"__proto__":"Z"}');
  assertEquals(Object.getPrototypeOf(out), Object.prototype);
});

Deno.test("mcp/gate: a secret found in any argument is hidden in every other, whichever comes first", () => {
  const call = (args?: unknown) => ({
    jsonrpc: "2.0" as const,
    id: 1,
    method: "tools/call",
    params: args === undefined ? { name: "remember" } : { name: "remember", arguments: args },
  });
  assertEquals(redacted(call()), call());
  const rows = [
    { a: "password=Hunter2Rover", b: "echo Hunter2Rover" },
    { a: "echo Hunter2Rover", b: "password=Hunter2Rover" },
    { list: ["echo Hunter2Rover", { deep: "token: Hunter2Rover" }] },
  ];
  for (const args of rows) assertNotMatch(JSON.stringify(redacted(call(args))), /Hunter2Rover/);
  assertEquals(
    redacted(call(JSON.parse("[".repeat(MAX_DEPTH + 1) + "]".repeat(MAX_DEPTH + 1)))),
    undefined,
  );
});
