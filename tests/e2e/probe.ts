/**
 * Calls of the REAL OpenViking server (PyPI `openviking`, see tests/support/real-openviking.ts) with the
 * headers the plugin sends, and {@link probeEndpoints}: the behaviour of every endpoint the plugin uses, pinned
 * on a dev-mode server (kimi_real_openviking_test.ts runs it on its server; real_openviking_probe_test.ts
 * probes api_key mode).
 */

import { Entries, memoriesFromEntries } from "../../memory/recall.ts";
import type { Memory } from "../../memory/memory.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { OPENVIKING_VERSION, type RealOpenViking, rssKiB } from "../support/real-openviking.ts";
import { USER_AGENT } from "../../lib/version.ts";
import { Budget, classifyReply, createClient } from "../../openviking/client.ts";
import { heldMessages } from "../../openviking/queue.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../support/fake-mcp.ts";
import { startProxy, toolNames } from "../mcp/harness.ts";
import { tempDir } from "../support/temp.ts";

export type Json = Record<string, unknown>;

/** A reply as the probe reads it. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Json;
}

export const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? v as Json : {});
export const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : []);

/** One request with the headers the plugin's HTTP client sends (`tweak` changes them). */
export async function call(
  server: RealOpenViking,
  method: string,
  path: string,
  body?: unknown,
  tweak?: (h: Headers) => void,
): Promise<Reply> {
  const headers = new Headers({ "User-Agent": USER_AGENT, Accept: "application/json" });
  if (body !== undefined) headers.set("Content-Type", "application/json");
  if (server.apiKey) headers.set("Authorization", `Bearer ${server.apiKey}`);
  headers.set("X-OpenViking-Account", server.account ?? "default");
  headers.set("X-OpenViking-User", server.user ?? "default");
  headers.set("X-OpenViking-Actor-Peer", "-work-main");
  tweak?.(headers);
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = obj(JSON.parse(text));
  } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

/** The JSON-RPC messages of an SSE (or plain JSON) MCP reply. */
export function mcpMessages(reply: Reply): Json[] {
  if (!(reply.headers.get("content-type") ?? "").includes("text/event-stream")) return [reply.json];
  return reply.text.split("\n").filter((l) => l.startsWith("data:")).map((l) => obj(JSON.parse(l.slice(5))));
}

/** A JSON-RPC request to `/mcp`. */
export function mcp(server: RealOpenViking, body: Json, accept = "application/json, text/event-stream") {
  return call(server, "POST", "/mcp", body, (h) => {
    h.set("Accept", accept);
    h.set("MCP-Protocol-Version", "2025-06-18");
  });
}

export function log(line: string): void {
  console.log(`  [real-openviking] ${line}`);
}

/**
 * What the server derives after a commit task completes (the memory's index entry, its search and recall
 * hits) lands a moment later, later still on a loaded machine: calls `read` until `ready` accepts a reply (at
 * most `timeoutMs`) and returns that reply — or the last one, for the caller's assertions to explain.
 */
export async function eventually(
  read: () => Promise<Reply>,
  ready: (reply: Reply) => boolean,
  timeoutMs = 60_000,
): Promise<Reply> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reply = await read();
    if (reply.status !== 200 || ready(reply) || Date.now() > deadline) return reply;
    await new Promise((res) => setTimeout(res, 500));
  }
}

/** The text of an MCP tool call's first content block. */
export const mcpText = (r: Reply): string =>
  String(arr(obj(mcpMessages(r)[0]?.result).content)[0]?.text ?? "");

/** A real memory file (not a directory's `.overview.md` / `.abstract.md`) whose abstract has `text`. */
export function memoryHit(r: Reply, text: string): Json | undefined {
  return arr(obj(r.json.result).memories).find((m) =>
    String(m.uri).endsWith(".md") && !String(m.uri).includes("/.") && String(m.abstract).includes(text)
  );
}

