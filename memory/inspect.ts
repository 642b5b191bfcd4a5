/**
 * What is remembered, as OpenViking holds it: the memories recall can bring to a workspace (the user's own
 * under `viking://~/memories`, the workspace's actor peer's under `viking://~/peers/<peer>/memories`), one in
 * full with the commits whose memory diffs name it, forgetting one, and the user's memories moved out and in
 * as OpenViking's own `.ovpack` (`/api/v1/pack/export`, `/api/v1/pack/import`).
 */

import * as z from "zod/mini";
import {
  buildHeaders,
  checkResult,
  classifyReply,
  cleanFailure,
  type ClientOptions,
  failure,
  type OpenVikingClient,
  type OvFailure,
  type OvResponse,
} from "../openviking/client.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { readLedger } from "./ledger.ts";
import { isFolderSummary } from "./recall.ts";
import { SESSION_PREFIX } from "./context.ts";

/** Whose a memory is: the user's own, or this workspace's (its actor peer's). */
export type Scope = "user" | "project";

/** A place memories are kept that recall reads. */
export interface Root {
  scope: Scope;
  uri: string;
}

/** One memory as listed: `modified` in ms (0: unknown), `text` its first lines (else its file's name). */
export interface Listed {
  uri: string;
  scope: Scope;
  kind: string;
  modified: number;
  text: string;
  /** Search only: find's score. */
  score?: number;
}

/** A commit that made or changed a memory, from its memory diff, and what our ledger knows of it. */
export interface Origin {
  /** The OpenViking session, and the Kimi session when it is one of ours. */
  session: string;
  kimiSession?: string;
  /** The commit's archive (`…/history/archive_NNN`) and when its extraction ran. */
  archive: string;
  extractedAt?: string;
  change: "added" | "updated";
  /** The turns the archive holds (our `turn_id`s). */
  turns: string[];
  /** The commit's task, while the server keeps it; and the capture our ledger recorded for that task. */
  taskId?: string;
  capture?: { at: number; event: string };
}

/**
 * The roots recall reads for actor peer `peerId` ("" = none): the user's, and the peer's once the server
 * has a folder for it (asked of `viking://~/peers`: the real server refuses a missing one with a 403).
 */
export async function memoryRoots(client: OpenVikingClient, peerId: string): Promise<OvResponse<Root[]>> {
  const user: Root = { scope: "user", uri: "viking://~/memories" };
  if (!peerId) return { ok: true, status: 200, result: [user] };
  const peers = await client.request("GET", "/api/v1/fs/ls", Entries, { query: { uri: "viking://~/peers" } });
  if (!peers.ok && !isNotFound(peers)) return peers;
  const has = peers.ok && peers.result.some((e) => e?.isDir && e.uri.endsWith(`/peers/${peerId}`));
  const project: Root = { scope: "project", uri: `viking://~/peers/${peerId}/memories` };
  return { ok: true, status: 200, result: has ? [user, project] : [user] };
}

/** Whether `uri` names a memory (a file of a memory space, not a folder or its summary). */
export function isMemoryUri(uri: string): boolean {
  return /^viking:\/\/\S*\/memories\/\S+\.md$/.test(uri) && !isFolderSummary(uri);
}

/** A memory's kind: the folder under `memories/` (preferences, entities, events…), else `profile`. */
export function kindOf(uri: string): string {
  const rest = uri.slice(uri.lastIndexOf("/memories/") + "/memories/".length);
  return rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : "profile";
}

const text = z.catch(z.optional(z.string()), undefined);
const Entries = z.catch(
  z.array(z.catch(
    z.nullable(z.looseObject({ uri: z.string(), isDir: z.catch(z.boolean(), false), modTime: text })),
    null,
  )),
  [],
);

/** The memories of a tree listing of `root` (pure): files only, no summaries, each once. */
export function memoriesOfTree(root: Root, entries: z.output<typeof Entries>): Listed[] {
  return entries.flatMap((e) => {
    if (!e || e.isDir || !isMemoryUri(e.uri)) return [];
    const name = e.uri.slice(e.uri.lastIndexOf("/") + 1, -3).replaceAll("_", " ");
    const modified = Date.parse(e.modTime ?? "");
    return [{
      uri: e.uri,
      scope: root.scope,
      kind: kindOf(e.uri),
      modified: Number.isFinite(modified) ? modified : 0,
      text: name,
    }];
  });
}

