/**
 * OpenViking down when the session starts: initialize, tools/list and ping are answered locally, calls say what
 * to check, and once the server is up the proxy initialises it and works without a restart. Plus the tools
 * offered.
 */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../support/fake-mcp.ts";
import { tempDir } from "../support/temp.ts";
import { BUILTIN_TOOLS } from "../../memory/tools.ts";
import { errorOf, freePort, type Json, resultOf, startProxy, toolNames } from "./harness.ts";
import { startHungServer } from "../support/hung-server.ts";
import { noteRecall } from "../../openviking/breaker.ts";
import { failure } from "../../openviking/client.ts";

const KEY = "offline-test-key-55aa";

/** What a prompt hook leaves when the server took its recall and never answered (runtime/breaker.ts). */
const openBreaker = (home: string, url: string) =>
  noteRecall(`${home}/.openviking/state`, url, undefined, {
    asked: true,
    failure: failure("unreachable", 0, { code: "TIMEOUT", message: `no answer from ${url}` }),
  });

Deno.test("mcp/offline: the built-in catalog is the tools memory needs, each with its schema", () => {
  assertEquals(BUILTIN_TOOLS.map((t) => t.name), OFFERED_TOOLS);
  for (const { name, description = "", inputSchema: schema } of BUILTIN_TOOLS) {
    assertTrue(schema.type === "object" && description.length > 10, name);
    for (const r of schema.required ?? []) assertTrue(r in (schema.properties ?? {}), `${name}.${r}`);
  }
});

Deno.test("mcp/offline: a hung server is not asked while the breaker is open, waited for briefly or until the breaker opens; a call outlives an initialize that broke off", async () => {
  await using home = await tempDir("ovk-mcp-");
  const hung = startHungServer();
  const limits = { startupMs: 4_000, offlineStartMs: 500 };
  const env = { HOME: home.path, OPENVIKING_URL: hung.url };
  let closed = false;
  const timed = <T>(work: () => Promise<T>, t0 = performance.now()) =>
    work().then((value) => [value, performance.now() - t0] as const);
  try {
    // The recall breaker open at start: not waited for, no request reaches the server.
    await openBreaker(home.path, hung.url);
    const proxy = startProxy(env, { limits });
    const atOnce = resultOf(await proxy.initialize("2025-06-18"));
    assertMatch(
      String(atOnce.instructions),
      new RegExp(`OpenViking at ${hung.url}/mcp did not answer in time`),
    );
    assertEquals(toolNames(await proxy.request(1, "tools/list")), OFFERED_TOOLS);
    assertMatch(errorOf(await proxy.request(2, "resources/list")).message, /memory is paused/);
    const call = errorOf(await proxy.call(3, "search", { query: "q" }));
    assertMatch(call.message, /memory is paused.*openviking-kimi doctor/);
    assertNotMatch(call.message, /cannot reach/, "the server is reachable: only its searches hang");
    assertEquals(hung.requests, [], "start-up, listings and tool calls asked the hung server nothing");
    assertEquals(await proxy.close(), 0);
    await Deno.remove(`${home.path}/.openviking/state`, { recursive: true });

    // No breaker: the short wait, then the built-in catalog at once (Kimi's first turn waits
    // for the tool list; the start-up limit was 10.4 s of it).
    const first = startProxy(env, { limits });
    const [offline, waited] = await timed(() => first.initialize());
    assertMatch(String(resultOf(offline).instructions), /did not answer in time/);
    const [builtin, builtinMs] = await timed(() => first.request(1, "tools/list"));
    assertEquals(toolNames(builtin), OFFERED_TOOLS);
    assertTrue(
      waited >= 400 && waited < 2_000 && builtinMs < 300,
      `${waited} ms, tools/list ${builtinMs} ms`,
    );
    assertEquals(await first.close(), 0);

    // Answered as soon as a prompt hook opens the recall breaker, before the short wait ends.
    const second = startProxy(env, { limits: { ...limits, offlineStartMs: 3_000 } });
    const opened = new Promise((r) => setTimeout(r, 300)).then(() => openBreaker(home.path, hung.url));
    const [paused, pausedMs] = await timed(() => second.initialize());
    await opened;
    assertMatch(String(resultOf(paused).instructions), /did not answer in time/);
    assertTrue(pausedMs < 2_000, `waited ${pausedMs} ms`);
    assertEquals(await second.close(), 0);
    await Deno.remove(`${home.path}/.openviking/state`, { recursive: true });

    // The session is made once the server answers, in the version the client was given.
    const third = startProxy(env, { limits });
    const [init, initMs] = await timed(() => third.initialize("2025-11-25"));
    assertEquals(resultOf(init).protocolVersion, "2025-06-18");
    const [listed, listMs] = await timed(() => third.request(1, "tools/list"));
    // The tools/list waits only what is left of initialize's wait: nothing.
    assertTrue(initMs < 2_000 && listMs < 300, `initialize ${initMs} ms, tools/list ${listMs} ms`);
    assertEquals(toolNames(listed), OFFERED_TOOLS);
    await hung.close();
    closed = true;
    await using fake = await FakeOpenViking.start({ port: hung.port });
    resultOf(await third.call(2, "find", { query: "q" }));
    const [upstream] = fake.mcp.receivedMethod("initialize");
    assertEquals((upstream.params as Json).protocolVersion, "2025-06-18"); // the version the client was given
    assertEquals(await third.close(), 0);

    // A call waiting for an initialize begun before it, which then broke off (the server restarted under
    // it): the call initialises afresh rather than fail with "cannot reach" against a server that is up.
    fake.fault({ route: "POST /mcp", delayMs: 1_500, drop: true, times: 1 });
    const fourth = startProxy(env, { limits });
    await fourth.initialize();
    resultOf(await fourth.call(2, "find", { query: "q" }));
    assertEquals(fake.mcp.receivedMethod("initialize").length, 2);
    assertEquals(await fourth.close(), 0);
  } finally {
    if (!closed) await hung.close();
  }
});