/** Adds a turn `turnId` (when `fact` is given), commits, and waits for the extraction; returns the finished task. */
export async function commitAndWait(
  server: RealOpenViking,
  sessionId: string,
  fact?: string,
  turnId = "0",
): Promise<Json> {
  if (fact) {
    const messages = [{ role: "user", content: fact, turn_id: turnId }, {
      role: "assistant",
      content: "Noted.",
      turn_id: turnId,
    }];
    const batch = await call(server, "POST", `/api/v1/sessions/${sessionId}/messages/batch`, { messages });
    assertEquals(batch.status, 200, batch.text);
  }
  const commit = await call(server, "POST", `/api/v1/sessions/${sessionId}/commit`, {});
  assertEquals(commit.status, 200, commit.text);
  const result = obj(commit.json.result);
  assertEquals([result.session_id, result.status, result.archived], [sessionId, "accepted", true]);
  assertMatch(String(result.task_id), /^[0-9a-f-]{36}$/);
  assertMatch(String(result.archive_uri), /\/history\/archive_\d{3}$/);
  const started = performance.now();
  for (const deadline = Date.now() + 90_000;; await new Promise((res) => setTimeout(res, 500))) {
    const r = await call(server, "GET", `/api/v1/tasks/${result.task_id}`);
    assertEquals(r.status, 200, r.text);
    const task = obj(r.json.result);
    if (task.status === "completed" || task.status === "failed") {
      log(`commit task ${task.status} after ${Math.round(performance.now() - started)} ms`);
      assertEquals(task.task_type, "session_commit");
      return task;
    }
    if (Date.now() > deadline) throw new Error(`task ${result.task_id} not done: ${r.text}`);
  }
}

/**
 * A request (its headers set, or deleted when "") and what the reply says: its status (`*`: any), then as far
 * as given the error's `code=`, the first validation error's `type=`, the `verdict=` of ARCHITECTURE decision
 * 15 (openviking/client.ts) and the error's `message=` (the rest of the line).
 */
export type Edge = [what: string, method: string, path: string, body: unknown, want: string, headers?: Json];

/** Sends every edge's request and compares the reply with what the edge expects. */
export async function expectEdges(server: RealOpenViking, edges: Edge[]): Promise<void> {
  for (const [what, method, path, body, want, headers = {}] of edges) {
    const r = await call(server, method, path, body, (h) => {
      for (const [k, v] of Object.entries(headers)) v ? h.set(k, String(v)) : h.delete(k);
    });
    const error = obj(r.json.error);
    const verdict = classifyReply({ status: r.status, text: r.text, origin: server.url });
    const got: Json = {
      code: error.code,
      type: arr(obj(error.details).validation_errors)[0]?.type,
      verdict: verdict.ok ? "ok" : verdict.kind,
      message: error.message,
    };
    const [status, ...fields] = want.split(/ (?=code=|type=|verdict=|message=)/);
    const seen = fields.map((f) => `${f.slice(0, f.indexOf("="))}=${got[f.slice(0, f.indexOf("="))]}`);
    assertEquals([status === "*" ? "*" : String(r.status), ...seen].join(" "), want, `${what}: ${r.text}`);
  }
}

