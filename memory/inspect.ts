/** What OpenViking remembers: memory roots, list and find, one shown with its origins, forget, `.ovpack` export/import. */

import * as z from "zod/mini";
import {
  failure,
  isNotFound,
  type OpenVikingClient,
  type OvFailure,
  type OvResponse,
  readContent,
} from "../openviking/client.ts";
import { asRecord, isRecord, tolerant } from "../lib/parsed.ts";
import { parseJsonOrUndefined } from "../lib/fs.ts";
import { type LedgerEntry, readLedger, REPLAY_FILE } from "./ledger.ts";
import { byRank, isFolderSummary, type Memory } from "./memory.ts";
import { SESSION_PREFIX } from "./context.ts";
import { diffChanges } from "./extraction.ts";

/** A memory root recall reads: the user's own, or this workspace's (its actor peer's). */
export type Root = { scope: "user" | "project"; uri: string };

/** One memory as listed: `modified` in ms (0: unknown), `text` its first lines; `score` find's (search). */
export type Listed = Memory & { scope: Root["scope"]; kind: string; modified: number };

/** A commit whose memory diff added or updated a memory; its task and our capture while the server keeps it. */
export type Provenance = {
  session: string;
  kimiSession?: string;
  archive: string;
  extractedAt?: string;
  change: "added" | "updated";
  turns: string[];
  taskId?: string;
  capture?: { at: number; event: string };
};

/** The roots recall reads for peer `peerId` ("" = none): the user's, the peer's once `~/peers` lists it; or the failure. */
export async function memoryRoots(client: OpenVikingClient, peerId: string): Promise<Root[] | OvFailure> {
  const user: Root = { scope: "user", uri: "viking://~/memories" };
  if (!peerId) return [user];
  const peers = await client.request("GET", "/api/v1/fs/ls", Entries, { query: { uri: "viking://~/peers" } });
  if (!peers.ok && peers.kind === "unreachable") return peers;
  const has = peers.ok && peers.result.some((e) => e?.isDir && e.uri.endsWith(`/peers/${peerId}`));
  return has ? [user, { scope: "project", uri: `viking://~/peers/${peerId}/memories` }] : [user];
}

/** The memory roots of actor peer `peerId` ("" = none) as `memories` names them to the user. */
export function rootNames(peerId: string): string[] {
  return ["viking://~/memories/", ...(peerId ? [`viking://~/peers/${peerId}/memories/`] : [])];
}

/** Whether `uri` is a memory (`.md`, no summary) of the user's or peer `peerId`'s root (undefined: any), no dot segment. */
export function isMemoryUri(uri: string, peerId?: string): boolean {
  let plain = uri;
  for (let i = 0; i < 3; i++) {
    try {
      plain = decodeURIComponent(plain);
    } catch {
      return false;
    }
  }
  if (plain.split(/[/\\]/).some((s) => s === "." || s === "..")) return false;
  const peer = peerId === undefined ? "[^/\\s]+" : peerId.replace(/[^\w-]/g, "\\$&");
  const spaces = peerId === "" ? "" : `(?:peers/${peer}/)?`;
  return new RegExp(`^viking://(?:~|user/[^/\\s]+)/${spaces}memories/\\S+\\.md$`).test(uri) &&
    !isFolderSummary(uri);
}

/** A memory as listed; its kind the folder under `memories/` (preferences, entities, events…), else `profile`. */
function listed(root: Root, uri: string, text: string, modified: number, score?: number): Listed {
  const rest = uri.slice(uri.lastIndexOf("/memories/") + "/memories/".length);
  const kind = rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : "profile";
  return { uri, scope: root.scope, kind, modified, text, ...(score === undefined ? {} : { score }) };
}

/** A listing's entries: a malformed one reads as null, a malformed list as empty. */
const Entry = z.looseObject({ uri: z.string(), isDir: tolerant(z.boolean()), modTime: tolerant(z.string()) });
const Entries = z.catch(z.array(z.catch(z.nullable(Entry), null)), []);

/** A memory's file name as words: its text until the server gives an abstract (pure). */
const nameOf = (uri: string) => uri.slice(uri.lastIndexOf("/") + 1, -3).replaceAll("_", " ");

/** The memories of a tree listing of `root` (pure): files only, no summaries, each once. */
export function memoriesOfTree(root: Root, entries: z.output<typeof Entries>): Listed[] {
  return entries.flatMap((e) =>
    !e || e.isDir || !isMemoryUri(e.uri) ? [] : [
      listed(
        root,
        e.uri,
        nameOf(e.uri),
        Date.parse(e.modTime ?? "") || 0,
      ),
    ]
  );
}

