/**
 * Against the REAL OpenViking server (PyPI `openviking`, tests/support/real-openviking.ts), two of them. A
 * dev-mode one: every endpoint the plugin uses, as the plugin calls it ({@link probeEndpoints}), the
 * extraction alarm (the model stub's chat switched off), recall scopes across two projects, the commit
 * policy's idle commit; then with the real Kimi Code CLI what Kimi's turns leave in a real session (read back
 * through the server's API), commits accepted as tasks, recall of what an earlier session taught, our MCP
 * tools answered by the real `/mcp`. An api_key-mode one: README's "Server with API keys" word for word, user
 * keys, 401/403 shapes, identity from the key, the fake's answers to that flow.
 */

import { MEMORY_TOOLS } from "../../memory/tools.ts";
import { Entries, memoriesFromEntries } from "../../memory/recall.ts";
import type { Memory } from "../../memory/memory.ts";
import { USER_AGENT } from "../../lib/version.ts";
import { Budget, classifyReply, createClient } from "../../openviking/client.ts";
import { heldMessages } from "../../openviking/queue.ts";
import { KNOBS } from "../../openviking/config.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { ROOT, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { KIMI_VERSIONS, type KimiInstall, waitUntil } from "../support/kimi.ts";
import { messageText } from "../support/model-server.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../support/fake-mcp.ts";
import {
  OPENVIKING_VERSION,
  type RealOpenViking,
  rssKiB,
  startRealOrSkip,
} from "../support/real-openviking.ts";
import { isolatedEnv } from "../install/helpers.ts";
import { startProxy, toolNames } from "../mcp/harness.ts";
import {
  E2E_TEST,
  filesContaining,
  isHookResult,
  kimiOrSkip,
  leaks,
  MCP_ARGS,
  MCP_PREFIX,
  type Mode,
  type Msg,
  Rig,
  skip,
  TOOL_TURN_ANSWER,
} from "./harness.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
/** The default timeout of our requests, not the sandbox's 1 s: the real server takes its time. */
const UNHURRIED = { OPENVIKING_TIMEOUT_MS: String(KNOBS.timeoutMs.default) };
/** The headers that leave the actor peer out: the user's own calls. */
const NO_PEER = { "X-OpenViking-Actor-Peer": "" };

type Json = Record<string, unknown>;

/** A reply as the probe reads it. */
interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Json;
}

const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? v as Json : {});
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.map(obj) : []);