/** The checks of {@link probeEndpoints} on a dev-mode server, each a step of `t`. */
export async function probeEndpoints(t: Deno.TestContext, server: RealOpenViking): Promise<void> {
  const sessionId = `kc-session_${crypto.randomUUID()}`;
  const session = `/api/v1/sessions/${sessionId}`;
  const tabs = "I prefer tabs over spaces in TypeScript projects";
  const rss = await rssKiB(server.pid);
  log(
    `${server.mode} server ${server.url} openviking==${OPENVIKING_VERSION} ${server.startupMs} ms, RSS ${rss} KiB`,
  );

  await t.step("/health, status; a batch creates kc-session_<uuid>, one message appends", async () => {
    const health = await call(server, "GET", "/health");
    assertEquals([health.status, health.json.status, health.json.healthy], [200, "ok", true], health.text);
    assertEquals([health.json.version, health.json.auth_mode], [OPENVIKING_VERSION, "dev"]);
    assertTrue(health.headers.get("x-request-id"), "x-request-id header");
    const status = await call(server, "GET", "/api/v1/system/status");
    assertEquals([status.status, status.json.status, status.json.error], [200, "ok", null], status.text);
    const { initialized, user } = obj(status.json.result);
    assertEquals([initialized, typeof user], [true, "string"]);
    const batch = await call(server, "POST", `${session}/messages/batch`, {
      messages: [
        { role: "user", content: tabs, turn_id: "0" },
        { role: "assistant", content: "Noted: tabs for indentation.", turn_id: "0" },
      ],
    });
    const added = obj(batch.json.result);
    assertEquals(
      [batch.status, added.session_id, added.message_count, added.added],
      [200, sessionId, 2, 2],
      batch.text,
    );
    assertEquals(typeof added.pending_tokens, "number");
    const one = await call(server, "POST", `${session}/messages`, {
      role: "user",
      content: "Deno is my favourite runtime",
      turn_id: "1",
    });
    const appended = obj(one.json.result);
    const got = [one.status, appended.session_id, appended.message_count, "added" in appended];
    assertEquals(got, [200, sessionId, 3, false], one.text);
  });

  await t.step("the session reads back; a commit is a task that extracts; again: skipped", async () => {
    const meta = obj((await call(server, "GET", session)).json.result);
    assertEquals([meta.session_id, meta.message_count, meta.commit_count], [sessionId, 3, 0]);
    assertMatch(String(meta.uri), /^viking:\/\/user\/[^/]+\/sessions\/kc-session_/);
    const messages = arr(obj((await call(server, "GET", `${session}/context`)).json.result).messages);
    assertEquals(messages.map((x) => `${x.role} ${x.turn_id}`), ["user 0", "assistant 0", "user 1"]);
    assertEquals(arr(messages[0].parts)[0], { ...arr(messages[0].parts)[0], type: "text", text: tabs });
    assertMatch(String(messages[0].id), /^msg_/);
    const task = await commitAndWait(server, sessionId);
    assertEquals(obj((await call(server, "GET", session)).json.result).commit_count, 1);
    assertEquals(task.status, "completed", JSON.stringify(task));
    assertEquals(obj(obj(task.result).memories_extracted).memory_write, 1);
    assertTrue(server.stub.kinds().includes("memory"), "extraction prompt reached the stub");
    const archive = await call(server, "GET", `${session}/archives/archive_001`);
    assertEquals(archive.status, 200, archive.text);
    const archived = arr(obj(archive.json.result).messages).map((x) => `${x.role} ${x.turn_id}`);
    assertEquals(archived, ["user 0", "assistant 0", "user 1"]);
    const again = obj((await call(server, "POST", `${session}/commit`, {})).json.result);
    const got = [again.status, again.reason, again.task_id, again.archived];
    assertEquals(got, ["skipped", "no_messages", null, false]);
  });

  await t.step("a damaged capture state recovers from the newest message held, archived", async () => {
    const { url: baseUrl, apiKey, account, user } = server;
    const client = createClient({ baseUrl, apiKey, account, user, userAgent: USER_AGENT, timeoutMs: 30_000 });
    const budget = new Budget(60_000);
    const newest = { role: "user", turnId: "1", text: "Deno is my favourite runtime" };
    const held = await heldMessages(client, sessionId, budget);
    assertEquals(Array.isArray(held) && held.at(-1), newest);
    const unknown = `kc-none-${crypto.randomUUID()}`;
    assertEquals(await heldMessages(client, unknown, budget), [], "an unknown session");
  });

  let memoryUri = "";
  await t.step("search/find; search/search mode=context (recall)", async () => {
    const find = () =>
      call(server, "POST", "/api/v1/search/find", {
        query: "tabs spaces TypeScript",
        target_uri: "viking://~/memories",
        limit: 5,
      });
    const found = await eventually(find, (r) => memoryHit(r, "tabs over spaces") !== undefined);
    assertEquals(found.status, 200, found.text);
    assertEquals(Object.keys(obj(found.json.result)).sort(), ["memories", "resources", "skills", "total"]);
    for (const m of arr(obj(found.json.result).memories)) {
      const got = [m.context_type, typeof m.score, typeof m.abstract, Array.isArray(m.tags)];
      assertEquals(got, ["memory", "number", "string", true]);
      assertMatch(String(m.uri), /^viking:\/\/user\/[^/]+\/memories\//);
    }
    const hit = memoryHit(found, "tabs over spaces");
    assertTrue(hit, found.text);
    memoryUri = String(hit.uri);

    const question = "tabs or spaces for TypeScript indentation?";
    const body = {
      query: question,
      mode: "context",
      purpose: "coding",
      score_threshold: 0.35,
      session_id: sessionId,
      dedup_turns: 5,
    };
    const hasTabs = (r: Reply) =>
      arr(obj(r.json.result).entries).some((e) => String(e.text).includes("tabs over spaces"));
    const r = await eventually(
      () => call(server, "POST", "/api/v1/search/search", body),
      hasTabs,
    );
    assertEquals(r.status, 200, r.text);
    const result = obj(r.json.result);
    assertEquals(Object.keys(result).sort(), ["digest", "entries", "rendered", "stats"]);
    const stats = obj(result.stats);
    assertEquals([stats.purpose, stats.score_threshold, obj(stats.dedup).turns], ["coding", 0.35, 5]);
    for (const e of arr(result.entries)) {
      assertEquals(Object.keys(e).sort(), ["category", "detail", "origin", "score", "text", "uri"]);
    }
    assertTrue(hasTabs(r), r.text);
    assertStringIncludes(String(result.rendered), '<memory uri="viking://user/');
    assertEquals(
      memoriesFromEntries(Entries.parse(result.entries)).map(rendered).join("\n"),
      String(result.rendered),
    );
  });

  await t.step("fs/ls, content/read; the profile is the user's: alike under two actor peers", async () => {
    const r = await call(server, "GET", "/api/v1/fs/ls?uri=viking://user&output=original");
    assertEquals([r.status, r.json.has_more], [200, false], r.text);
    assertTrue(arr(r.json.result).length > 0, r.text);
    for (const e of arr(r.json.result)) {
      assertEquals([typeof e.name, typeof e.isDir], ["string", "boolean"]);
      assertMatch(String(e.uri), /^viking:\/\/user\//);
    }
    const mine = await call(server, "GET", "/api/v1/fs/ls?uri=viking://~/memories&output=original");
    assertEquals(mine.status, 200, mine.text);
    assertTrue(arr(mine.json.result).every((e) => String(e.uri).startsWith("viking://user/")));
    const read = await call(server, "GET", `/api/v1/content/read?uri=${encodeURIComponent(memoryUri)}`);
    assertEquals([read.status, typeof read.json.result], [200, "string"], read.text);
    assertStringIncludes(String(read.json.result), "tabs over spaces");
    const status = await call(server, "GET", "/api/v1/system/status");
    const base = `viking://user/${String(obj(status.json.result).user ?? "default")}/memories`;
    const w = await call(server, "POST", "/api/v1/content/write", {
      uri: `${base}/profile.md`,
      content: "# Profile\nName: Probe User",
      mode: "create",
      wait: true,
    });
    assertTrue(w.status === 200 || w.status === 409, w.text);
    const as = (peer: string) => (h: Headers) => h.set("X-OpenViking-Actor-Peer", peer);
    const paths = [
      `/api/v1/content/read?uri=${encodeURIComponent(`${base}/profile.md`)}`,
      `/api/v1/fs/ls?uri=${encodeURIComponent(`${base}/preferences`)}&output=agent&recursive=true`,
    ];
    const seen = await Promise.all(
      ["repo-a", "repo-b"].map((peer) =>
        Promise.all(paths.map(async (path) => (await call(server, "GET", path, undefined, as(peer))).text))
      ),
    );
    assertStringIncludes(seen[0][0], "Name: Probe User");
    assertEquals(seen[1], seen[0]);
  });

  await t.step("/mcp through the proxy: the model is offered the tools memory needs", async () => {
    await using dir = await tempDir("ovk-probe-mcp-");
    const home = dir.path;
    const listed = async (extra: Record<string, string>) => {
      const proxy = startProxy({
        HOME: home,
        OPENVIKING_URL: server.url,
        ...(server.apiKey ? { OPENVIKING_API_KEY: server.apiKey } : {}),
        ...(server.account ? { OPENVIKING_ACCOUNT: server.account } : {}),
        ...(server.user ? { OPENVIKING_USER: server.user } : {}),
        ...extra,
      });
      await proxy.initialize();
      const reply = await proxy.request(1, "tools/list");
      assertEquals(await proxy.close(), 0);
      return { names: toolNames(reply), bytes: JSON.stringify(reply.result).length };
    };
    const all = await listed({ OPENVIKING_MCP_TOOLS: "all" });
    const offered = await listed({});
    assertEquals([all.names, offered.names], [OPENVIKING_TOOLS, OFFERED_TOOLS]);
    const [a, o] = [all, offered].map((l) => `${l.names.length} tools, ${l.bytes} bytes`);
    log(`tools/list the model gets: ${a} (all) → ${o} (default)`);
  });

  await t.step("/mcp: stateless streamable HTTP, SSE replies, no Mcp-Session-Id", async () => {
    const params = {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "probe", version: "0" },
    };
    const init = await mcp(server, { jsonrpc: "2.0", id: 1, method: "initialize", params });
    assertEquals(init.status, 200, init.text);
    assertStringIncludes(init.headers.get("content-type") ?? "", "text/event-stream");
    assertEquals(init.headers.get("mcp-session-id"), null);
    const initResult = obj(mcpMessages(init)[0].result);
    assertEquals([initResult.protocolVersion, obj(initResult.serverInfo).name], ["2025-06-18", "openviking"]);
    assertEquals((await mcp(server, { jsonrpc: "2.0", method: "notifications/initialized" })).status, 202);
    const list = await mcp(server, { jsonrpc: "2.0", id: 2, method: "tools/list" });
    const tools = arr(obj(mcpMessages(list)[0].result).tools).map((x) => String(x.name));
    log(`MCP tools (${tools.length}): ${tools.join(", ")}`);
    assertEquals(tools, OPENVIKING_TOOLS, "the fake's tool list (tests/support/fake-mcp.ts) is the real one");
    const args = { query: "tabs TypeScript", target_uri: "viking://~/memories" };
    const find = () =>
      mcp(server, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "find", arguments: args } });
    const found = await eventually(find, (reply) => mcpText(reply).includes(memoryUri));
    assertEquals(found.status, 200, found.text);
    const result = obj(mcpMessages(found)[0].result);
    const structured = obj(result.structuredContent).result;
    assertEquals([result.isError, arr(result.content)[0].type, typeof structured], [false, "text", "string"]);
    assertStringIncludes(mcpText(found), memoryUri);
  });

  await t.step("what the server takes and refuses: the edges the client must respect", async () => {
    const fresh = `/api/v1/sessions/kc-refused-${crypto.randomUUID()}`;
    const x = { role: "user", content: "x", turn_id: "0" };
    const add = (id: string) => `/api/v1/sessions/${id}/messages`;
    const many = Array.from({ length: 101 }, (_, i) => ({ ...x, turn_id: String(i) }));
    const [find, search, recall] = ["find", "search", "recall"].map((p) => `/api/v1/search/${p}`);
    const peer = { "X-OpenViking-Actor-Peer": "a/b" };
    const json = { Accept: "application/json", "MCP-Protocol-Version": "2025-06-18" };
    const mine = "viking://~/memories";
    const missing = `/api/v1/content/read?uri=${encodeURIComponent(memoryUri)}.nope`;
    const invalid = "400 code=INVALID_ARGUMENT";
    await expectEdges(server, [
      ["an unknown session", "GET", fresh, undefined, "404 code=NOT_FOUND"],
      ["its commit", "POST", `${fresh}/commit`, {}, "404 code=NOT_FOUND verdict=rejected"],
      ["an archive not there (or not complete)", "GET", `${session}/archives/archive_009`, undefined, "404"],
      ["an unknown field on find", "POST", find, { query: "x", bogus: 1 }, `${invalid} type=extra_forbidden`],
      ["an unknown field on search", "POST", search, { query: "x", mode: "context", bogus: 1 }, "400"],
      [
        "… on a batch: taken",
        "POST",
        `${fresh}x/messages/batch`,
        { messages: [{ ...x, a: 1 }], a: 1 },
        "200",
      ],
      ["… on a commit: taken", "POST", `${session}/commit`, { bogus: 1 }, "200"],
      ["a numeric turn_id", "POST", `${fresh}/messages`, { ...x, turn_id: 7 }, `${invalid} verdict=rejected`],
      ["a message without content", "POST", `${fresh}/messages`, { role: "user" }, "400"],
      ["a route the server lacks", "POST", `${fresh}/no-such-route`, {}, "* verdict=missing-route"],
      ["101 messages in a batch", "POST", `${fresh}/messages/batch`, { messages: many }, "400 type=too_long"],
      ["mode list with a purpose", "POST", search, { query: "x", mode: "list", purpose: "coding" }, "400"],
      [
        "mode context with a target",
        "POST",
        search,
        { query: "x", mode: "context", target_uri: mine },
        "400",
      ],
      ["recall with a mode", "POST", recall, { query: "x", mode: "context" }, "400"],
      ["a / in the session id", "POST", add("kc-a%2Fb"), x, "404"],
      ["a \\ in the session id", "POST", add("kc-a%5Cb"), x, "403 code=PERMISSION_DENIED"],
      ["a / in the actor peer", "POST", find, { query: "x" }, invalid, peer],
      ["session routes ignore the actor peer", "POST", add(sessionId), x, "200", peer],
      [
        "MCP without SSE",
        "POST",
        "/mcp",
        { jsonrpc: "2.0", id: 4, method: "tools/list" },
        "406 code=-32600",
        json,
      ],
      ["DELETE /mcp", "DELETE", "/mcp", undefined, "405"],
      ["a file not there", "GET", missing, undefined, "404 code=NOT_FOUND"],
    ]);
    for (const ok of ["kc-a.b@c:d+e~f=g!h", "KC-Upper_case", "kc-%E4%B8%AD", "kc-" + "y".repeat(300)]) {
      const r = await call(server, "POST", add(ok), x);
      assertEquals([r.status, obj(r.json.result).session_id], [200, decodeURIComponent(ok)], r.text);
    }
  });

  if (server.mode === "dev") {
    await t.step("dev mode takes the identity from X-OpenViking-Account/User, any key is root", async () => {
      const r = await call(server, "GET", "/api/v1/system/status", undefined, (h) => {
        h.set("X-OpenViking-Account", "acme");
        h.set("X-OpenViking-User", "alice");
      });
      assertEquals([r.status, obj(r.json.result).user], [200, "alice"], r.text);
      const anyKey = await call(
        server,
        "GET",
        "/health",
        undefined,
        (h) => h.set("Authorization", "Bearer x"),
      );
      assertEquals([anyKey.status, anyKey.json.role], [200, "root"]);
    });
  }
  log(`RSS after probe: ${await rssKiB(server.pid)} KiB`);
}

/** One memory in the server's render.py form: what our parse of `entries` must give back. */
function rendered(m: Memory): string {
  const attrs = [`uri="${m.uri}"`];
  if (m.category) attrs.push(`type="${m.category}"`);
  if (m.score !== undefined) attrs.push(`score="${m.score.toFixed(2)}"`);
  if (m.detail) attrs.push(`detail="${m.detail}"`);
  return m.text ? `<memory ${attrs.join(" ")}>\n${m.text}\n</memory>` : `<memory ${attrs.join(" ")} />`;
}