/** The files OpenViking seeds in a memories root at its first extraction (initialize_memory_files), as read. */
const SEEDED: Record<string, string> = {
  "identity.md":
    "# identity.md - Who Am I?\n\n_Fill this in during your first conversation. Make it yours._\n\n" +
    "- **Name:** \n- **Creature:** AI assistant\n- **Vibe:** \n- **Emoji:** \n- **Avatar:** \n\n---\n\n" +
    "The start of figuring out who you are.",
  "soul.md": "# soul.md - Who You Are\n_You're not a chatbot. You're becoming someone._\n## Core Truths\n" +
    "Be helpful, not performative. Have opinions. Be resourceful before asking. Earn trust through competence. " +
    "You're a guest in their life \u2014 respect that.\n## Boundaries\nPrivate things stay private. Ask before " +
    "acting externally. Don't send half-baked replies. Be careful in group chats.\n## Vibe\nBe the assistant " +
    "you'd actually want to talk to. Concise when needed, thorough when it matters.\n## Continuity\nThese files " +
    "are your memory. Read them. Update them. If you change this file, tell the user.",
};

/** Whether `uri` is a file the server seeded in a memories root and nothing has filled in yet (`text`: it whole). */
export function isUnfilledTemplate(uri: string, text: string): boolean {
  const [, name] = /\/memories\/([^/]+)$/.exec(uri) ?? [];
  return name in SEEDED && text.trim() === SEEDED[name];
}

/** What a listing found (the seeded files not filled in yet left out), the roots it could not read. */
export type Listing = {
  memories: Listed[];
  failures: { root: Root; failure: OvFailure }[];
};

/** A root's memories, or the failure (`isNotFound` of a tree: a root the server has no folder for yet, none). */
type Ask = (root: Root) => Promise<OvResponse<Listed[]>>;

/** The memories of `roots` by `ask`, ranked, the seeded files nothing has filled in yet set aside; `texts`: read each. */
async function listing(
  client: OpenVikingClient,
  roots: readonly Root[],
  ask: Ask,
  texts: boolean,
): Promise<Listing> {
  const out: Listing = { memories: [], failures: [] };
  const found = await Promise.all(roots.map(async (root) => {
    const res = await ask(root);
    if (!res.ok && !(texts && isNotFound(res))) out.failures.push({ root, failure: res });
    return res.ok ? res.result : [];
  })); // in the roots' order, whichever answers first
  const memories = found.flat();
  const read = await inEights(memories, async (m) => {
    if (!texts && !seeded(m.uri)) return undefined;
    const t = await readContent(client, m.uri, { lines: seeded(m.uri) ? undefined : 6 });
    if (t.ok && texts && t.result.trim()) m.text = t.result.trim();
    return t.ok ? t.result : undefined;
  });
  const unfilled = memories.filter((m, i) => read[i] !== undefined && isUnfilledTemplate(m.uri, read[i]));
  out.memories = memories.filter((m) => !unfilled.includes(m)).sort(byRank);
  return out;
}

const seeded = (uri: string) => uri.slice(uri.lastIndexOf("/") + 1) in SEEDED;

async function inEights<T, R>(items: readonly T[], ask: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += 8) out.push(...await Promise.all(items.slice(i, i + 8).map(ask)));
  return out;
}

/** Every memory of `roots` (a root the server has no folder for yet holds none), newest first. */
export const listMemories = (client: OpenVikingClient, roots: readonly Root[]): Promise<Listing> =>
  listing(client, roots, async (root) => {
    const res = await client.request("GET", "/api/v1/fs/tree", Entries, {
      query: { uri: root.uri, output: "original", level_limit: 10, node_limit: 5000 },
      maxReplyBytes: 16 << 20,
    });
    return res.ok ? { ...res, result: memoriesOfTree(root, res.result) } : res;
  }, true);

const Hit = z.looseObject({
  uri: z.string(),
  score: z.catch(z.number(), 0),
  abstract: z.catch(z.string(), ""),
});
const Found = z.looseObject({ memories: z.catch(z.array(z.catch(z.nullable(Hit), null)), []) });

/** The memories of `roots` that find has for `query`, best first, find's abstract as their text. */
export const searchMemories = (
  client: OpenVikingClient,
  roots: readonly Root[],
  query: string,
): Promise<Listing> =>
  listing(client, roots, async (root) => {
    const res = await client.request("POST", "/api/v1/search/find", Found, {
      body: { query, target_uri: root.uri, limit: 50, score_threshold: 0 },
    });
    const hits = res.ok ? res.result.memories : [];
    const memories = hits.flatMap((h) =>
      h && isMemoryUri(h.uri) ? [listed(root, h.uri, h.abstract || nameOf(h.uri), 0, h.score)] : []
    );
    return res.ok ? { ...res, result: memories } : res;
  }, false);

