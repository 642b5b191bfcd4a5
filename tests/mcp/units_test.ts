/** Unit tests of the pure parts: error texts, network causes, the workspace, the time limits, the gate. */

import { assertEquals, assertMatch, assertNotMatch } from "../support/assert.ts";
import { type ErrorContext, failureError } from "../../mcp/errors.ts";
import { exchangeTiming, networkCause, PROXY_LIMITS } from "../../mcp/proxy.ts";
import { serverMessageOf } from "../../openviking/client.ts";
import { workspaceDir } from "../../cli/mcp.ts";
import { mapStrings, MAX_DEPTH, redactedCall, TOO_DEEP } from "../../mcp/gate.ts";

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

// The other kinds' words are proven end to end: proxy_fake_test (HTTP, empty, not JSON-RPC, unreachable, auth),
// bounds_test (too large, stalled, deadline, timeout), offline_test (redirect, unreachable).
Deno.test("errors: failures say what to do; URLs lose their user info; keys are scrubbed", () => {
  const cases = [
    [{ kind: "network", cause: "Connection refused" }, -32004, /cannot reach http:\/\/ov\.example:1933\/mcp/],
    [{ kind: "cut", cause: "reset" }, -32004, /broke before the reply/],
    [
      { kind: "http", status: 502, serverMessage: "bad gateway sk-very-secret-123" },
      -32002,
      /HTTP 502.*check its log/,
    ],
    [{ kind: "http", status: 404, serverMessage: "" }, -32002, /HTTP 404\. There is no MCP endpoint at/],
    [
      { kind: "auth", status: 401, serverMessage: "Bearer sk-very-secret-123 invalid" },
      -32001,
      /ovcli\.conf/,
    ],
    [
      { kind: "auth", status: 403, serverMessage: "no" },
      -32001,
      /denied access \(HTTP 403: no\) for account "acct", user "me"/,
    ],
    [{ kind: "too-large", limitBytes: 16 << 20, part: "reply" }, -32005, /larger than 16 MiB.*fewer results/],
  ] as const;
  for (const [failure, code, pattern] of cases) {
    const reply = failureError(9, failure, CTX);
    assertEquals([reply.id, reply.error.code], [9, code]);
    assertMatch(reply.error.message, pattern);
    const all = JSON.stringify(reply);
    assertNotMatch(all, /sk-very-secret-123/);
    assertNotMatch(all, /user:pw/);
  }
  const auth = (apiKeySource: string) =>
    failureError(1, { kind: "auth", status: 401, serverMessage: "" }, { ...CTX, apiKeySource });
  const none = auth("none");
  assertMatch(
    none.error.message,
    /no API key is configured.*Add "api_key" to \/h\/\.openviking\/ovcli\.conf/,
  );
  const ov = auth("ov.conf");
  assertMatch(ov.error.message, /comes from \/h\/\.openviking\/ov\.conf/);
  assertEquals(ov.error.data, {
    kind: "auth",
    status: 401,
    credentialSource: "ov.conf",
    credentialPath: "/h/.openviking/ov.conf",
    url: "http://ov.example:1933/mcp",
    serverMessage: "",
  });
  const env = auth("env OPENVIKING_BEARER_TOKEN");
  assertMatch(env.error.message, /environment variable OPENVIKING_BEARER_TOKEN/);
  const deflt = failureError(1, { kind: "network", cause: "x" }, { ...CTX, credentialSource: "default" });
  assertMatch(deflt.error.message, /the default, as nothing is configured/);
});

Deno.test("upstream helpers: server messages; network causes without prefix or userinfo", () => {
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
  // a password holding an @ never shows
  assertEquals(
    networkCause(new TypeError("proxy http://u:p@ss@x:8080/ refused the tunnel")),
    "proxy http://x:8080/ refused the tunnel",
  );
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
  assertEquals(
    JSON.stringify(mapStrings(nest(MAX_DEPTH), { value: (v) => v })),
    JSON.stringify(nest(MAX_DEPTH)),
  );
  assertEquals(mapStrings(nest(MAX_DEPTH + 1), { value: (v) => v }), TOO_DEEP);
  assertEquals(mapStrings(nest(1_000_000), { value: (v) => v }), TOO_DEEP);
  const value = JSON.parse('{"b":"x","a":[1,"y",null],"__proto__":"z"}');
  const out = mapStrings(value, { value: (v) => v.toUpperCase() }) as Record<string, unknown>;
  assertEquals(Object.keys(out), ["b", "a", "__proto__"]);
  assertEquals(JSON.stringify(out), '{"b":"X","a":[1,"Y",null],"__proto__":"Z"}');
  assertEquals(Object.getPrototypeOf(out), Object.prototype);
  const call = { jsonrpc: "2.0" as const, id: 1, method: "tools/call", params: { name: "remember" } };
  assertEquals(redactedCall(call), call);
});

Deno.test("mcp/gate: a secret found in any argument is hidden in every other, whichever comes first", () => {
  for (
    const args of [
      { a: "password=Hunter2Rover", b: "echo Hunter2Rover" },
      { a: "echo Hunter2Rover", b: "password=Hunter2Rover" },
      { list: ["echo Hunter2Rover", { deep: "token: Hunter2Rover" }] },
    ]
  ) {
    const call = {
      jsonrpc: "2.0" as const,
      id: 1,
      method: "tools/call",
      params: { name: "remember", arguments: args },
    };
    assertNotMatch(JSON.stringify(redactedCall(call)), /Hunter2Rover/, JSON.stringify(args));
  }
});