Deno.test("mcp/offline: server down at start, then up: no restart needed, a re-list gets the server's own", async () => {
  await using home = await tempDir("ovk-mcp-");
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: url, OPENVIKING_API_KEY: KEY });

  const init = resultOf(await proxy.initialize("2025-11-25"));
  assertEquals(init.protocolVersion, "2025-06-18");
  assertEquals(init.capabilities, { tools: {} });
  assertEquals((init.serverInfo as Json).name, "openviking");
  assertMatch(String(init.instructions), /not reachable/);
  assertEquals(toolNames(await proxy.request(1, "tools/list")), OFFERED_TOOLS);
  assertEquals(resultOf(await proxy.request(2, "ping")), {});
  const down = errorOf(await proxy.call(3, "find", { query: "q" }));
  assertEquals([down.code, down.data?.url], [-32004, `${url}/mcp`]);
  const words =
    `cannot reach ${url}/mcp.*server is running.*environment \\(OPENVIKING_URL.*no restart needed`;
  assertMatch(down.message, new RegExp(words));

  const fake = await FakeOpenViking.start({ port, apiKey: KEY, mcp: { sse: true } });
  try {
    const ok = resultOf(await proxy.call(4, "find", { query: "q" }));
    assertEquals((ok.content as Json[])[0].text, 'fake find: {"query":"q"}');
    const [init, ...more] = fake.mcp.receivedMethod("initialize").map((m) => m.params as Json);
    assertEquals(more, []);
    assertEquals(init.protocolVersion, "2025-06-18"); // the version the client was given
    assertEquals((init.clientInfo as Json).name, "kimi-code");
    assertEquals(fake.mcp.receivedMethod("notifications/initialized").length, 1);
    // a client that re-lists now gets the server's own list
    const listed = resultOf(await proxy.request(5, "tools/list"));
    assertEquals((listed.tools as Json[])[0].description, "OpenViking search");
    assertEquals(await proxy.close(), 0);
  } finally {
    await fake.close();
  }

  for (const text of proxy.lines) assertNotMatch(text, new RegExp(KEY));
});

