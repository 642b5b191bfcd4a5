/**
 * Probes the REAL OpenViking server (PyPI `openviking`, see tests/support/real-openviking.ts) with the
 * headers the plugin sends, pinning the behaviour of every endpoint the plugin uses.
 */

import { Entries, memoriesFromEntries, renderElement } from "../../memory/recall.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import {
  OPENVIKING_VERSION,
  type RealAuthMode,
  type RealOpenViking,
  rssKiB,
  startRealOrSkip,
} from "../support/real-openviking.ts";
import { USER_AGENT } from "../../lib/version.ts";
import { Budget, classifyReply, createClient } from "../../openviking/client.ts";
import { newestHeld } from "../../openviking/sessions.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../support/fake-mcp.ts";
import { startProxy, toolNames } from "../mcp/harness.ts";

import { FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { ROOT, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { isolatedEnv } from "../install/helpers.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const PEER = "-work-main";
const PROJECT_PEER = "-work-proj";
const TEST_OPTS = { sanitizeOps: false, sanitizeResources: false };

if (REAL === "0") console.log("SKIP real OpenViking probe: OPENVIKING_REAL=0");

type Json = Record<string, unknown>;

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Json;
}

function obj(value: unknown): Json {
  return value && typeof value === "object" && !Array.isArray(value) ? value as Json : {};
}

function arr(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(obj) : [];
}

/** One call of the server's API as the test's user, its `result`. */
async function api(s: RealOpenViking, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${s.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${s.apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const reply = await res.json();
  assertEquals(res.status, 200, JSON.stringify(reply));
  return reply.result;
}

/** The headers the plugin's HTTP client sends. */
function clientHeaders(server: RealOpenViking, json: boolean, key = server.apiKey): Headers {
  const h = new Headers({ "User-Agent": USER_AGENT, Accept: "application/json" });
  if (json) h.set("Content-Type", "application/json");
  if (key) h.set("Authorization", `Bearer ${key}`);
  h.set("X-OpenViking-Account", server.account ?? "default");
  h.set("X-OpenViking-User", server.user ?? "default");
  h.set("X-OpenViking-Actor-Peer", PEER);
  return h;
}

async function call(
  server: RealOpenViking,
  method: string,
  path: string,
  body?: unknown,
  tweak?: (h: Headers) => void,
): Promise<Reply> {
  const headers = clientHeaders(server, body !== undefined);
  tweak?.(headers);
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  let json: Json = {};
  try {
    json = obj(JSON.parse(text));
  } catch { /* ignored */ }
  return { status: res.status, headers: res.headers, text, json };
}

/** The JSON-RPC messages of an SSE (or plain JSON) MCP reply. */
function mcpMessages(reply: Reply): Json[] {
  if ((reply.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return reply.text.split("\n").filter((l) => l.startsWith("data:")).map((l) =>
      obj(JSON.parse(l.slice(5)))
    );
  }
  return [reply.json];
}

function mcp(
  server: RealOpenViking,
  body: Json,
  accept = "application/json, text/event-stream",
): Promise<Reply> {
  return call(server, "POST", "/mcp", body, (h) => {
    h.set("Accept", accept);
    h.set("MCP-Protocol-Version", "2025-06-18");
  });
}

function log(line: string): void {
  console.log(`  [real-openviking] ${line}`);
}

async function startOrSkip(auth: RealAuthMode): Promise<RealOpenViking | undefined> {
  const server = await startRealOrSkip(`real OpenViking probe (${auth})`, { auth });
  const rss = server?.pid ? await rssKiB(server.pid) : undefined;
  if (server) {
    log(
      `${server.mode} server ${server.url} openviking==${OPENVIKING_VERSION} ${server.startupMs} ms, RSS ${rss} KiB`,
    );
  }
  return server;
}

/**
 * What the server derives after a commit task completes (the memory's index entry, its search and recall
 * hits) lands a moment later, later still on a loaded machine: calls `read` until `ready` accepts a reply (at
 * most `timeoutMs`) and returns that reply — or the last one, for the caller's assertions to explain.
 */
async function eventually(
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
const mcpText = (r: Reply): string => String(arr(obj(mcpMessages(r)[0]?.result).content)[0]?.text ?? "");

/** A search result's memories. */
const memoriesOf = (r: Reply): Json[] => arr(obj(r.json.result).memories);

/** A real memory file (not a directory's `.overview.md` / `.abstract.md`) whose abstract has `text`. */
function memoryHit(r: Reply, text: string): Json | undefined {
  return memoriesOf(r).find((m) =>
    String(m.uri).endsWith(".md") && !String(m.uri).includes("/.") && String(m.abstract).includes(text)
  );
}

async function waitTask(server: RealOpenViking, taskId: string, timeoutMs = 90_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(server, "GET", `/api/v1/tasks/${taskId}`);
    assertEquals(r.status, 200, r.text);
    const task = obj(r.json.result);
    if (task.status === "completed" || task.status === "failed") return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} not done: ${r.text}`);
    await new Promise((res) => setTimeout(res, 500));
  }
}

/** Adds a turn, commits, and waits for the extraction; returns the completed task. */
async function captureAndCommit(server: RealOpenViking, sessionId: string, fact: string): Promise<Json> {
  const batch = await call(server, "POST", `/api/v1/sessions/${sessionId}/messages/batch`, {
    messages: [
      { role: "user", content: fact, turn_id: "0" },
      { role: "assistant", content: "Noted.", turn_id: "0" },
    ],
  });
  assertEquals(batch.status, 200, batch.text);
  const commit = await call(server, "POST", `/api/v1/sessions/${sessionId}/commit`, {});
  assertEquals(commit.status, 200, commit.text);
  const result = obj(commit.json.result);
  assertEquals(result.status, "accepted");
  const started = performance.now();
  const task = await waitTask(server, String(result.task_id));
  log(`commit task ${task.status} after ${Math.round(performance.now() - started)} ms`);
  return task;
}

Deno.test({
  name: "real OpenViking (dev mode): every endpoint the plugin uses",
  ignore: REAL === "0",
  ...TEST_OPTS,
}, async (t) => {
  const server = await startOrSkip("dev");
  if (!server) return;
  const ours = server.stub !== undefined;
  const sessionId = `kc-session_${crypto.randomUUID()}`;
  try {
    await t.step("GET /health: no auth needed, reports version and auth mode", async () => {
      const r = await call(server, "GET", "/health");
      assertEquals(r.status, 200, r.text);
      assertEquals(r.json.status, "ok");
      assertEquals(r.json.healthy, true);
      if (ours) {
        assertEquals(r.json.version, OPENVIKING_VERSION);
        assertEquals(r.json.auth_mode, "dev");
      }
      assertTrue(r.headers.get("x-request-id"), "x-request-id header");
    });

    await t.step("GET /api/v1/system/status: {initialized, user}", async () => {
      const r = await call(server, "GET", "/api/v1/system/status");
      assertEquals(r.status, 200, r.text);
      assertEquals(r.json.status, "ok");
      const result = obj(r.json.result);
      assertEquals(result.initialized, true);
      assertEquals(typeof result.user, "string");
      assertEquals("error" in r.json && r.json.error === null, true);
    });

    await t.step("POST …/messages/batch auto-creates the kc-session_<uuid> session", async () => {
      const r = await call(server, "POST", `/api/v1/sessions/${sessionId}/messages/batch`, {
        messages: [
          { role: "user", content: "I prefer tabs over spaces in TypeScript projects", turn_id: "0" },
          { role: "assistant", content: "Noted: tabs for indentation.", turn_id: "0" },
        ],
      });
      assertEquals(r.status, 200, r.text);
      const result = obj(r.json.result);
      assertEquals(result.session_id, sessionId);
      assertEquals(result.message_count, 2);
      assertEquals(result.added, 2);
      assertEquals(typeof result.pending_tokens, "number");
    });

    await t.step("POST …/messages (single) appends, no `added` key", async () => {
      const r = await call(server, "POST", `/api/v1/sessions/${sessionId}/messages`, {
        role: "user",
        content: "Deno is my favourite runtime",
        turn_id: "1",
      });
      assertEquals(r.status, 200, r.text);
      const result = obj(r.json.result);
      assertEquals(result.session_id, sessionId);
      assertEquals(result.message_count, 3);
      assertEquals("added" in result, false);
    });

    await t.step("GET /api/v1/sessions/{id} and …/context read the session back", async () => {
      const meta = await call(server, "GET", `/api/v1/sessions/${sessionId}`);
      assertEquals(meta.status, 200, meta.text);
      const m = obj(meta.json.result);
      assertEquals(m.session_id, sessionId);
      assertEquals(m.message_count, 3);
      assertEquals(m.commit_count, 0);
      assertMatch(String(m.uri), /^viking:\/\/user\/[^/]+\/sessions\/kc-session_/);
      const ctx = await call(server, "GET", `/api/v1/sessions/${sessionId}/context`);
      assertEquals(ctx.status, 200, ctx.text);
      const messages = arr(obj(ctx.json.result).messages);
      assertEquals(messages.map((x) => [x.role, x.turn_id]), [["user", "0"], ["assistant", "0"], [
        "user",
        "1",
      ]]);
      const firstPart = arr(messages[0].parts)[0];
      assertEquals(firstPart.type, "text");
      assertEquals(firstPart.text, "I prefer tabs over spaces in TypeScript projects");
      assertMatch(String(messages[0].id), /^msg_/);
      const missing = await call(server, "GET", `/api/v1/sessions/kc-missing-${crypto.randomUUID()}`);
      assertEquals(missing.status, 404, missing.text);
      assertEquals(obj(missing.json.error).code, "NOT_FOUND");
    });

    await t.step("POST …/commit {} is accepted with a task id; extraction completes", async () => {
      const r = await call(server, "POST", `/api/v1/sessions/${sessionId}/commit`, {});
      assertEquals(r.status, 200, r.text);
      const result = obj(r.json.result);
      assertEquals(result.session_id, sessionId);
      assertEquals(result.status, "accepted");
      assertEquals(result.archived, true);
      assertMatch(String(result.task_id), /^[0-9a-f-]{36}$/);
      assertMatch(String(result.archive_uri), /\/history\/archive_001$/);
      const started = performance.now();
      const task = await waitTask(server, String(result.task_id));
      log(`commit task ${task.status} after ${Math.round(performance.now() - started)} ms`);
      assertEquals(task.task_type, "session_commit");
      if (ours) {
        assertEquals(task.status, "completed", JSON.stringify(task));
        assertEquals(obj(obj(task.result).memories_extracted).memory_write, 1);
        assertTrue(
          server.stub!.requests.some((q) => q.kind === "memory"),
          "extraction prompt reached the stub",
        );
      }
    });

    await t.step(
      "what a damaged capture state is recovered from (runtime/held.ts): the newest message held, archived",
      async () => {
        const client = createClient({
          baseUrl: server.url,
          apiKey: server.apiKey,
          account: server.account,
          user: server.user,
          userAgent: USER_AGENT,
          timeoutMs: 30_000,
        });
        const budget = new Budget(60_000);
        const meta = obj((await call(server, "GET", `/api/v1/sessions/${sessionId}`)).json.result);
        assertEquals(meta.commit_count, 1);
        const archive = await call(server, "GET", `/api/v1/sessions/${sessionId}/archives/archive_001`);
        if (ours) {
          assertEquals(archive.status, 200, archive.text);
          assertEquals(arr(obj(archive.json.result).messages).map((x) => [x.role, x.turn_id]), [
            ["user", "0"],
            ["assistant", "0"],
            ["user", "1"],
          ]);
        }
        assertEquals(await newestHeld(client, sessionId, budget), {
          role: "user",
          turnId: "1",
          text: "Deno is my favourite runtime",
        });
        const unknown = `kc-none-${crypto.randomUUID()}`;
        assertEquals(await newestHeld(client, unknown, budget), null, "an unknown session");
        const none = await call(server, "GET", `/api/v1/sessions/${sessionId}/archives/archive_009`);
        assertEquals(none.status, 404, "an archive that is not there (or not complete) is a 404");
      },
    );

    await t.step("commit again: skipped/no_messages; unknown session: 404", async () => {
      const again = await call(server, "POST", `/api/v1/sessions/${sessionId}/commit`, {});
      assertEquals(again.status, 200, again.text);
      const result = obj(again.json.result);
      assertEquals([result.status, result.reason, result.task_id, result.archived], [
        "skipped",
        "no_messages",
        null,
        false,
      ]);
      const none = await call(server, "POST", `/api/v1/sessions/kc-none-${crypto.randomUUID()}/commit`, {});
      assertEquals(none.status, 404, none.text);
      assertEquals(obj(none.json.error).code, "NOT_FOUND");
    });

    let memoryUri = "";
    await t.step("POST /api/v1/search/find under viking://~/memories", async () => {
      const r = await eventually(
        () =>
          call(server, "POST", "/api/v1/search/find", {
            query: "tabs spaces TypeScript",
            target_uri: "viking://~/memories",
            limit: 5,
          }),
        (reply) => !ours || memoryHit(reply, "tabs over spaces") !== undefined,
      );
      assertEquals(r.status, 200, r.text);
      const result = obj(r.json.result);
      assertEquals(Object.keys(result).sort(), ["memories", "resources", "skills", "total"]);
      const memories = arr(result.memories);
      for (const m of memories) {
        assertEquals(m.context_type, "memory");
        assertMatch(String(m.uri), /^viking:\/\/user\/[^/]+\/memories\//);
        assertEquals(typeof m.score, "number");
        assertEquals(typeof m.abstract, "string");
        assertTrue(Array.isArray(m.tags));
      }
      if (ours) {
        const hit = memoryHit(r, "tabs over spaces");
        assertTrue(hit, r.text);
        assertStringIncludes(String(hit.abstract), "tabs over spaces");
        memoryUri = String(hit.uri);
      }
    });

    await t.step("POST /api/v1/search/search mode=context (the recall body)", async () => {
      const r = await eventually(
        () =>
          call(server, "POST", "/api/v1/search/search", {
            query: "tabs or spaces for TypeScript indentation?",
            mode: "context",
            purpose: "coding",
            score_threshold: 0.35,
            session_id: sessionId,
            dedup_turns: 5,
          }),
        (reply) =>
          !ours ||
          arr(obj(reply.json.result).entries).some((e) => String(e.text).includes("tabs over spaces")),
      );
      assertEquals(r.status, 200, r.text);
      const result = obj(r.json.result);
      assertEquals(Object.keys(result).sort(), ["digest", "entries", "rendered", "stats"]);
      const stats = obj(result.stats);
      assertEquals(stats.purpose, "coding");
      assertEquals(stats.score_threshold, 0.35);
      assertEquals(obj(stats.dedup).turns, 5);
      for (const e of arr(result.entries)) {
        assertEquals(Object.keys(e).sort(), ["category", "detail", "origin", "score", "text", "uri"]);
      }
      if (ours) {
        assertTrue(arr(result.entries).some((e) => String(e.text).includes("tabs over spaces")), r.text);
        assertStringIncludes(String(result.rendered), '<memory uri="viking://user/');
      }
      assertEquals(
        memoriesFromEntries(Entries.parse(result.entries)).map(renderElement).join("\n"),
        String(result.rendered),
      );
    });

    await t.step(
      "POST /api/v1/search/recall (deprecated alias) — same session dedups what search returned",
      async () => {
        const r = await call(server, "POST", "/api/v1/search/recall", {
          query: "tabs or spaces for TypeScript indentation?",
          session_id: sessionId,
        });
        assertEquals(r.status, 200, r.text);
        assertEquals(r.headers.get("deprecation"), "true");
        assertEquals(r.headers.get("link"), '</api/v1/search/search>; rel="successor-version"');
        const result = obj(r.json.result);
        assertEquals(obj(obj(result.stats).deprecated).successor, "/api/v1/search/search");
        assertTrue(Array.isArray(result.entries));
        assertEquals(obj(result.stats).purpose, "coding");
        if (ours) assertEquals(obj(obj(result.stats).dedup).status, "ok");
        const fresh = await eventually(
          () =>
            call(server, "POST", "/api/v1/search/recall", {
              query: "tabs or spaces for TypeScript indentation?",
            }),
          (reply) => !ours || arr(obj(reply.json.result).entries).length > 0,
        );
        assertEquals(fresh.status, 200, fresh.text);
        if (ours) assertTrue(arr(obj(fresh.json.result).entries).length > 0, fresh.text);
      },
    );

    await t.step("GET /api/v1/fs/ls?uri=viking://user&output=original", async () => {
      const r = await call(server, "GET", "/api/v1/fs/ls?uri=viking://user&output=original");
      assertEquals(r.status, 200, r.text);
      assertEquals(r.json.has_more, false);
      const entries = arr(r.json.result);
      assertTrue(entries.length > 0, r.text);
      for (const e of entries) {
        assertEquals(typeof e.name, "string");
        assertEquals(typeof e.isDir, "boolean");
        assertMatch(String(e.uri), /^viking:\/\/user\//);
      }
      const mine = await call(server, "GET", "/api/v1/fs/ls?uri=viking://~/memories&output=original");
      assertEquals(mine.status, 200, mine.text);
      assertTrue(arr(mine.json.result).every((e) => String(e.uri).startsWith("viking://user/")));
    });

    await t.step("GET /api/v1/content/read returns the file text as `result`", async () => {
      if (!memoryUri) return;
      const r = await call(server, "GET", `/api/v1/content/read?uri=${encodeURIComponent(memoryUri)}`);
      assertEquals(r.status, 200, r.text);
      assertEquals(typeof r.json.result, "string");
      assertStringIncludes(String(r.json.result), "tabs over spaces");
      const missing = await call(
        server,
        "GET",
        `/api/v1/content/read?uri=${encodeURIComponent(memoryUri)}.nope`,
      );
      assertEquals(missing.status, 404, missing.text);
      assertEquals(obj(missing.json.error).code, "NOT_FOUND");
    });

    await t.step(
      "the profile is the user's, not the workspace's: the same bytes under two actor peers",
      async () => {
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
        const seen = await Promise.all(["repo-a", "repo-b"].map(async (peer) => [
          (await call(
            server,
            "GET",
            `/api/v1/content/read?uri=${encodeURIComponent(`${base}/profile.md`)}`,
            undefined,
            as(peer),
          )).text,
          (await call(
            server,
            "GET",
            `/api/v1/fs/ls?uri=${encodeURIComponent(`${base}/preferences`)}&output=agent&recursive=true`,
            undefined,
            as(peer),
          )).text,
        ]));
        assertStringIncludes(seen[0][0], "Name: Probe User");
        assertEquals(seen[1], seen[0]);
      },
    );

    await t.step("/mcp through the proxy: the model is offered the tools memory needs", async () => {
      const home = await Deno.makeTempDir({ prefix: "ovk-probe-mcp-" });
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
      try {
        const all = await listed({ OPENVIKING_MCP_TOOLS: "all" });
        const offered = await listed({});
        assertEquals(all.names, OPENVIKING_TOOLS);
        assertEquals(offered.names, OFFERED_TOOLS);
        log(
          `tools/list the model gets: ${all.names.length} tools, ${all.bytes} bytes (all) → ` +
            `${offered.names.length} tools, ${offered.bytes} bytes (default)`,
        );
      } finally {
        await Deno.remove(home, { recursive: true });
      }
    });

    await t.step("/mcp: stateless streamable HTTP, SSE replies, no Mcp-Session-Id", async () => {
      const init = await mcp(server, {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "probe", version: "0" },
        },
      });
      assertEquals(init.status, 200, init.text);
      assertStringIncludes(init.headers.get("content-type") ?? "", "text/event-stream");
      assertEquals(init.headers.get("mcp-session-id"), null);
      const initResult = obj(mcpMessages(init)[0].result);
      assertEquals(initResult.protocolVersion, "2025-06-18");
      assertEquals(obj(initResult.serverInfo).name, "openviking");
      const note = await mcp(server, { jsonrpc: "2.0", method: "notifications/initialized" });
      assertEquals(note.status, 202, note.text);
      const list = await mcp(server, { jsonrpc: "2.0", id: 2, method: "tools/list" });
      assertEquals(list.status, 200, list.text);
      const tools = arr(obj(mcpMessages(list)[0].result).tools).map((x) => String(x.name));
      log(`MCP tools (${tools.length}): ${tools.join(", ")}`);
      for (const name of ["find", "search", "read", "list", "remember", "health"]) {
        assertTrue(tools.includes(name), `tool ${name}`);
      }
      assertEquals(
        tools,
        OPENVIKING_TOOLS,
        "the fake's tool list (tests/support/fake-mcp.ts) is the real one",
      );
      const found = await eventually(
        () =>
          mcp(server, {
            jsonrpc: "2.0",
            id: 3,
            method: "tools/call",
            params: {
              name: "find",
              arguments: { query: "tabs TypeScript", target_uri: "viking://~/memories" },
            },
          }),
        (reply) => !memoryUri || mcpText(reply).includes(memoryUri),
      );
      assertEquals(found.status, 200, found.text);
      const callResult = obj(mcpMessages(found)[0].result);
      assertEquals(callResult.isError, false);
      const content = arr(callResult.content);
      assertEquals(content[0].type, "text");
      assertEquals(typeof obj(callResult.structuredContent).result, "string");
      if (memoryUri) assertStringIncludes(String(content[0].text), memoryUri);
      const jsonOnly = await mcp(server, { jsonrpc: "2.0", id: 4, method: "tools/list" }, "application/json");
      assertEquals(jsonOnly.status, 406, jsonOnly.text);
      assertEquals(obj(jsonOnly.json.error).code, -32600);
      const del = await call(server, "DELETE", "/mcp");
      assertEquals(del.status, 405, del.text);
    });

    await t.step(
      "unknown body fields: 400 on search routes, silently accepted on session routes",
      async () => {
        const find = await call(server, "POST", "/api/v1/search/find", { query: "x", bogus: 1 });
        assertEquals(find.status, 400, find.text);
        const error = obj(find.json.error);
        assertEquals(error.code, "INVALID_ARGUMENT");
        assertEquals(arr(obj(error.details).validation_errors)[0].type, "extra_forbidden");
        const search = await call(server, "POST", "/api/v1/search/search", {
          query: "x",
          mode: "context",
          bogus: 1,
        });
        assertEquals(search.status, 400, search.text);
        const batch = await call(
          server,
          "POST",
          `/api/v1/sessions/kc-extra-${crypto.randomUUID()}/messages/batch`,
          {
            messages: [{ role: "user", content: "x", turn_id: "0", bogus: 1 }],
            bogus: 1,
          },
        );
        assertEquals(batch.status, 200, batch.text);
        const commit = await call(server, "POST", `/api/v1/sessions/${sessionId}/commit`, { bogus: 1 });
        assertEquals(commit.status, 200, commit.text);
      },
    );

    await t.step(
      "what the server refuses gets the verdict of ARCHITECTURE decision 15 (reply.ts)",
      async () => {
        const verdict = (r: Reply) => {
          const c = classifyReply({ status: r.status, text: r.text, origin: server.url });
          return c.ok ? "ok" : c.kind;
        };
        const fresh = `kc-refused-${crypto.randomUUID()}`;
        const bad = await call(server, "POST", `/api/v1/sessions/${fresh}/messages`, {
          role: "user",
          content: "x",
          turn_id: 7,
        });
        assertEquals([bad.status, obj(bad.json.error).code, verdict(bad)], [
          400,
          "INVALID_ARGUMENT",
          "rejected",
        ]);
        const none = await call(server, "POST", `/api/v1/sessions/${fresh}/commit`, {});
        assertEquals([none.status, obj(none.json.error).code, verdict(none)], [404, "NOT_FOUND", "rejected"]);
        const route = await call(server, "POST", `/api/v1/sessions/${fresh}/no-such-route`, {});
        assertTrue([404, 405].includes(route.status), route.text);
        assertEquals(verdict(route), "missing-route", route.text);
      },
    );

    await t.step("session id characters and the actor-peer header", async () => {
      const add = (id: string) =>
        call(server, "POST", `/api/v1/sessions/${id}/messages`, { role: "user", content: "x", turn_id: "0" });
      for (const ok of ["kc-a.b@c:d+e~f=g!h", "KC-Upper_case", "kc-%E4%B8%AD", "kc-" + "y".repeat(300)]) {
        const r = await add(ok);
        assertEquals(r.status, 200, `${ok}: ${r.text}`);
        assertEquals(obj(r.json.result).session_id, decodeURIComponent(ok));
      }
      assertEquals((await add("kc-a%2Fb")).status, 404);
      const backslash = await add("kc-a%5Cb");
      assertEquals(backslash.status, 403, backslash.text);
      assertEquals(obj(backslash.json.error).code, "PERMISSION_DENIED");
      const badPeer = await call(server, "POST", "/api/v1/search/find", { query: "x" }, (h) => {
        h.set("X-OpenViking-Actor-Peer", "a/b");
      });
      assertEquals(badPeer.status, 400, badPeer.text);
      assertEquals(obj(badPeer.json.error).code, "INVALID_ARGUMENT");
      const peerOnSession = await call(server, "POST", `/api/v1/sessions/${sessionId}/messages`, {
        role: "user",
        content: "x",
      }, (h) => h.set("X-OpenViking-Actor-Peer", "a/b"));
      assertEquals(peerOnSession.status, 200, "session routes ignore the actor-peer header");
    });

    await t.step("validation edges the client must respect", async () => {
      const id = `kc-edge-${crypto.randomUUID()}`;
      const many = Array.from(
        { length: 101 },
        (_, i) => ({ role: "user", content: `m${i}`, turn_id: String(i) }),
      );
      const tooMany = await call(server, "POST", `/api/v1/sessions/${id}/messages/batch`, { messages: many });
      assertEquals(tooMany.status, 400, tooMany.text);
      assertEquals(arr(obj(obj(tooMany.json.error).details).validation_errors)[0].type, "too_long");
      const numericTurn = await call(server, "POST", `/api/v1/sessions/${id}/messages`, {
        role: "user",
        content: "x",
        turn_id: 5,
      });
      assertEquals(numericTurn.status, 400, "turn_id must be a string");
      const noContent = await call(server, "POST", `/api/v1/sessions/${id}/messages`, { role: "user" });
      assertEquals(noContent.status, 400, noContent.text);
      const listWithPurpose = await call(server, "POST", "/api/v1/search/search", {
        query: "x",
        mode: "list",
        purpose: "coding",
      });
      assertEquals(listWithPurpose.status, 400, listWithPurpose.text);
      const contextWithTarget = await call(server, "POST", "/api/v1/search/search", {
        query: "x",
        mode: "context",
        target_uri: "viking://~/memories",
      });
      assertEquals(contextWithTarget.status, 400, contextWithTarget.text);
      const recallWithMode = await call(server, "POST", "/api/v1/search/recall", {
        query: "x",
        mode: "context",
      });
      assertEquals(recallWithMode.status, 400, "recall forbids `mode`");
    });

    if (server.mode === "dev") {
      await t.step("dev mode takes the identity from X-OpenViking-Account/User", async () => {
        const r = await call(server, "GET", "/api/v1/system/status", undefined, (h) => {
          h.set("X-OpenViking-Account", "acme");
          h.set("X-OpenViking-User", "alice");
        });
        assertEquals(r.status, 200, r.text);
        assertEquals(obj(r.json.result).user, "alice");
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

    if (ours && server.pid) log(`RSS after probe: ${await rssKiB(server.pid)} KiB`);
  } finally {
    await server.stop();
  }
});

const SESSION = "session_5ec0e7a1-0000-4000-8000-0000000000e2";
const readme = await Deno.readTextFile(`${ROOT}/README.md`);

/** The shell lines of the section's code block. */
function sectionCommands(): string[] {
  const start = readme.indexOf("### Server with API keys");
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assertTrue(block !== undefined, "README's section has a sh block");
  return block!.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
}

/** Every file under `dir` whose text holds `secret`. */
async function filesHolding(dir: string, secret: string): Promise<string[]> {
  const found: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) found.push(...await filesHolding(path, secret));
    else if (e.isFile && (await Deno.readTextFile(path).catch(() => "")).includes(secret)) found.push(path);
  }
  return found;
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
  ignore: REAL === "0" || Deno.env.get("OPENVIKING_E2E_URL") !== undefined,
  ...TEST_OPTS,
}, async (t) => {
  const server = await startOrSkip("api_key");
  if (!server) return;
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
      const env = {
        HOME: dir.path,
        OPENVIKING_URL: server.url,
        OPENVIKING_API_KEY: server.apiKey ?? "",
        OPENVIKING_PEER_ID: PROJECT_PEER,
        PATH: Deno.env.get("PATH") ?? "/usr/bin",
      };
      const cli = (...args: string[]) => runCli(["memories", ...args], { env, clearEnv: true });
      const project = `viking://~/peers/${PROJECT_PEER}/memories/events/release.md`;
      await api(server, "POST", "/api/v1/content/write", {
        uri: project,
        content: "Released 2.0 on Friday.",
        mode: "create",
      });
      const sid = "kc-session_r";
      await api(server, "POST", `/api/v1/sessions/${sid}/messages/batch`, {
        messages: [
          { role: "user", content: "Remember: I prefer tabs over spaces in Go code.", turn_id: "t4" },
          { role: "assistant", content: "Noted.", turn_id: "t4" },
        ],
      });
      const commit = await api(server, "POST", `/api/v1/sessions/${sid}/commit`, {}) as { task_id: string };
      const ledger = `${dir.path}/.openviking/ledger/kimicode`;
      await Deno.mkdir(ledger, { recursive: true });
      const capture = {
        kind: "capture",
        at: Date.now(),
        ms: 1,
        rejected: 0,
        event: "Stop",
        turns: 1,
        sent: 2,
        queued: 0,
        commit: "committed",
        taskId: commit.task_id,
      };
      await Deno.writeTextFile(`${ledger}/session_r.jsonl`, `${JSON.stringify(capture)}\n`);
      const t0 = Date.now();
      for (;; await new Promise((r) => setTimeout(r, 300))) {
        const task = await api(server, "GET", `/api/v1/tasks/${commit.task_id}`) as { status: string };
        if (task.status === "completed") break;
        assertTrue(task.status !== "failed" && Date.now() - t0 < 60_000, `the commit's task: ${task.status}`);
      }

      const listed = await cli("--json");
      assertEquals(listed.code, 0, listed.stderr);
      const memories: { uri: string; scope: string; kind: string }[] = JSON.parse(listed.stdout).memories;
      const tabs = memories.find((m) => m.kind === "preferences" && m.scope === "user");
      assertTrue(tabs !== undefined, `the extracted preference is listed: ${listed.stdout}`);
      const release = memories.find((m) => m.scope === "project");
      assertEquals(
        release?.uri,
        `viking://user/${server.user}/peers/${PROJECT_PEER}/memories/events/release.md`,
      );
      const text = await cli();
      assertMatch(text.stdout, /memories: this project's and yours/);
      assertStringIncludes(text.stdout, "project: Released 2.0 on Friday.");

      const shown = await cli("show", tabs.uri);
      assertEquals(shown.code, 0, shown.stderr);
      assertStringIncludes(shown.stdout, "I prefer tabs over spaces in Go code.");
      assertStringIncludes(shown.stdout, "- added by commit archive_001 of Kimi session session_r");
      assertStringIncludes(shown.stdout, "turn id t4 (as `turns` lists it)");
      assertStringIncludes(shown.stdout, `task ${commit.task_id}: our Stop capture`);

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
      const commands = sectionCommands();
      assertEquals(commands, ["deno task -q install --url http://127.0.0.1:1933 --api-key-stdin"]);
      for (const line of commands) {
        const r = await runProcess("sh", ["-c", line.replace("http://127.0.0.1:1933", server.url)], {
          cwd: ROOT,
          env,
          clearEnv: true,
          stdin: `${root}\n`,
        });
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
        SESSION,
        new JournalBuilder().simpleTurn("I indent with tabs.", "Noted.").toString(),
      );
      const payload = (e: Record<string, unknown>) =>
        JSON.stringify({ session_id: SESSION, cwd: dir.path, ...e });
      await cli(["hook", "user-prompt-submit"], payload({ prompt: "how do I indent?" }));
      env.OPENVIKING_WRITE_PATH_ASYNC = "0";
      env.OPENVIKING_CAPTURE_WAIT_MS = "0";
      await cli(["hook", "stop"], payload({}));
      await cli(["hook", "session-end"], payload({}));
      const status = JSON.parse((await cli(["status", "--json", "--session", SESSION])).stdout);
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
        assertEquals(JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key, before);
        assertEquals(await filesHolding(home, root), []);
        for (const o of outputs) {
          assertTrue(!o.includes(root), `an output holds the root key: ${o.slice(0, 300)}`);
        }
      },
    );

    await t.step("the fake answers this flow as the real server does", async () => {
      await using fake = await FakeOpenViking.start({ rootKey: root });
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
    });
    await t.step("/health: open without a key, identity with a user key, 401 with a wrong key", async () => {
      const anon = await fetch(`${server.url}/health`);
      const anonJson = await anon.json() as Json;
      assertEquals(anon.status, 200);
      assertEquals(anonJson.auth_mode, "api_key");
      assertEquals("user_id" in anonJson, false);
      const mine = await call(server, "GET", "/health");
      assertEquals(mine.status, 200, mine.text);
      assertEquals([mine.json.account_id, mine.json.user_id, mine.json.role], [
        server.account,
        server.user,
        "user",
      ]);
      const wrong = await call(
        server,
        "GET",
        "/health",
        undefined,
        (h) => h.set("Authorization", "Bearer nope"),
      );
      assertEquals(wrong.status, 401, wrong.text);
    });

    await t.step("401 shapes: wrong key, missing key, MCP", async () => {
      const wrong = await call(server, "GET", "/api/v1/system/status", undefined, (h) => {
        h.set("Authorization", "Bearer wrong-key");
      });
      assertEquals(wrong.status, 401, wrong.text);
      assertEquals(wrong.json.status, "error");
      assertEquals(obj(wrong.json.error).code, "UNAUTHENTICATED");
      assertEquals(obj(wrong.json.error).message, "Invalid API key");
      assertEquals(wrong.headers.get("www-authenticate"), null);
      const missing = await call(server, "POST", "/api/v1/search/find", { query: "x" }, (h) => {
        h.delete("Authorization");
      });
      assertEquals(missing.status, 401, missing.text);
      assertEquals(obj(missing.json.error).message, "Missing API Key when resolving identity.");
      const m = await call(server, "POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }, (h) => {
        h.set("Authorization", "Bearer wrong-key");
        h.set("Accept", "application/json, text/event-stream");
      });
      assertEquals(m.status, 401, m.text);
      assertEquals(m.json, { jsonrpc: "2.0", id: null, error: { code: -32001, message: "Invalid API key" } });
    });

    await t.step("root key cannot read tenant data (403); X-API-Key works too", async () => {
      const root = await call(server, "POST", "/api/v1/search/find", { query: "x" }, (h) => {
        h.set("Authorization", `Bearer ${server.rootApiKey}`);
      });
      assertEquals(root.status, 403, root.text);
      assertEquals(obj(root.json.error).code, "PERMISSION_DENIED");
      const xApiKey = await call(server, "GET", "/api/v1/system/status", undefined, (h) => {
        h.delete("Authorization");
        h.set("X-API-Key", server.apiKey!);
      });
      assertEquals(xApiKey.status, 200, xApiKey.text);
    });

    await t.step("identity comes from the key; account/user headers are ignored", async () => {
      const r = await call(server, "GET", "/api/v1/system/status", undefined, (h) => {
        h.set("X-OpenViking-Account", "someone-else");
        h.set("X-OpenViking-User", "mallory");
      });
      assertEquals(r.status, 200, r.text);
      assertEquals(obj(r.json.result).user, server.user);
    });

    await t.step("capture → commit → find under viking://~/memories resolves to the key's user", async () => {
      const sessionId = `kc-session_${crypto.randomUUID()}`;
      const task = await captureAndCommit(
        server,
        sessionId,
        "I always use pnpm instead of npm for monorepos",
      );
      assertEquals(task.status, "completed", JSON.stringify(task));
      const meta = await call(server, "GET", `/api/v1/sessions/${sessionId}`);
      assertEquals(obj(obj(meta.json.result).user), { account_id: server.account, user_id: server.user });
      const r = await eventually(
        () =>
          call(server, "POST", "/api/v1/search/find", {
            query: "pnpm monorepos",
            target_uri: "viking://~/memories",
          }),
        (reply) => memoryHit(reply, "pnpm") !== undefined,
      );
      assertEquals(r.status, 200, r.text);
      const hit = memoryHit(r, "pnpm");
      assertTrue(hit, r.text);
      assertMatch(String(hit.uri), new RegExp(`^viking://user/${server.user}/memories/`));
    });

    await t.step("MCP with the user key sees the same memories", async () => {
      const r = await eventually(
        () =>
          mcp(server, {
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "search", arguments: { query: "pnpm monorepos", mode: "context" } },
          }),
        (reply) => mcpText(reply).includes(`viking://user/${server.user}/memories/`),
      );
      assertEquals(r.status, 200, r.text);
      const result = obj(mcpMessages(r)[0].result);
      assertEquals(result.isError, false);
      assertStringIncludes(String(arr(result.content)[0].text), `viking://user/${server.user}/memories/`);
    });
  } finally {
    await server.stop();
  }
});
