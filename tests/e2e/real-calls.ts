/**
 * The real OpenViking's API as the e2e tests against it call it: a request with the headers the plugin's client
 * sends, MCP replies read, commits waited for, what the server derives waited for, a table of edges checked.
 * Shared by the dev-mode file (tests/e2e/kimi_real_openviking_test.ts) and the api_key-mode one
 * (tests/e2e/real_openviking_api_key_test.ts), which run side by side (a server each).
 */

import { USER_AGENT } from "../../lib/version.ts";
import { classifyReply } from "../../openviking/client.ts";
import { KNOBS } from "../../openviking/config.ts";
import { assertEquals, assertMatch } from "../support/assert.ts";
import { waitUntil } from "../support/kimi.ts";
import type { RealOpenViking } from "../support/real-openviking.ts";

export const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
/** The default timeout of our requests, not the sandbox's 1 s: the real server takes its time. */
export const UNHURRIED = { OPENVIKING_TIMEOUT_MS: String(KNOBS.timeoutMs.default) };
/** The headers that leave the actor peer out: the user's own calls. */
export const NO_PEER = { "X-OpenViking-Actor-Peer": "" };

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

/** One request with the headers the plugin's HTTP client sends, `headers` changing them ("": left out). */
export async function call(
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
export function mcpMessages(reply: Reply): Json[] {
  if (!(reply.headers.get("content-type") ?? "").includes("text/event-stream")) return [reply.json];
  return reply.text.split("\n").filter((l) => l.startsWith("data:")).map((l) => obj(JSON.parse(l.slice(5))));
}

export function log(line: string): void {
  console.log(`  [real-openviking] ${line}`);
}

/**
 * What the server derives after a commit task completes (the memory's index entry, its search and recall
 * hits) lands a moment later, later still on a loaded machine: calls `read` until `ready` accepts a reply
 * (within a minute), and returns that reply.
 */
export function eventually(read: () => Promise<Reply>, ready: (reply: Reply) => boolean): Promise<Reply> {
  let last: Reply | undefined;
  const accepted = async () => ready(last = await read()) && last;
  return waitUntil(accepted, 60_000, "the server's derived data", 500, () => last?.text);
}

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
export type Edge = [
  what: string,
  method: string,
  path: string,
  body: unknown,
  want: string,
  headers?: Record<string, string>,
];

/** Sends every edge's request and compares the reply with what the edge expects. */
export async function expectEdges(server: RealOpenViking, edges: Edge[]): Promise<void> {
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