/** Best first (search), else newest first. */
export function byRank(a: Listed, b: Listed): number {
  return (b.score ?? 0) - (a.score ?? 0) || b.modified - a.modified || (a.uri < b.uri ? -1 : 1);
}

/** What a listing found, and the roots it could not read. */
export interface Listing {
  memories: Listed[];
  failures: { root: Root; failure: OvFailure }[];
}

/** Every memory of `roots` (a root the server has no folder for yet holds none), newest first. */
export async function listMemories(client: OpenVikingClient, roots: readonly Root[]): Promise<Listing> {
  const out: Listing = { memories: [], failures: [] };
  await Promise.all(roots.map(async (root) => {
    const res = await client.request("GET", "/api/v1/fs/tree", Entries, {
      query: { uri: root.uri, output: "original", level_limit: 10, node_limit: 5000 },
      maxReplyBytes: 16 << 20,
    });
    if (res.ok) out.memories.push(...memoriesOfTree(root, res.result));
    else if (!isNotFound(res)) out.failures.push({ root, failure: res });
  }));
  for (let i = 0; i < out.memories.length; i += 8) {
    await Promise.all(
      out.memories.slice(i, i + 8).map(async (m) => {
        const read = await client.request("GET", "/api/v1/content/read", z.string(), {
          query: { uri: m.uri, limit: LISTED_LINES },
        });
        if (read.ok && read.result.trim()) m.text = read.result.trim();
      }),
    );
  }
  out.memories.sort(byRank);
  return out;
}

/** Lines of a memory read for its listing. */
const LISTED_LINES = 6;

const Hits = z.catch(
  z.array(z.catch(z.nullable(z.looseObject({ uri: z.string(), score: z.catch(z.number(), 0) })), null)),
  [],
);

/** The memories of `roots` that find has for `query`, best first. */
export async function searchMemories(
  client: OpenVikingClient,
  roots: readonly Root[],
  query: string,
): Promise<Listing> {
  const scores = new Map<string, number>();
  const [listing, ...found] = await Promise.all([
    listMemories(client, roots),
    ...roots.map((root) =>
      client.request("POST", "/api/v1/search/find", z.looseObject({ memories: Hits }), {
        body: { query, target_uri: root.uri, limit: 50, score_threshold: 0 },
      })
    ),
  ]);
  found.forEach((res, i) => {
    if (!res.ok) return void listing.failures.push({ root: roots[i], failure: res });
    for (const h of res.result.memories) if (h) scores.set(h.uri, Math.max(h.score, scores.get(h.uri) ?? 0));
  });
  const memories = listing.memories.filter((m) => scores.has(m.uri)).map((m) => ({
    ...m,
    score: scores.get(m.uri),
  }));
  return { memories: memories.sort(byRank), failures: listing.failures };
}

/** Whether a failure is the server saying the thing asked for is not there. */
export function isNotFound(f: OvFailure): boolean {
  return f.status === 404 && f.kind !== "missing-route";
}

/** Memory diffs read to find where a memory came from (the newest commits'). */
const MAX_DIFFS = 100;

/** The memory diffs of the user's sessions, newest first, at most `MAX_DIFFS`. */
async function diffUris(client: OpenVikingClient): Promise<string[] | OvFailure> {
  const res = await client.request("GET", "/api/v1/fs/tree", Entries, {
    query: { uri: "viking://~/sessions", output: "original", level_limit: 4, node_limit: 20000 },
    maxReplyBytes: 32 << 20,
  });
  if (!res.ok) return isNotFound(res) ? [] : res;
  return res.result.flatMap((e) => (e && e.uri.endsWith("/memory_diff.json") ? [e] : []))
    .sort((a, b) => (b.modTime ?? "").localeCompare(a.modTime ?? "")).slice(0, MAX_DIFFS).map((e) => e.uri);
}