Deno.test("mcp/tools: the model is offered what memory needs of the server's list; a refused initialize passes", async () => {
  await using home = await tempDir("ovk-mcp-");
  await using fake = await FakeOpenViking.start();
  const listed = async (env: Record<string, string>) => {
    const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url, ...env });
    await proxy.initialize();
    const names = toolNames(await proxy.request(1, "tools/list"));
    assertEquals(await proxy.close(), 0);
    return names;
  };
  assertTrue(OPENVIKING_TOOLS.length > OFFERED_TOOLS.length);
  assertEquals(await listed({}), OFFERED_TOOLS);
  // An initialize the server refuses with a JSON-RPC error is passed through.
  const error = { code: -32602, message: "Unsupported protocol version" };
  const headers = { "content-type": "application/json" };
  const refusal = (id: unknown) => ({
    status: 200,
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, error }),
  });
  fake.mcp.script = ([m]) => m.method === "initialize" ? refusal(m.id) : undefined;
  const refused = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url });
  assertEquals(errorOf(await refused.initialize("1999-01-01")).message, error.message);
  assertEquals(await refused.close(), 0);
});

Deno.test("mcp/tools: memory turned off, or the workspace bypassed, offers the model no tool and refuses a call", async () => {
  await using home = await tempDir("ovk-mcp-");
  await using fake = await FakeOpenViking.start();
  const repo = `${home.path}/untrusted`;
  await Deno.mkdir(`${repo}/.openviking`, { recursive: true });
  await Deno.mkdir(`${repo}/src`);
  const offered = async (env: Record<string, string>, cwd = home.path) => {
    const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url, ...env }, { cwd });
    await proxy.initialize();
    const names = toolNames(await proxy.request(1, "tools/list"));
    const call = await proxy.request(2, "tools/call", { name: "search", arguments: { query: "x" } });
    assertEquals(await proxy.close(), 0);
    return [names, "error" in call ? errorOf(call).message : "answered"];
  };
  assertEquals((await offered({}, repo))[0], OFFERED_TOOLS);
  const off = [[], "Memory is off here (disabled): no memory tool is offered."];
  assertEquals(await offered({ OPENVIKING_MEMORY_ENABLED: "false" }), off);
  assertEquals(
    await offered({ OPENVIKING_BYPASS_SESSION_PATTERNS: `${home.path}/untrusted/**` }, `${repo}/src`),
    [
      [],
      `Memory is off here (bypass-pattern ${home.path}/untrusted/**): no memory tool is offered.`,
    ],
  );
  await Deno.writeTextFile(`${repo}/.openviking/config.json`, JSON.stringify({ enabled: false }));
  assertEquals(await offered({}, repo), off, "a workspace file may turn it off");
});

Deno.test("mcp: a workspace file's value in a settings warning reaches stderr printable (no bidi, C1 or escape)", async () => {
  await using home = await tempDir("ovk-mcp-");
  await using fake = await FakeOpenViking.start();
  const repo = `${home.path}/repo`;
  await Deno.mkdir(`${repo}/.openviking`, { recursive: true });
  const hostile = "0.9\u202e\u009b31m\u001b]8;;https://evil.example\u0007";
  await Deno.writeTextFile(`${repo}/.openviking/config.json`, JSON.stringify({ promptBudgetMs: hostile }));
  const proxy = startProxy({ HOME: home.path, OPENVIKING_URL: fake.url }, { cwd: repo });
  await proxy.initialize();
  assertEquals(await proxy.close(), 0);
  const said = proxy.diagnostics.join("\n");
  assertMatch(said, /"promptBudgetMs": invalid value "0\.9/);
  assertTrue(!["\u202e", "\u009b", "\u0007", "\u001b"].some((c) => said.includes(c)), said);
});