/** One request with the headers the plugin's HTTP client sends, `headers` changing them ("": left out). */
async function call(
  server: RealOpenViking,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const sent = Object.entries({
    "User-Agent": USER_AGENT,
    Accept: "application/json",
    ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
    ...(server.apiKey ? { Authorization: `Bearer ${server.apiKey}` } : {}),
    "X-OpenViking-Account": server.account ?? "default",
    "X-OpenViking-User": server.user ?? "default",
    "X-OpenViking-Actor-Peer": "-work-main",
    ...headers,
  }).filter(([, v]) => v !== "");
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: sent,
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
function mcpMessages(reply: Reply): Json[] {
  if (!(reply.headers.get("content-type") ?? "").includes("text/event-stream")) return [reply.json];
  return reply.text.split("\n").filter((l) => l.startsWith("data:")).map((l) => obj(JSON.parse(l.slice(5))));
}

/** A JSON-RPC request to `/mcp`. */
function mcp(server: RealOpenViking, body: Json, accept = "application/json, text/event-stream") {
  return call(server, "POST", "/mcp", body, { Accept: accept, "MCP-Protocol-Version": "2025-06-18" });
}

function log(line: string): void {
  console.log(`  [real-openviking] ${line}`);
}

/**
 * What the server derives after a commit task completes (the memory's index entry, its search and recall
 * hits) lands a moment later, later still on a loaded machine: calls `read` until `ready` accepts a reply
 * (within a minute), and returns that reply.
 */
function eventually(read: () => Promise<Reply>, ready: (reply: Reply) => boolean): Promise<Reply> {
  let last: Reply | undefined;
  const accepted = async () => ready(last = await read()) && last;
  return waitUntil(accepted, 60_000, "the server's derived data", 500, () => last?.text);
}

/** The text of an MCP tool call's first content block. */
const mcpText = (r: Reply): string => String(arr(obj(mcpMessages(r)[0]?.result).content)[0]?.text ?? "");

/** A real memory file (not a directory's `.overview.md` / `.abstract.md`) whose abstract has `text`. */
function memoryHit(r: Reply, text: string): Json | undefined {
  return arr(obj(r.json.result).memories).find((m) =>
    String(m.uri).endsWith(".md") && !String(m.uri).includes("/.") && String(m.abstract).includes(text)
  );
}

/** Adds a turn `turnId` (when `fact` is given), commits, and waits for the extraction; returns the finished task. */
async function commitAndWait(
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
  const done = async () => {
    const r = await call(server, "GET", `/api/v1/tasks/${result.task_id}`);
    assertEquals(r.status, 200, r.text);
    const task = obj(r.json.result);
    return (task.status === "completed" || task.status === "failed") && task;
  };
  const task = await waitUntil(done, 90_000, `commit task ${result.task_id}`, 500);
  log(`commit task ${task.status} after ${Math.round(performance.now() - started)} ms`);
  assertEquals(task.task_type, "session_commit");
  return task;
}

/**
 * A request (its headers set, or deleted when "") and what the reply says: its status (`*`: any), then as far
 * as given the error's `code=`, the first validation error's `type=`, the `verdict=` of ARCHITECTURE decision
 * 15 (openviking/client.ts) and the error's `message=` (the rest of the line).
 */
type Edge = [
  what: string,
  method: string,
  path: string,
  body: unknown,
  want: string,
  headers?: Record<string, string>,
];

/** Sends every edge's request and compares the reply with what the edge expects. */
async function expectEdges(server: RealOpenViking, edges: Edge[]): Promise<void> {
  for (const [what, method, path, body, want, headers = {}] of edges) {
    const r = await call(server, method, path, body, headers);
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
async function probeEndpoints(t: Deno.TestContext, server: RealOpenViking): Promise<void> {
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
    const got0 = [batch.status, added.session_id, added.message_count, added.added];
    assertEquals(got0, [200, sessionId, 2, 2], batch.text);
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
    const parsed = memoriesFromEntries(Entries.parse(result.entries));
    assertEquals(parsed.map(rendered).join("\n"), String(result.rendered));
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
    const paths = [
      `/api/v1/content/read?uri=${encodeURIComponent(`${base}/profile.md`)}`,
      `/api/v1/fs/ls?uri=${encodeURIComponent(`${base}/preferences`)}&output=agent&recursive=true`,
    ];
    const seen = await Promise.all(
      ["repo-a", "repo-b"].map((peer) =>
        Promise.all(
          paths.map(async (path) =>
            (await call(server, "GET", path, undefined, { "X-OpenViking-Actor-Peer": peer })).text
          ),
        )
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
    // deno-fmt-ignore: a table, a row a line
    await expectEdges(server, [
      ["an unknown session", "GET", fresh, undefined, "404 code=NOT_FOUND"],
      ["its commit", "POST", `${fresh}/commit`, {}, "404 code=NOT_FOUND verdict=rejected"],
      ["an archive not there (or not complete)", "GET", `${session}/archives/archive_009`, undefined, "404"],
      ["an unknown field on find", "POST", find, { query: "x", bogus: 1 }, `${invalid} type=extra_forbidden`],
      ["an unknown field on search", "POST", search, { query: "x", mode: "context", bogus: 1 }, "400"],
      ["… on a batch: taken", "POST", `${fresh}x/messages/batch`, { messages: [{ ...x, a: 1 }], a: 1 }, "200"],
      ["… on a commit: taken", "POST", `${session}/commit`, { bogus: 1 }, "200"],
      ["a numeric turn_id", "POST", `${fresh}/messages`, { ...x, turn_id: 7 }, `${invalid} verdict=rejected`],
      ["a message without content", "POST", `${fresh}/messages`, { role: "user" }, "400"],
      ["a route the server lacks", "POST", `${fresh}/no-such-route`, {}, "* verdict=missing-route"],
      ["101 messages in a batch", "POST", `${fresh}/messages/batch`, { messages: many }, "400 type=too_long"],
      ["mode list with a purpose", "POST", search, { query: "x", mode: "list", purpose: "coding" }, "400"],
      ["mode context with a target", "POST", search, { query: "x", mode: "context", target_uri: mine }, "400"],
      ["recall with a mode", "POST", recall, { query: "x", mode: "context" }, "400"],
      ["a / in the session id", "POST", add("kc-a%2Fb"), x, "404"],
      ["a \\ in the session id", "POST", add("kc-a%5Cb"), x, "403 code=PERMISSION_DENIED"],
      ["a / in the actor peer", "POST", find, { query: "x" }, invalid, peer],
      ["session routes ignore the actor peer", "POST", add(sessionId), x, "200", peer],
      ["MCP without SSE", "POST", "/mcp", { jsonrpc: "2.0", id: 4, method: "tools/list" }, "406 code=-32600", json],
      ["DELETE /mcp", "DELETE", "/mcp", undefined, "405"],
      ["a file not there", "GET", missing, undefined, "404 code=NOT_FOUND"],
    ]);
    for (const ok of ["kc-a.b@c:d+e~f=g!h", "KC-Upper_case", "kc-%E4%B8%AD", "kc-" + "y".repeat(300)]) {
      const r = await call(server, "POST", add(ok), x);
      assertEquals([r.status, obj(r.json.result).session_id], [200, decodeURIComponent(ok)], r.text);
    }
  });

  await t.step("dev mode takes the identity from X-OpenViking-Account/User, any key is root", async () => {
    const who = { "X-OpenViking-Account": "acme", "X-OpenViking-User": "alice" };
    const r = await call(server, "GET", "/api/v1/system/status", undefined, who);
    assertEquals([r.status, obj(r.json.result).user], [200, "alice"], r.text);
    const anyKey = await call(server, "GET", "/health", undefined, { Authorization: "Bearer x" });
    assertEquals([anyKey.status, anyKey.json.role], [200, "root"]);
  });
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

const NAME = `e2e real Kimi + real OpenViking ${OPENVIKING_VERSION}`;

/** Direct calls to the real server, as the identity the plugin was installed with. */
class RealApi {
  constructor(readonly server: RealOpenViking, readonly account: string, readonly user: string) {}

  call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const who = { "X-OpenViking-Account": this.account, "X-OpenViking-User": this.user };
    return call(this.server, method, path, body, { ...NO_PEER, ...who, ...headers });
  }

  /**
   * Every message of a session, read back: the archived ones (one archive per commit, read from its
   * messages.jsonl) and the live ones (`/context`), by message id.
   */
  async messages(sid: string): Promise<Msg[] | undefined> {
    const ctx = await this.call("GET", `/api/v1/sessions/${encodeURIComponent(sid)}/context`);
    if (ctx.status === 404) return [];
    const meta = await this.call("GET", `/api/v1/sessions/${encodeURIComponent(sid)}`);
    if (ctx.status !== 200 || meta.status !== 200) return undefined;
    const info = obj(meta.json.result);
    const byId = new Map<string, Json>();
    for (let k = 1; k <= Number(info.commit_count ?? 0); k++) {
      const uri = `${info.uri}/history/archive_${String(k).padStart(3, "0")}/messages.jsonl`;
      const r = await this.call("GET", `/api/v1/content/read?uri=${encodeURIComponent(uri)}`);
      if (r.status !== 200) return undefined;
      for (const line of String(r.json.result).split("\n").filter((l) => l.trim())) {
        const m = obj(JSON.parse(line));
        byId.set(String(m.id), m);
      }
    }
    for (const m of arr(obj(ctx.json.result).messages)) byId.set(String(m.id), m);
    const text = (m: Json) => arr(m.parts).map((p) => String(p.text ?? "")).join("");
    return [...byId.values()]
      .sort((x, y) => String(x.created_at).localeCompare(String(y.created_at)))
      .map((m): Msg => [String(m.turn_id), String(m.role), text(m)]);
  }

  /** The session's commit tasks (each one an accepted commit). */
  async commitTasks(sid: string): Promise<Json[]> {
    const query = `task_type=session_commit&resource_id=${encodeURIComponent(sid)}`;
    const r = await this.call("GET", `/api/v1/tasks?${query}`);
    assertEquals(r.status, 200, r.text);
    return arr(r.json.result);
  }

  /** A JSON-RPC call to `/mcp` (SSE or JSON reply); returns the result object. */
  async mcp(method: string, params: Json): Promise<Json> {
    const mcp = { Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18" };
    const r = await this.call("POST", "/mcp", { jsonrpc: "2.0", id: 1, method, params }, mcp);
    assertEquals(r.status, 200, r.text);
    return obj(mcpMessages(r).at(-1)?.result);
  }
}

/** Waits until the real session holds exactly `expected`, then checks it again a second later (no late duplicate). */
async function expectRealSession(
  api: RealApi,
  sid: string,
  expected: Msg[],
  timeoutMs = 60_000,
): Promise<void> {
  let last: Msg[] | undefined;
  const read = async () => {
    last = await api.messages(sid) ?? last;
    return JSON.stringify(last) === JSON.stringify(expected);
  };
  await waitUntil(read, timeoutMs, `${expected.length} messages in the real session ${sid}`, 100, () => last);
  await new Promise((r) => setTimeout(r, 1000));
  last = await waitUntil(() => api.messages(sid), timeoutMs, `a second read of the real session ${sid}`);
  assertEquals(last, expected, "nothing arrived twice");
}

/** Waits until the session has `n` commit tasks (accepted commits), none failed. */
async function expectCommits(api: RealApi, sid: string, n: number): Promise<Json[]> {
  const accepted = async () => {
    const t = await api.commitTasks(sid);
    return t.length >= n && t;
  };
  const tasks = await waitUntil(
    accepted,
    30_000,
    `${n} accepted commits of ${sid}`,
    100,
    () => api.commitTasks(sid),
  );
  assertEquals(tasks.length, n, JSON.stringify(tasks));
  for (const t of tasks) assertTrue(t.status !== "failed", JSON.stringify(t));
  return tasks;
}

/** The text part of a tool output as the model got it. */
function toolText(output: string | undefined): string {
  return (output ?? "").replace(/^Wall time: [\d.]+ seconds\n/, "").replace(
    /\n*<mcp-result-extras>[\s\S]*$/,
    "",
  );
}

/**
 * What the real server adds is the server's side — it takes our writes, commits, extracts, answers recall and
 * /mcp — which is our hooks talking to it, alike on every release and in both modes: the newest release runs
 * it (ARCHITECTURE decision 41); what each release's turns give the hooks is checked against the fake.
 */
const installs: KimiInstall[] = [];
if (REAL === "0") skip(NAME, "OPENVIKING_REAL=0");
else {
  for (const version of [KIMI_VERSIONS[0]]) {
    const install = await kimiOrSkip(version, `${NAME} with kimi ${version}`);
    if (install) installs.push(install);
  }
}

/** A rig whose plugin talks to the real server as `user` (dev mode takes the identity from the headers). */
async function realRig(
  install: KimiInstall,
  mode: Mode,
  server: RealOpenViking,
  user: string,
  env?: Record<string, string>,
) {
  const account = "kimi-e2e";
  const args = ["--account", account, "--user", user, ...(server.apiKey ? ["--api-key", server.apiKey] : [])];
  const rig = await Rig.create(install, { mode, serverUrl: server.url, installArgs: args, env });
  const api = new RealApi(server, account, user);
  const space = String(obj((await api.call("GET", "/api/v1/system/status")).json.result).user);
  return { rig, api, space };
}

const SESSION = "session_5e1d2c3b-0a9f-4e8d-b7c6-00000000c0de";
const USER = "viking://user/default";

/** Project A's memories, the user's preference, and project B's, where the server keeps each. */
const A = {
  [`${USER}/memories/events/atlas-release.md`]: "Atlas release 2.3 shipped the streaming tile encoder.",
  [`${USER}/peers/project-a/memories/events/atlas-deploy.md`]:
    "Atlas release deploys run from CI on every tag.",
};
const PREFERENCE = { [`${USER}/memories/preferences/indent.md`]: "The user indents TypeScript with tabs." };
const B = {
  [`${USER}/memories/events/borealis-release.md`]:
    "Borealis release 4.1 moved the billing database to Postgres 16.",
  [`${USER}/memories/entities/borealis-billing.md`]:
    "Borealis billing deploys its release with a nightly job.",
  [`${USER}/peers/project-b/memories/events/borealis-deploy.md`]:
    "Borealis release deploys run from the ops repository.",
};
/** What A's user asks. */
const PROMPTS = [
  "how do release deploys run here?",
  "what did the last release ship and which database does it use?",
  "how should I indent the release script?",
];

const FACT = "Please remember: I prefer tabs over spaces in TypeScript projects";

Deno.test({ name: NAME, ignore: REAL === "0", ...E2E_TEST }, async (t) => {
  const server = await startRealOrSkip(NAME);
  if (!server) return;
  try {
    // First, on the fresh server: the endpoints the plugin uses, as the plugin calls them.
    await probeEndpoints(t, server);
    await t.step("a broken chat model: three failed commits are told with the server's words", async () => {
      server.stub.chatDown = true;
      try {
        await using home = await tempDir();
        const t0 = performance.now();
        const errors = await Promise.all(["0", "1", "2"].map(async (n) => {
          const task = await commitAndWait(
            server,
            `kc-alarm-${n}`,
            `The user keeps release notes in docs/release-${n}.md.`,
          );
          assertEquals(task.status, "failed", JSON.stringify(task));
          return String(task.error);
        }));
        const ms = () => Math.round(performance.now() - t0);
        console.log(`  three commits failed in ${ms()} ms: ${errors[2].slice(0, 160)}`);
        const env = sandboxEnv(home.path, server.url, { ...UNHURRIED, OPENVIKING_WRITE_PATH_ASYNC: "0" });
        const status = JSON.parse((await runCli(["status", "--json"], { env, clearEnv: true })).stdout);
        assertEquals(status.extraction.failed, 3);
        assertStringIncludes(status.extraction.message, errors[2].replace(/\s+/g, " ").trim().slice(0, 60));
        assertStringIncludes(status.extraction.fix, "ov.conf");
        await Deno.mkdir(env.KIMI_CODE_HOME, { recursive: true });
        const doctor = JSON.parse((await runCli(["doctor", "--json"], { env, clearEnv: true })).stdout);
        assertEquals(doctor.checks.find((c: { id: string }) => c.id === "extraction").status, "fail");
        const hook = (event: string, input: Record<string, unknown>) =>
          runCli(["hook", event], {
            env,
            clearEnv: true,
            stdin: JSON.stringify({ cwd: home.path, ...input }),
          });
        await hook("session-start", {
          hook_event_name: "SessionStart",
          session_id: "s2",
          source: "startup",
        });
        const first = await hook("user-prompt-submit", {
          hook_event_name: "UserPromptSubmit",
          session_id: "s2",
          prompt: "where do release notes go?",
        });
        assertMatch(
          first.stdout,
          /openviking-kimi: OpenViking makes no memory \(the last 3 extractions failed\); `[^`]+ doctor` says why\n$/,
        );
        console.log(`  done in ${ms()} ms (server start ${server.startupMs} ms)`);
      } finally {
        server.stub.chatDown = false;
      }
    });

    await t.step("two projects: B's memories in A's digests under each recall scope", async () => {
      await using home = await tempDir();
      const t0 = performance.now();
      for (const [uri, content] of Object.entries({ ...A, ...PREFERENCE, ...B })) {
        const body = { uri, content, mode: "create", wait: true };
        // As the user, no actor peer: a peer may not write another peer's memories.
        const w = await call(server, "POST", "/api/v1/content/write", body, NO_PEER);
        assertEquals(w.status, 200, `${uri}: ${w.text}`);
      }
      console.log(`  written in ${Math.round(performance.now() - t0)} ms`);
      const leaked: Record<string, number> = {};
      const shown: Record<string, string[]> = {};
      for (const scope of ["all", "actor", "strict"]) {
        shown[scope] = [];
        for (const text of PROMPTS) {
          const r = await runCli(["recall", text, "--json"], {
            clearEnv: true,
            env: sandboxEnv(home.path, server.url, {
              ...UNHURRIED,
              OPENVIKING_PEER_ID: "project-a",
              OPENVIKING_RECALL_PEER_SCOPE: scope,
              OPENVIKING_SCORE_THRESHOLD: "0", // every memory the server finds: the most a digest could leak
            }),
          });
          const out = JSON.parse(r.stdout);
          assertEquals(out.failure, undefined, r.stdout);
          shown[scope].push(
            ...Object.keys({ ...A, ...PREFERENCE, ...B }).filter((u) => out.stdout.includes(u)),
          );
        }
        leaked[scope] = shown[scope].filter((u) => u in B).length;
      }
      console.log(`  recalled in ${Math.round(performance.now() - t0)} ms`);
      console.log(`  B's memories in A's digests (${PROMPTS.length} prompts): ${JSON.stringify(leaked)}`);
      assertTrue(leaked.all > 0 && leaked.actor > 0, "today B's memories reach A's digests");
      assertEquals(leaked.strict, 0);
      const strictShows = new Set(shown.strict);
      assertTrue(
        strictShows.has(`${USER}/peers/project-a/memories/events/atlas-deploy.md`),
        "A's peer memory",
      );
      assertTrue(strictShows.has(`${USER}/memories/preferences/indent.md`), "the user's preference");
    });

    await t.step(
      "balanced leaves a short turn uncommitted, commits at SessionEnd",
      async () => {
        await using dir = await tempDir();
        const env = sandboxEnv(dir.path, server.url, {
          OPENVIKING_COMMIT_POLICY: "balanced",
          OPENVIKING_IDLE_COMMIT_SECONDS: "3", // the Stop's idle watch ends with the step, not 300 s later
          OPENVIKING_CAPTURE_WAIT_MS: "0",
          OPENVIKING_TIMEOUT_MS: "20000",
        });
        const stdin = (name: string) =>
          JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: dir.path });
        const j = new JournalBuilder().simpleTurn(
          "which port does staging use?",
          "staging listens on 6543",
        );
        await placeJournal(dir.path, SESSION, j.toString());
        await hookIn("stop", { env, stdin: stdin("Stop") });
        const meta = async () =>
          obj((await call(server, "GET", `/api/v1/sessions/kc-${SESSION}`)).json.result);
        const after = await meta();
        assertEquals(after.commit_count, 0, "a short turn is not committed yet");
        await hookIn("session-end", { env, stdin: stdin("SessionEnd") });
        assertEquals((await meta()).commit_count, 1);
      },
    );

    for (const install of installs) {
      const version = install.version;
      const mode: Mode = "config";
      const tag = `e2e_${version.replaceAll(".", "_")}_${crypto.randomUUID().slice(0, 8)}`;
      const teacher = await realRig(install, mode, server, `${tag}_recall`);
      const capture = await realRig(install, mode, server, `${tag}_capture`);
      await using _teacherRig = teacher.rig;
      await using _captureRig = capture.rig;
      const taught = await teacher.rig.print(FACT);

      await t.step(
        `kimi ${version} (${mode}) 2: plain, tool and subagent turns land in the real session, commits accepted`,
        async () => {
          const { rig, api } = capture;
          const prompts = [
            "first: RUN_TOOL please",
            "second: RUN_AGENT now",
            "third: a plain turn for the real server",
          ];
          const answers = [
            TOOL_TURN_ANSWER,
            "The subagent has finished.",
            `ACK: ${prompts[2]}`,
          ];
          let sessionId: string | undefined;
          const expected: Msg[] = [];
          for (const [i, prompt] of prompts.entries()) {
            const run = await rig.print(prompt, { sessionId });
            sessionId = run.sessionId!;
            expected.push([String(i), "user", prompt], [String(i), "assistant", answers[i]]);
            await expectRealSession(api, `kc-${sessionId}`, expected);
          }
          const tasks = await expectCommits(api, `kc-${sessionId}`, 3);
          for (const task of tasks) assertEquals(task.task_type, "session_commit");
          for (const [, , text] of expected) assertEquals(leaks(text), []);
        },
      );

      await t.step(
        `kimi ${version} (${mode}) 8: the default policy: a kimi -p turn (no SessionEnd) is committed by the idle watch`,
        async () => {
          const idle = await realRig(install, mode, server, `${tag}_idle`, {
            OPENVIKING_COMMIT_POLICY: KNOBS.commitPolicy.default,
            OPENVIKING_IDLE_COMMIT_SECONDS: "2",
          });
          await using _idleRig = idle.rig;
          const said = "Our staging database is called pluto-db and lives in Frankfurt.";
          const run = await idle.rig.print(said);
          const sid = `kc-${run.sessionId}`;
          await expectRealSession(idle.api, sid, [["0", "user", said], ["0", "assistant", `ACK: ${said}`]]);
          const [task] = await expectCommits(idle.api, sid, 1);
          // The Stop left the short turn uncommitted; the commit is the watch's, after Kimi had exited.
          const st = JSON.parse(
            (await idle.rig.cli(["status", "--json", "--session", String(run.sessionId)])).stdout,
          );
          const commits = arr(arr(obj(st).sessions)[0]?.commits);
          assertEquals(commits.map((c) => [c.outcome, c.taskId]), [["committed", task.task_id ?? task.id]]);
          const captures = await Deno.readTextFile(
            `${idle.rig.ovHome}/ledger/kimicode/${run.sessionId}.jsonl`,
          );
          const events = captures.trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
            e.kind === "capture"
          );
          assertEquals(events.map((e) => [e.event, e.commit]), [["stop", "none"], ["idle", "committed"]]);
        },
      );

      await t.step(
        `kimi ${version} (${mode}) 1+6: a new session recalls what an earlier one taught; our MCP search answers from /mcp`,
        async () => {
          const { rig, api, space } = teacher;
          await expectRealSession(api, `kc-${taught.sessionId}`, [["0", "user", FACT], [
            "0",
            "assistant",
            `ACK: ${FACT}`,
          ]]);
          await expectCommits(api, `kc-${taught.sessionId}`, 1);
          const extracted = async () => {
            const r = await api.call("POST", "/api/v1/search/find", {
              query: "tabs spaces TypeScript",
              target_uri: "viking://~/memories",
            });
            return arr(obj(r.json.result).memories).find((m) =>
              String(m.abstract).includes("tabs over spaces")
            );
          };
          const tasks = () => api.commitTasks(`kc-${taught.sessionId}`);
          const memory = await waitUntil(extracted, 90_000, "the extracted memory", 100, tasks);
          assertMatch(String(memory.uri), new RegExp(`^viking://user/${space}/memories/preferences/`));
          const completed = async () => {
            const st = await rig.cli(["status", "--json", "--session", String(taught.sessionId)]);
            const session = arr(obj(JSON.parse(st.stdout)).sessions)[0];
            return arr(session?.commits).find((c) => obj(c.task).status === "completed");
          };
          const done = await waitUntil(completed, 60_000, "status naming the memory the commit made");
          assertEquals(obj(done.task).memories, [memory.uri]);
          const question = "tabs or spaces for TypeScript indentation?";
          const searched = async () => {
            const body = { query: question, mode: "context", purpose: "coding", score_threshold: 0.35 };
            const r = await api.call("POST", "/api/v1/search/search", body);
            return arr(obj(r.json.result).entries).some((e) => e.uri === memory.uri);
          };
          await waitUntil(searched, 60_000, "the memory in the server's context search");

          const before = rig.model.chatRequests().length;
          const r = await rig.print(question);
          const state = JSON.parse(
            await Deno.readTextFile(`${rig.ovHome}/hook-state/kimicode/${r.sessionId}.prompt.json`),
          ) as {
            recall?: { source: string; memories: { uri: string; text: string }[] };
            injectedUris: string[];
          };
          assertEquals(state.recall?.source, "context");
          const kept = state.recall?.memories.find((m) => m.uri === memory.uri);
          assertStringIncludes(kept?.text ?? "", "tabs over spaces");
          assertTrue(state.injectedUris.includes(String(memory.uri)), "the session remembers it was shown");
          const msgs = rig.model.chatRequests().slice(before)[0].body.messages;
          const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === question);
          const injected = messageText(msgs[at - 1]);
          assertMatch(injected, /^<hook_result hook_event="UserPromptSubmit">\n<openviking-context>\n/);
          assertMatch(injected, new RegExp(`\n- [^\n]*tabs over spaces[^\n]* \\(${memory.uri}\\)\n`));
          assertTrue(!injected.includes("&lt;memory"), "no server markup in the digest");

          const prefix = MCP_PREFIX[mode];
          const served = arr((await api.mcp("tools/list", {})).tools).map((x) => String(x.name)).sort();
          assertEquals(served.length, 24);
          const serverText = async () =>
            arr((await api.mcp("tools/call", { name: "search", arguments: MCP_ARGS })).content)
              .map((c) => String(c.text ?? "")).join("\n");
          const beforeCall = await serverText();
          const from = rig.model.chatRequests().length;
          await rig.print("CALL_MCP please search my memory", { sessionId: r.sessionId });
          const afterCall = await serverText();
          const reqs = rig.model.chatRequests().slice(from);
          const ours = reqs[0].toolNames.filter((n) => n.startsWith(prefix)).map((n) =>
            n.slice(prefix.length)
          );
          assertEquals(ours.sort(), served.filter((n) => (MEMORY_TOOLS as readonly string[]).includes(n)));
          const got = toolText(reqs.find((q) => q.hasToolResult)?.lastToolOutput);
          assertTrue(
            got === beforeCall || got === afterCall,
            `tool output ${got}\nserver said ${beforeCall}`,
          );
          assertStringIncludes(got, String(memory.uri));

          const all = reqs.at(-1)!.body.messages.filter(isHookResult).map(messageText);
          assertEquals(all.filter((x) => x.includes(`(${memory.uri})`)).length, 1);
          await expectRealSession(api, `kc-${r.sessionId}`, [
            ["0", "user", question],
            ["0", "assistant", `ACK: ${question}`],
            ["1", "user", "CALL_MCP please search my memory"],
            ["1", "assistant", "The memory search is done."],
          ]);
        },
      );
    }
  } finally {
    await server.stop();
  }
});

const PROJECT_PEER = "-work-proj";

/** One call of the server's API as the test's user (no actor peer), its `result`. */
async function api(server: RealOpenViking, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await call(server, method, path, body, NO_PEER);
  assertEquals(r.status, 200, r.text);
  return r.json.result;
}

const API_KEY_SESSION = "session_5ec0e7a1-0000-4000-8000-0000000000e2";
const readme = await Deno.readTextFile(`${ROOT}/README.md`);

/** The shell lines of the section's code block. */
function sectionCommands(): string[] {
  const start = readme.indexOf("### Server with API keys");
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assertTrue(block !== undefined, "README's section has a sh block");
  return block!.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
}

/** What a reply says, as far as a client looks: status, error code and words, the result's field names. */
async function shape(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json() as Record<string, unknown>;
  const error = json.error as Record<string, unknown> | null | undefined;
  const result = json.result;
  const fields = (v: unknown) => v && typeof v === "object" ? Object.keys(v).sort() : typeof v;
  return {
    status: res.status,
    code: error?.code,
    message: error?.message,
    result: Array.isArray(result) ? result.map(fields) : fields(result),
  };
}

Deno.test({
  name: 'real OpenViking (api_key mode): README "Server with API keys" word for word; user keys, 401/403 ' +
    "shapes, identity from the key",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await startRealOrSkip("real OpenViking probe (api_key)", "api_key");
  if (!server) return;
  const rss = await rssKiB(server.pid);
  log(
    `${server.mode} server ${server.url} openviking==${OPENVIKING_VERSION} ${server.startupMs} ms, RSS ${rss} KiB`,
  );
  await using dir = await tempDir();
  const root = server.rootApiKey!;
  const home = `${dir.path}/home`;
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  // every-turn: the Stop below leaves no idle watch running after the test.
  const env = isolatedEnv(home, { OPENVIKING_TIMEOUT_MS: "30000", OPENVIKING_COMMIT_POLICY: "every-turn" });
  const outputs: string[] = [];
  const cli = async (args: string[], stdin?: string) => {
    const r = await runCli(args, { env, clearEnv: true, cwd: dir.path, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  try {
    await t.step("memories: list, show with provenance, forget, export and import", async () => {
      await using dir = await tempDir();
      const started = performance.now();
      const key = { OPENVIKING_API_KEY: server.apiKey ?? "", OPENVIKING_PEER_ID: PROJECT_PEER };
      const env = sandboxEnv(dir.path, server.url, { ...UNHURRIED, ...key });
      const cli = (...args: string[]) => runCli(["memories", ...args], { env, clearEnv: true });
      const project = `viking://~/peers/${PROJECT_PEER}/memories/events/release.md`;
      await api(server, "POST", "/api/v1/content/write", {
        uri: project,
        content: "Released 2.0 on Friday.",
        mode: "create",
      });
      const fact = "Remember: I prefer tabs over spaces in Go code.";
      const task = await commitAndWait(server, "kc-session_r", fact, "t4");
      assertEquals(task.status, "completed", JSON.stringify(task));
      const ledger = `${dir.path}/.openviking/ledger/kimicode`;
      await Deno.mkdir(ledger, { recursive: true });
      const line = { kind: "capture", at: Date.now(), ms: 1, rejected: 0, event: "Stop", turns: 1, sent: 2 };
      Object.assign(line, { queued: 0, commit: "committed", taskId: task.task_id });
      await Deno.writeTextFile(`${ledger}/session_r.jsonl`, `${JSON.stringify(line)}\n`);

      const listed = await cli("--json");
      assertEquals(listed.code, 0, listed.stderr);
      const memories: { uri: string; scope: string; kind: string }[] = JSON.parse(listed.stdout).memories;
      const tabs = memories.find((m) => m.kind === "preferences" && m.scope === "user");
      assertTrue(tabs !== undefined, `the extracted preference is listed: ${listed.stdout}`);
      const release = memories.find((m) => m.scope === "project");
      const peers = `viking://user/${server.user}/peers`;
      assertEquals(release?.uri, `${peers}/${PROJECT_PEER}/memories/events/release.md`);
      const text = await cli();
      assertMatch(text.stdout, /memories: this project's and yours/);
      assertStringIncludes(text.stdout, "project: Released 2.0 on Friday.");

      const shown = await cli("show", tabs.uri);
      assertEquals(shown.code, 0, shown.stderr);
      assertStringIncludes(shown.stdout, "I prefer tabs over spaces in Go code.");
      assertStringIncludes(shown.stdout, "- added by commit archive_001 of Kimi session session_r");
      assertStringIncludes(shown.stdout, "turn id t4 (as `turns` lists it)");
      assertStringIncludes(shown.stdout, `task ${task.task_id}: our Stop capture`);

      const file = `${dir.path}/memories.ovpack`;
      const exported = await cli("export", file);
      assertEquals(exported.code, 0, exported.stderr);
      assertEquals(
        (await Deno.readFile(file)).subarray(0, 2).join(","),
        "80,75",
        "a zip: OpenViking's .ovpack",
      );

      assertEquals((await cli("forget", tabs.uri)).code, 0);
      const again = await cli("forget", tabs.uri);
      assertEquals(again.code, 3, again.stderr);
      assertEquals((await cli("show", tabs.uri)).code, 3);

      const imported = await cli("import", file, "--json");
      assertEquals(imported.code, 0, imported.stderr);
      const done = JSON.parse(imported.stdout);
      assertEquals(done.uri, `viking://user/${server.user}/memories`);
      assertTrue((await Deno.stat(done.backup)).size > 0, "what the import replaced is kept");
      const back = await api(server, "GET", `/api/v1/content/read?uri=${encodeURIComponent(tabs.uri)}`);
      assertStringIncludes(String(back), "I prefer tabs over spaces in Go code.");
      const forgot = await cli("forget", release!.uri, "--json");
      assertEquals(
        [forgot.code, JSON.parse(forgot.stdout).text],
        [0, "Released 2.0 on Friday."],
        forgot.stderr,
      );
      console.log(`  [real-openviking] memories test body: ${Math.round(performance.now() - started)} ms`);
    });

    await t.step("the section's command, with the root key on stdin", async () => {
      // Its dry run first: it asks the real server only what it would do, and plans the key's line.
      const dry = await cli(["install", "--dry-run", "--url", server.url, "--api-key-stdin"], `${root}\n`);
      assertEquals(dry.code, 0, dry.stdout + dry.stderr);
      assertMatch(dry.stdout, /install would make user default in account default and save that user's key/);
      assertMatch(
        dry.stdout,
        /set api_key \(not shown; from the admin API: user default in account default\)/,
      );
      const commands = sectionCommands();
      assertEquals(commands, ["deno task -q install --url http://127.0.0.1:1933 --api-key-stdin"]);
      for (const line of commands) {
        const sh = ["-c", line.replace("http://127.0.0.1:1933", server.url)];
        const r = await runProcess("sh", sh, { cwd: ROOT, env, clearEnv: true, stdin: `${root}\n` });
        outputs.push(r.stdout, r.stderr);
        assertEquals(r.code, 0, r.stdout + r.stderr);
        assertMatch(
          r.stdout,
          /install made user default in account default and saves that user's key instead/,
        );
      }
      const saved = JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`));
      assertEquals(saved.url, server.url);
      assertTrue(typeof saved.api_key === "string" && saved.api_key !== root, "a user key is saved");
    });

    await t.step("memory works with the saved key: recall, capture, status, doctor", async () => {
      await placeJournal(
        home,
        API_KEY_SESSION,
        new JournalBuilder().simpleTurn("I indent with tabs.", "Noted.").toString(),
      );
      const payload = (e: Record<string, unknown>) =>
        JSON.stringify({ session_id: API_KEY_SESSION, cwd: dir.path, ...e });
      await cli(["hook", "user-prompt-submit"], payload({ prompt: "how do I indent?" }));
      env.OPENVIKING_WRITE_PATH_ASYNC = "0";
      env.OPENVIKING_CAPTURE_WAIT_MS = "0";
      await cli(["hook", "stop"], payload({}));
      await cli(["hook", "session-end"], payload({}));
      const status = JSON.parse((await cli(["status", "--json", "--session", API_KEY_SESSION])).stdout);
      assertEquals([status.connection.reachable, status.connection.authenticated], [true, true]);
      assertEquals(status.connection.user, "default");
      const s = status.sessions[0];
      assertEquals(s.lastError, undefined, JSON.stringify(s.lastError));
      assertTrue(s.captures.sent > 0 && s.captures.queued === 0, JSON.stringify(s.captures));
      assertEquals(s.commits.at(-1)?.outcome, "committed");
      const doctor = JSON.parse((await cli(["doctor", "--json"])).stdout) as {
        checks: Record<string, string>[];
      };
      assertEquals(doctor.checks.find((c) => c.id === "auth")?.status, "ok");
    });

    await t.step(
      "again: the same user's key is reused; the root key is in no file and no output",
      async () => {
        const before = JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key;
        const again = await cli(["install", "--url", server.url, "--api-key-stdin"], `${root}\n`);
        assertEquals(again.code, 0, again.stderr);
        assertMatch(again.stdout, /install reused the key of user default in account default/);
        const dry = await cli(["install", "--dry-run", "--url", server.url, "--api-key-stdin"], `${root}\n`);
        assertMatch(dry.stdout, /install would reuse the key of user default in account default/);
        assertMatch(dry.stdout, /^Dry run: nothing to change/m);
        assertEquals(JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key, before);
        assertEquals(await filesContaining(home, root), []);
        for (const o of outputs) {
          assertTrue(!o.includes(root), `an output holds the root key: ${o.slice(0, 300)}`);
        }
      },
    );

    await t.step("the fake answers this flow as the real server does", async () => {
      await using fake = await FakeOpenViking.start({ rootKey: root });
      // deno-fmt-ignore: a table, a row a line
      const flow: [string, string, unknown?][] = [
        ["POST", "/api/v1/search/find", { query: "x", limit: 1 }],
        ["GET", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F&simple=true&node_limit=1"],
        ["GET", "/api/v1/system/status"],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts", { account_id: "parity", admin_user_id: "ann" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/parity/users", { user_id: "bob", role: "user" }],
        ["POST", "/api/v1/admin/accounts/nope/users", { user_id: "bob", role: "user" }],
        ["GET", "/api/v1/admin/accounts/parity/users?name=bob"],
        ["POST", "/api/v1/admin/accounts/parity/users/bob/key", {}],
      ];
      for (const [method, path, body] of flow) {
        const real = await shape(server.url, method, path, root, body);
        assertEquals(await shape(fake.url, method, path, root, body), real, `${method} ${path}`);
      }
      for (const path of ["/api/v1/system/status", "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2F"]) {
        const real = await shape(server.url, "GET", path, "wrong-key");
        assertEquals(await shape(fake.url, "GET", path, "wrong-key"), real, `a wrong key on ${path}`);
      }
      // A lone surrogate: the message is refused (capture sends U+FFFD instead, kimi/journal/clean.ts).
      await using user = await FakeOpenViking.start({ apiKey: server.apiKey });
      const message = { role: "user", content: "a \u{1F600} \ud800 b", turn_id: "0" };
      for (
        const [path, body] of [["messages", message], ["messages/batch", { messages: [message] }]] as const
      ) {
        const at = `/api/v1/sessions/kc-session_parity/${path}`;
        const real = await shape(server.url, "POST", at, server.apiKey!, body);
        assertEquals(real.status, 400, JSON.stringify(real));
        assertEquals(
          await shape(user.url, "POST", at, server.apiKey!, body),
          real,
          `a lone surrogate, ${path}`,
        );
      }
    });
    await t.step("/health: open without a key, identity with a user key", async () => {
      const anon = await fetch(`${server.url}/health`);
      const anonJson = await anon.json() as Json;
      assertEquals([anon.status, anonJson.auth_mode, "user_id" in anonJson], [200, "api_key", false]);
      const mine = await call(server, "GET", "/health");
      const who = [mine.status, mine.json.account_id, mine.json.user_id, mine.json.role];
      assertEquals(who, [200, server.account, server.user, "user"], mine.text);
    });

    await t.step("401/403 shapes: wrong key, missing key, MCP, root key; X-API-Key works too", async () => {
      const wrong = { Authorization: "Bearer wrong-key" };
      const sse = { ...wrong, Accept: "application/json, text/event-stream" };
      const invalid = "401 code=UNAUTHENTICATED verdict=auth message=Invalid API key";
      // deno-fmt-ignore: a table, a row a line
      await expectEdges(server, [
        ["/health, a wrong key", "GET", "/health", undefined, "401", { Authorization: "Bearer nope" }],
        ["a wrong key", "GET", "/api/v1/system/status", undefined, invalid, wrong],
        ["no key", "POST", "/api/v1/search/find", { query: "x" }, "401 message=Missing API Key when resolving identity.", { Authorization: "" }],
        ["the root key reads no tenant data", "POST", "/api/v1/search/find", { query: "x" }, "403 code=PERMISSION_DENIED", { Authorization: `Bearer ${root}` }],
        ["X-API-Key", "GET", "/api/v1/system/status", undefined, "200", { Authorization: "", "X-API-Key": server.apiKey! }],
      ]);
      const status = await call(server, "GET", "/api/v1/system/status", undefined, wrong);
      assertEquals([status.json.status, status.headers.get("www-authenticate")], ["error", null]);
      const m = await call(server, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }, sse);
      assertEquals([m.status, m.json], [401, {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32001, message: "Invalid API key" },
      }]);
    });

    await t.step("identity comes from the key; account/user headers are ignored", async () => {
      const who = { "X-OpenViking-Account": "someone-else", "X-OpenViking-User": "mallory" };
      const r = await call(server, "GET", "/api/v1/system/status", undefined, who);
      assertEquals([r.status, obj(r.json.result).user], [200, server.user], r.text);
    });

    await t.step("capture → commit → find under viking://~/memories and MCP: the key's user", async () => {
      const sessionId = `kc-session_${crypto.randomUUID()}`;
      const task = await commitAndWait(server, sessionId, "I always use pnpm instead of npm for monorepos");
      assertEquals(task.status, "completed", JSON.stringify(task));
      const meta = await call(server, "GET", `/api/v1/sessions/${sessionId}`);
      assertEquals(obj(obj(meta.json.result).user), { account_id: server.account, user_id: server.user });
      const find = () =>
        call(server, "POST", "/api/v1/search/find", {
          query: "pnpm monorepos",
          target_uri: "viking://~/memories",
        });
      const r = await eventually(find, (reply) => memoryHit(reply, "pnpm") !== undefined);
      assertEquals(r.status, 200, r.text);
      const hit = memoryHit(r, "pnpm");
      assertTrue(hit, r.text);
      const space = `viking://user/${server.user}/memories/`;
      assertMatch(String(hit.uri), new RegExp(`^${space}`));
      const params = { name: "search", arguments: { query: "pnpm monorepos", mode: "context" } };
      const search = () => mcp(server, { jsonrpc: "2.0", id: 1, method: "tools/call", params });
      const found = await eventually(search, (reply) => mcpText(reply).includes(space));
      assertEquals([found.status, obj(mcpMessages(found)[0].result).isError], [200, false], found.text);
      assertStringIncludes(mcpText(found), space);
    });
  } finally {
    await server.stop();
  }
});