/** The memory diffs of the user's sessions, newest first, at most 100 (where a memory came from). */
async function diffUris(client: OpenVikingClient): Promise<string[] | OvFailure> {
  const res = await client.request("GET", "/api/v1/fs/tree", Entries, {
    query: { uri: "viking://~/sessions", output: "original", level_limit: 4, node_limit: 20000 },
    maxReplyBytes: 32 << 20,
  });
  if (!res.ok) return isNotFound(res) ? [] : res;
  return res.result.flatMap((e) => (e && e.uri.endsWith("/memory_diff.json") ? [e] : []))
    .sort((a, b) => (b.modTime ?? "").localeCompare(a.modTime ?? "")).slice(0, 100).map((e) => e.uri);
}

/** How memory diff `diff` (its JSON text) changed `uri`, if it did (pure). */
export function changeIn(diff: string, uri: string): Provenance["change"] | undefined {
  const { added, updated } = diffChanges(diff);
  return added.includes(uri) ? "added" : updated.includes(uri) ? "updated" : undefined;
}

const Tasks = z.catch(z.array(z.unknown()), []);
const Archive = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

/** What the server and our ledger (in `ledgerDir`) know of the commit whose memory diff is `diffUri`. */
async function provenanceOf(
  client: OpenVikingClient,
  diffUri: string,
  diff: string,
  change: Provenance["change"],
  ledgerDir: string,
): Promise<Provenance> {
  const [, session, archiveId] = /\/sessions\/([^/]+)\/history\/([^/]+)\/memory_diff\.json$/.exec(diffUri)!;
  const archive = diffUri.slice(0, -"/memory_diff.json".length);
  const out: Provenance = { session, archive, change, turns: [] };
  const at = asRecord(parseJsonOrUndefined(diff)).extracted_at;
  if (typeof at === "string") out.extractedAt = at;
  if (session.startsWith(SESSION_PREFIX)) out.kimiSession = session.slice(SESSION_PREFIX.length);
  const route = `/api/v1/sessions/${encodeURIComponent(session)}/archives/${encodeURIComponent(archiveId)}`;
  const [tasks, held] = await Promise.all([
    client.request("GET", "/api/v1/tasks", Tasks, { query: { resource_id: session, limit: 200 } }),
    client.request("GET", route, Archive, { peerId: null, maxReplyBytes: 16 << 20 }),
  ]);
  const turnIds = held.ok ? held.result.messages.map((m) => asRecord(m).turn_id) : [];
  out.turns = [...new Set(turnIds.filter((t) => typeof t === "string"))];
  const task = tasks.ok &&
    tasks.result.filter(isRecord).find((t) => asRecord(t.result).archive_uri === archive);
  if (task && typeof task.task_id === "string") out.taskId = task.task_id;
  if (!out.taskId || !out.kimiSession) return out;
  const files = await Promise.all(
    [out.kimiSession, REPLAY_FILE].map((f) => readLedger(ledgerDir, f).catch(() => [])),
  );
  const capture = runOf(files.flat(), out.taskId);
  return capture ? { ...out, capture } : out;
}

/** The hook run our ledger says started commit task `taskId`: a capture (its event), or a queue replay (pure). */
export function runOf(entries: readonly LedgerEntry[], taskId: string): Provenance["capture"] {
  const e = entries.find((e) =>
    e.kind === "capture"
      ? e.taskId === taskId
      : e.kind === "replay" && e.commitTasks.some((c) => c.taskId === taskId)
  );
  return e && { at: e.at, event: e.kind === "capture" ? e.event : "replay" };
}

/** One memory in full, and the commits among the newest `diffsRead` that made it; `unknown`: not asked. */
export type Shown = { uri: string; text: string; origins: Provenance[]; diffsRead: number; unknown?: string };

/** Memory `uri` in full with its origins; the failure (a 404: no such memory) when it cannot be read. */
export async function showMemory(
  client: OpenVikingClient,
  uri: string,
  ledgerDir: string,
): Promise<Shown | OvFailure> {
  const [memory, diffs] = await Promise.all([readContent(client, uri), diffUris(client)]);
  if (!memory.ok) return memory;
  const shown: Shown = { uri, text: memory.result, origins: [], diffsRead: 0 };
  if (!Array.isArray(diffs)) {
    return { ...shown, unknown: `the sessions' memory diffs: ${diffs.error.message}` };
  }
  const texts = await inEights(diffs, (d) => readContent(client, d));
  for (const [i, t] of texts.entries()) {
    const change = t.ok ? changeIn(t.result, uri) : undefined;
    if (t.ok) shown.diffsRead++;
    if (t.ok && change) shown.origins.push(await provenanceOf(client, diffs[i], t.result, change, ledgerDir));
  }
  return shown;
}