/** How memory diff `diff` (its JSON text) changed `uri`, if it did (pure). */
export function changeIn(diff: string, uri: string): Origin["change"] | undefined {
  let ops: Record<string, unknown>;
  try {
    ops = asRecord(asRecord(JSON.parse(diff)).operations);
  } catch {
    return undefined;
  }
  const names = (list: unknown) => Array.isArray(list) && list.some((o) => isRecord(o) && o.uri === uri);
  return names(ops.adds) ? "added" : names(ops.updates) ? "updated" : undefined;
}

const Tasks = z.catch(z.array(z.unknown()), []);
const Archive = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

/** What the server and our ledger (in `ledgerDir`) know of the commit whose memory diff is `diffUri`. */
async function originOf(
  client: OpenVikingClient,
  diffUri: string,
  diff: string,
  change: Origin["change"],
  ledgerDir: string,
): Promise<Origin> {
  const [, session, archiveId] = /\/sessions\/([^/]+)\/history\/([^/]+)\/memory_diff\.json$/.exec(diffUri) ??
    [];
  const archive = diffUri.slice(0, -"/memory_diff.json".length);
  const out: Origin = { session, archive, change, turns: [] };
  const at = asRecord(JSON.parse(diff)).extracted_at;
  if (typeof at === "string") out.extractedAt = at;
  if (session.startsWith(SESSION_PREFIX)) out.kimiSession = session.slice(SESSION_PREFIX.length);
  const sid = encodeURIComponent(session);
  const [tasks, held] = await Promise.all([
    client.request("GET", "/api/v1/tasks", Tasks, { query: { resource_id: session, limit: 200 } }),
    client.request("GET", `/api/v1/sessions/${sid}/archives/${encodeURIComponent(archiveId)}`, Archive, {
      peerId: null,
      maxReplyBytes: 16 << 20,
    }),
  ]);
  if (held.ok) {
    const ids = held.result.messages.map((m) => asRecord(m).turn_id).filter((t) => typeof t === "string");
    out.turns = [...new Set(ids as string[])];
  }
  const task = tasks.ok
    ? tasks.result.filter(isRecord).find((t) => asRecord(t.result).archive_uri === archive)
    : undefined;
  if (typeof task?.task_id === "string") out.taskId = task.task_id;
  if (out.taskId && out.kimiSession) {
    const entries = await readLedger(ledgerDir, out.kimiSession).catch(() => []);
    const e = entries.find((x) => x.kind === "capture" && x.taskId === out.taskId);
    if (e?.kind === "capture") out.capture = { at: e.at, event: e.event };
  }
  return out;
}

/** One memory in full, and where it came from. */
export interface Shown {
  uri: string;
  text: string;
  modified?: number;
  origins: Origin[];
  /** The memory diffs read (the newest commits'); `unknown` says what could not be asked. */
  diffsRead: number;
  unknown?: string;
}

/** Memory `uri` in full with its origins; the failure (a 404: no such memory) when it cannot be read. */
export async function showMemory(
  client: OpenVikingClient,
  uri: string,
  ledgerDir: string,
): Promise<Shown | OvFailure> {
  const [read, stat, diffs] = await Promise.all([
    client.request("GET", "/api/v1/content/read", z.string(), { query: { uri }, maxReplyBytes: 4 << 20 }),
    client.request("GET", "/api/v1/fs/stat", z.looseObject({ modTime: text }), { query: { uri } }),
    diffUris(client),
  ]);
  if (!read.ok) return read;
  const shown: Shown = { uri, text: read.result, origins: [], diffsRead: 0 };
  const modified = stat.ok ? Date.parse(stat.result.modTime ?? "") : NaN;
  if (Number.isFinite(modified)) shown.modified = modified;
  if (!Array.isArray(diffs)) {
    return { ...shown, unknown: `the sessions' memory diffs: ${diffs.error.message}` };
  }
  for (let i = 0; i < diffs.length; i += 8) {
    const batch = diffs.slice(i, i + 8);
    const texts = await Promise.all(
      batch.map((d) => client.request("GET", "/api/v1/content/read", z.string(), { query: { uri: d } })),
    );
    for (const [j, t] of texts.entries()) {
      if (!t.ok) continue;
      shown.diffsRead++;
      const change = changeIn(t.result, uri);
      if (change) shown.origins.push(await originOf(client, batch[j], t.result, change, ledgerDir));
    }
  }
  return shown;
}