/** Forgets memory `uri`: its text (none if too large), `gone`, or the failure of the read or the delete. */
export async function forgetMemory(client: OpenVikingClient, uri: string): Promise<
  { ok: true; text?: string } | { ok: false; gone: true } | OvFailure & { during: "read" | "delete" }
> {
  const memory = await readContent(client, uri);
  if (!memory.ok && memory.kind !== "too-large") {
    return isNotFound(memory) ? { ok: false, gone: true } : { ...memory, during: "read" };
  }
  const rm = await client.request("DELETE", "/api/v1/fs", z.unknown(), { query: { uri } });
  return rm.ok ? { ok: true, ...(memory.ok ? { text: memory.result } : {}) } : { ...rm, during: "delete" };
}

/** The largest pack read (exported, or imported from a file). */
export const MAX_PACK_BYTES = 1 << 30;

/** The entry names of zip `bytes` by its central directory; `undefined` if it is no zip (pure). */
function zipNames(bytes: Uint8Array): string[] | undefined {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lowest = Math.max(0, bytes.length - 22 - 0xffff);
  let end = bytes.length - 22;
  while (end >= lowest && v.getUint32(end, true) !== 0x06054b50) end--;
  if (end < lowest) return undefined;
  const names: string[] = [];
  const [size, offset] = [v.getUint32(end + 12, true), v.getUint32(end + 16, true)];
  if (offset + size !== end) return undefined; // a gap (or a zip64 record) before the end record: not read
  let at = offset;
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (let i = 0; i < v.getUint16(end + 10, true); i++) {
    if (at + 46 > end || v.getUint32(at, true) !== 0x02014b50) return undefined;
    const [nameLen, extra, comment] = [28, 30, 32].map((o) => v.getUint16(at + o, true));
    if (at + 46 + nameLen > end) return undefined;
    try {
      names.push(decoder.decode(bytes.subarray(at + 46, at + 46 + nameLen)));
    } catch {
      return undefined;
    }
    at += 46 + nameLen + extra + comment;
  }
  return at === end ? names : undefined; // the directory holds just these (Python's zipfile reads it by size)
}

/** Whether `bytes` is a pack of the user's memories: a zip, every entry under the `memories/` root (pure). */
export function isMemoriesPack(bytes: Uint8Array): boolean {
  const names = zipNames(bytes);
  return !!names?.length &&
    names.every((n) => n.startsWith("memories/") && !n.split(/[/\\]/).includes(".."));
}

/** The user's memories as an `.ovpack` (a zip of the `memories/` root), or the failure. */
export async function exportMemories(client: OpenVikingClient): Promise<Uint8Array | OvFailure> {
  const got = await client.request("POST", "/api/v1/pack/export", z.unknown(), {
    body: { uri: "viking://~/memories" },
    binary: true,
    maxReplyBytes: MAX_PACK_BYTES,
  });
  if (!got.ok) return got;
  return got.result instanceof Uint8Array && isMemoriesPack(got.result)
    ? got.result
    : failure("not-openviking", got.status, { message: "the answer is not a pack of the user's memories" });
}

const Upload = z.object({ temp_file_id: z.string() });

/** Imports `pack` in place of the user's memories: their URI, or the failure and whether it replaced nothing. */
export async function importMemories(
  client: OpenVikingClient,
  pack: Uint8Array,
): Promise<OvResponse<string> | OvFailure & { replacedNothing: boolean }> {
  const form = new FormData();
  form.append("file", new Blob([pack.slice()]), "memories.ovpack");
  const upload = await client.request("POST", "/api/v1/resources/temp_upload", Upload, { body: form });
  if (!upload.ok) return { ...upload, replacedNothing: true };
  const done = await client.request("POST", "/api/v1/pack/import", z.object({ uri: z.string() }), {
    body: { temp_file_id: upload.result.temp_file_id, parent: "viking://~", on_conflict: "overwrite" },
    timeoutMs: Math.max(client.options.timeoutMs, 120_000),
  });
  if (done.ok) return { ...done, result: done.result.uri };
  return { ...done, replacedNothing: ["rejected", "auth", "missing-route"].includes(done.kind) };
}