/** Forgets memory `uri`: its text, or `gone` when there is no such memory (any more), or the failure. */
export async function forgetMemory(
  client: OpenVikingClient,
  uri: string,
): Promise<{ ok: true; text: string } | { ok: false; gone: true } | OvFailure> {
  const read = await client.request("GET", "/api/v1/content/read", z.string(), { query: { uri } });
  if (!read.ok) return isNotFound(read) ? { ok: false, gone: true } : read;
  const rm = await client.request("DELETE", "/api/v1/fs", z.unknown(), { query: { uri } });
  return rm.ok ? { ok: true, text: read.result } : rm;
}

/** The user's memories, the root export and import move. */
export const EXPORTED_ROOT = "viking://~/memories";

/** One request with a body `fetch` sends as it is (a form, JSON), its reply read raw; bounded in time. */
async function rawRequest(
  options: ClientOptions,
  path: string,
  body: BodyInit,
  json: boolean,
): Promise<{ ok: true; response: Response; bytes: Uint8Array } | OvFailure> {
  const url = `${options.baseUrl.replace(/\/+$/, "")}${path}`;
  try {
    const response = await (options.fetch ?? fetch)(url, {
      method: "POST",
      headers: buildHeaders(options, undefined, json),
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    return { ok: true, response, bytes: new Uint8Array(await response.arrayBuffer()) };
  } catch (error) {
    const message = `no answer from ${new URL(url).origin}: ${(error as Error).message}`;
    return failure("unreachable", 0, { code: "NETWORK", message });
  }
}

/** A raw reply that is not the bytes asked for, classified as the client classifies every reply. */
function replyOf(options: ClientOptions, response: Response, bytes: Uint8Array): OvResponse<unknown> {
  const reply = classifyReply({
    status: response.status,
    location: response.headers.get("location"),
    contentType: response.headers.get("content-type"),
    text: new TextDecoder().decode(bytes),
    origin: new URL(options.baseUrl).origin,
  });
  return reply.ok ? reply : cleanFailure(reply, options.apiKey ? [options.apiKey] : []);
}

/** The user's memories as an `.ovpack` (a zip), or the failure. */
export async function exportMemories(options: ClientOptions): Promise<Uint8Array | OvFailure> {
  const body = JSON.stringify({ uri: EXPORTED_ROOT });
  const got = await rawRequest(options, "/api/v1/pack/export", body, true);
  if (!got.ok) return got;
  const isZip = got.response.ok && !/json/.test(got.response.headers.get("content-type") ?? "");
  if (isZip) return got.bytes;
  const reply = replyOf(options, got.response, got.bytes);
  return reply.ok
    ? failure("not-openviking", reply.status, { message: "the export answered without a pack" })
    : reply;
}

/**
 * Puts the memories of `pack` in place of the user's (OpenViking's import replaces the whole root it
 * holds): uploaded, then imported; the URI they went to, or the failure.
 */
export async function importMemories(
  client: OpenVikingClient,
  pack: Uint8Array,
): Promise<OvResponse<string>> {
  const form = new FormData();
  form.append("file", new Blob([pack.slice()]), "memories.ovpack");
  const got = await rawRequest(client.options, "/api/v1/resources/temp_upload", form, false);
  if (!got.ok) return got;
  const reply = replyOf(client.options, got.response, got.bytes);
  if (!reply.ok) return reply;
  const upload = checkResult(reply, z.object({ temp_file_id: z.string() }), "the upload");
  if (!upload.ok) return upload;
  const done = await client.request("POST", "/api/v1/pack/import", z.object({ uri: z.string() }), {
    body: { temp_file_id: upload.result.temp_file_id, parent: "viking://~", on_conflict: "overwrite" },
    timeoutMs: Math.max(client.options.timeoutMs, 120_000),
  });
  return done.ok ? { ...done, result: done.result.uri } : done;
}
