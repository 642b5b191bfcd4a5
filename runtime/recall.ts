/**
 * Recall for a prompt, with the same chain and request bodies as OpenViking's other plugins:
 * ① `POST /api/v1/search/search` in context mode → ② the deprecated `POST /api/v1/search/recall` →
 * ③ `POST /api/v1/search/find` per source with local ranking and assembly. Servers that reject context mode
 * are remembered for 6 h. The result is the memories the answering stage listed, in its order (see
 * memory.ts); the output formats (digest.ts, and {@link fullRecallBlock} here) print them.
 */

import * as z from "zod/mini";
import type { Budget, OpenVikingClient, OvFailure, OvResponse } from "./http.ts";
import { parseJsonOrUndefined, readTextIfExists, writeFileAtomic } from "./fs.ts";
import { neutralize, safe, SafeText } from "./neutralize.ts";
import { joinPath } from "./paths.ts";
import { isRecord } from "./parsed.ts";
import { type Block, PRINT_MAX_CHARS } from "./printed.ts";
import {
  Entries,
  MAX_MEMORY_TEXT,
  memoriesFromEntries,
  memoriesFromRendered,
  type Memory,
  renderElement,
} from "./memory.ts";

/** Settings recall needs (a subset of the config). */
export interface RecallSettings {
  recallLimit: number;
  /** True when the user set the limit (only then are quotas sent). */
  recallLimitConfigured: boolean;
  recallTokenBudget: number;
  recallMaxContentChars: number;
  scoreThreshold: number;
  recallPreferAbstract: boolean;
  recallPeerScope: "all" | "actor";
  recallDedupTurns: number;
  /** True when the user set the dedupe window. */
  recallDedupTurnsConfigured?: boolean;
  /** The output format: the digest shows only some of what the server returns. */
  recallFormat?: "digest" | "full";
  recallMaxTokens?: number;
  recallQueryExpansion?: "off" | "auto";
}

/** One recall request's context. */
export interface RecallRequest {
  query: string;
  /** OpenViking session id (`kc-…`), for server-side expansion and cross-turn dedupe. */
  sessionId?: string;
  /** URIs the session already received (sent as `exclude_uris`, ≤ 200). */
  excludeUris?: string[];
  budget: Budget;
  /** Directory of the shared legacy memo (`context-face.json`); "" = none (no home): nothing remembered. */
  stateDir: string;
  now?: number;
}

/** What recall produced. */
export interface RecallResult {
  /** Which stage answered: "context", "recall", "find", or "none". */
  source: "context" | "recall" | "find" | "none";
  /** The memories it listed, in its order (find: ranked here). */
  memories: Memory[];
  /**
   * The text the server assembled (its `digest`, else its `rendered` text): the full format prints it as it
   * is when none of the memories is left out.
   */
  assembled?: string;
  /**
   * Why no stage answered, when none did (source "none"): the first failure that was not the server lacking
   * that stage, as it came. Undefined when a stage answered, even with nothing.
   */
  failure?: OvFailure;
}

/** How long a server that rejected context mode is not asked again. */
export const LEGACY_MEMO_MS = 6 * 3600_000;

const CONTEXT_HEADER = safe`Relevant memory from OpenViking. Use the search/read MCP tools to expand URIs.`;
const FIND_HEADER = safe`Relevant context from OpenViking. Use the read MCP tool to expand URIs.`;
const OPEN = safe`<openviking-context>`;
const CLOSE = safe`</openviking-context>`;

/** Token estimate used for budgets: a quarter of the characters. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Splits `limit` over weighted buckets by largest remainder, each at least 1. */
export function scaleQuotas(limit: number, weights: Record<string, number>): Record<string, number> {
  const keys = Object.keys(weights);
  const total = keys.reduce((n, k) => n + weights[k], 0);
  if (limit < keys.length) return Object.fromEntries(keys.map((k) => [k, 1]));
  const exact = keys.map((k) => (limit * weights[k]) / total);
  const out = exact.map((x) => Math.max(1, Math.floor(x)));
  let left = limit - out.reduce((a, b) => a + b, 0);
  const order = keys.map((_, i) => i).sort((a, b) =>
    (exact[b] - Math.floor(exact[b])) - (exact[a] - Math.floor(exact[a])) || a - b
  );
  for (let j = 0; left > 0; j = (j + 1) % order.length, left--) out[order[j]]++;
  return Object.fromEntries(keys.map((k, i) => [k, out[i]]));
}

const CODING_WEIGHTS = { events: 1, entities: 2, preferences: 1, experiences: 1, resources: 3, skills: 2 };
const RECALL_WEIGHTS = { events: 10, entities: 10, preferences: 3 };

/**
 * The `dedup_turns` to send. The server holds back for that many turns every URI it returned, shown or not;
 * the digest shows at most a few of them, so by default it sends none and relies on `exclude_uris` (exactly
 * what the session was shown) and its own filter instead — measured with the budget bench: with 5, 33 of
 * the 80 memories of its store were never shown in its 20-prompt session (none without). The full format
 * shows all it gets: it keeps 5.
 */
function serverDedupTurns(s: RecallSettings): number {
  return s.recallFormat === "full" || s.recallFormat === undefined || s.recallDedupTurnsConfigured
    ? s.recallDedupTurns
    : 0;
}

/** Body of the context-face request (`/api/v1/search/search`, mode context). */
export function contextSearchBody(
  s: RecallSettings,
  r: Pick<RecallRequest, "query" | "sessionId" | "excludeUris">,
) {
  const body: Record<string, unknown> = {
    query: r.query,
    mode: "context",
    purpose: "coding",
    score_threshold: s.scoreThreshold,
  };
  if (s.recallLimitConfigured) body.quotas = scaleQuotas(s.recallLimit, CODING_WEIGHTS);
  if (s.recallMaxTokens !== undefined) body.max_tokens = s.recallMaxTokens;
  if (s.recallPeerScope === "actor") body.peer_scope = "actor";
  if (r.sessionId) {
    body.session_id = r.sessionId;
    if (s.recallQueryExpansion) body.query_expansion = s.recallQueryExpansion;
    if (serverDedupTurns(s) > 0) body.dedup_turns = serverDedupTurns(s);
  }
  if (r.excludeUris?.length) body.exclude_uris = r.excludeUris.slice(-200);
  return body;
}

/** Body of the deprecated `/api/v1/search/recall` request. */
function recallEndpointBody(s: RecallSettings, query: string) {
  const quotas = { ...scaleQuotas(s.recallLimit, RECALL_WEIGHTS), experiences: 0 };
  const body: Record<string, unknown> = {
    query,
    quotas,
    max_chars: Math.max(s.recallMaxContentChars * s.recallLimit, 1000),
    min_score: s.scoreThreshold,
    render: true,
  };
  if (s.recallPeerScope === "actor") body.peer_scope = "actor";
  return body;
}

/** Whether a context-face failure means "this server has no context mode". */
function isLegacyRejection(res: OvResponse<unknown>): boolean {
  if (res.ok || (res.status !== 400 && res.status !== 422)) return false;
  const text = JSON.stringify(res.error).toLowerCase();
  return text.includes("extra") || text.includes("mode") || text.includes("unexpected");
}

const memoPath = (dir: string) => joinPath(dir, "context-face.json");

async function isLegacyMemoed(dir: string, baseUrl: string, now: number): Promise<boolean> {
  if (!dir) return false;
  const memo = parseJsonOrUndefined(await readTextIfExists(memoPath(dir)).catch(() => undefined));
  if (!isRecord(memo)) return false;
  const m = memo;
  if (typeof m.baseUrl === "string" && m.baseUrl !== baseUrl) return false;
  return typeof m.legacyUntil === "number" && m.legacyUntil > now;
}

async function memoLegacy(dir: string, baseUrl: string, now: number): Promise<void> {
  if (!dir) return;
  await writeFileAtomic(memoPath(dir), `${JSON.stringify({ legacyUntil: now + LEGACY_MEMO_MS, baseUrl })}\n`)
    .catch(() => {});
}

/** Server text, cut to what could ever be printed, then neutralised (a server may send megabytes). */
function untrusted(text: string, max = PRINT_MAX_CHARS): string {
  return neutralize(text.length > max ? text.slice(0, max) : text);
}

/** Wraps server-assembled text in the documented block. */
function contextBlock(text: string): Block {
  return { open: OPEN, body: safe`${CONTEXT_HEADER}\n${untrusted(text).trim()}`, close: CLOSE };
}

/** URIs mentioned in `uri="…"` attributes or as bare `viking://` references. */
export function urisIn(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/viking:\/\/[^\s"'`<>)\]]+/g)) found.add(m[0]);
  return [...found];
}

/** A text member a reply may have: absent (or of another type) reads as undefined. */
const optionalText = z.catch(z.optional(z.string()), undefined);

/** The context face's result: its entries, the assembled text (`digest`, `rendered`), "no_relevant" stats. */
const ContextReply = z.looseObject({
  entries: Entries,
  digest: optionalText,
  rendered: optionalText,
  stats: z.catch(z.optional(z.looseObject({ rewrite: z.optional(z.unknown()) })), undefined),
});

/** The fallbacks' reply schemas: the recall endpoint's, find's and a content read's. */
function buildFallbackReplies() {
  /** One hit of `/search/find`; a hit without a URI is dropped, other odd members read as absent. */
  const hit = z.catch(
    z.nullable(z.looseObject({
      uri: z.string(),
      level: z.catch(z.optional(z.number()), undefined),
      score: z.catch(z.number(), 0),
      abstract: z.catch(z.string(), ""),
      context_type: optionalText,
    })),
    null,
  );
  const hits = z.catch(z.array(hit), []);
  return {
    /** The deprecated recall endpoint's result: its entries and the rendered text. */
    recall: z.looseObject({ entries: Entries, rendered: optionalText }),
    /** `/search/find`'s result: hits by kind (a list that is not one reads as empty). */
    find: z.looseObject({ memories: hits, skills: hits, resources: hits }),
    /** `/content/read`'s result: the text. */
    content: z.string(),
  };
}

let fallbackReplyCache: ReturnType<typeof buildFallbackReplies> | undefined;
/** The fallbacks' reply schemas, built when a fallback first runs: most prompts never need them. */
const fallbackReplies = () => fallbackReplyCache ??= buildFallbackReplies();

/** A find result item. */
interface FindItem {
  uri: string;
  level?: number;
  score: number;
  abstract: string;
  contextType: string;
  bucket: "memory" | "skill";
}

const TEMPORAL =
  /\b(yesterday|today|last (week|time|month)|earlier|before|recent(ly)?|when did|ago)\b|昨天|今天|上次|之前|最近/i;
const PREFERENCE =
  /\b(prefer|preference|like|favorite|favourite|style|convention|always|never)\b|喜欢|偏好|习惯/i;

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 2));
}

/** Ranks, dedupes and cuts find results to the recall limit (pure). */
export function rankFindItems(items: FindItem[], query: string, s: RecallSettings): FindItem[] {
  const q = words(query);
  const temporal = TEMPORAL.test(query);
  const preference = PREFERENCE.test(query);
  const scored = items
    .filter((it) => it.score >= s.scoreThreshold)
    .map((it) => {
      let rank = Math.min(1, Math.max(0, it.score));
      if (it.level === 2 || it.uri.endsWith(".md")) rank += 0.12;
      if (temporal && it.uri.includes("/events/")) rank += 0.1;
      if (preference && it.uri.includes("/preferences/")) rank += 0.08;
      if (q.size) {
        const w = words(`${it.abstract} ${it.uri}`);
        let overlap = 0;
        for (const x of q) if (w.has(x)) overlap++;
        rank += Math.min(0.2, (overlap / q.size) * 0.2);
      }
      return { it, rank };
    })
    .sort((a, b) => b.rank - a.rank);
  const seen = new Set<string>();
  const out: FindItem[] = [];
  for (const { it } of scored) {
    const byUri = it.uri.includes("/events/") || it.uri.includes("/cases/");
    const key = byUri || !it.abstract ? `u:${it.uri}` : `a:${it.abstract.trim().toLowerCase()}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(it);
    if (out.length >= s.recallLimit) break;
  }
  return out;
}

/** One line of server text: neutralised, whitespace collapsed, at most `max` characters (then "..."). */
function oneLine(text: string, max: number): string {
  const line = untrusted(text, max * 4 + 64).replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** The find fallback's block in the full format, within the token budget (pure). */
function findBlock(memories: readonly Memory[], s: RecallSettings): Block | undefined {
  if (!memories.length) return undefined;
  const budget = Math.max(200, s.recallTokenBudget);
  const max = Math.max(50, s.recallMaxContentChars);
  let used = estimateTokens(FIND_HEADER.text);
  const lines: SafeText[] = [];
  for (const m of memories) {
    const pct = Math.round(Math.min(1, Math.max(0, m.score ?? 0)) * 100);
    const bucket = m.category ?? "memory";
    const uri = oneLine(m.uri, 1000);
    let line = safe`- [${bucket} ${pct}%] ${oneLine(m.text, max) || uri}`;
    if (used + estimateTokens(line.text) > budget) line = safe`- [${bucket} ${pct}%] ${uri}`;
    used += estimateTokens(line.text);
    lines.push(line);
  }
  return { open: OPEN, body: SafeText.join([FIND_HEADER, ...lines], safe`\n`), close: CLOSE };
}

/**
 * The full output format of a recall (OpenViking's own plugins' block), showing `shown` of its memories:
 * the server's assembled text as it is when nothing is left out, else the memories to show in the server's
 * `<memory>` form; the find fallback's lines. Every server text in it is neutralised. Undefined when there is
 * nothing to show.
 */
export function fullRecallBlock(
  r: RecallResult,
  shown: readonly Memory[],
  s: RecallSettings,
): Block | undefined {
  if (r.source === "find") return findBlock(shown, s);
  // Nothing left out: the server's own text, as it sent it. Else the memories still to show, in its form.
  if (r.assembled !== undefined && shown.length === r.memories.length) return contextBlock(r.assembled);
  if (!shown.length) return undefined;
  return contextBlock(shown.map(renderElement).join("\n"));
}

/** The hits of a find result as items of `bucket`. */
function findItems(
  result: z.output<ReturnType<typeof fallbackReplies>["find"]>,
  bucket: "memory" | "skill",
): FindItem[] {
  return [...result.memories, ...result.skills, ...result.resources].flatMap((x) =>
    x
      ? [{
        uri: x.uri,
        level: x.level,
        score: x.score,
        abstract: x.abstract,
        contextType: x.context_type ?? bucket,
        bucket,
      }]
      : []
  );
}

/**
 * What a stage that assembles its text on the server answered: its entries as memories (else the
 * `<memory>` elements of its rendered text), and the text it assembled; nothing relevant when both are empty.
 */
function assembled(
  entries: z.output<typeof Entries>,
  text: { digest?: string; rendered?: string },
  source: "context" | "recall",
): RecallResult {
  const digest = text.digest?.trim() ?? "";
  const rendered = (text.rendered?.trim() ?? "").slice(0, PRINT_MAX_CHARS);
  const fromEntries = memoriesFromEntries(entries);
  const memories = fromEntries.length ? fromEntries : memoriesFromRendered(rendered);
  const whole = (digest || rendered).slice(0, PRINT_MAX_CHARS);
  return whole ? { source, memories, assembled: whole } : { source, memories };
}

/**
 * ① The context face; its failure, or undefined when it is remembered as missing or says it has no context
 * mode (the chain goes on either way).
 */
async function fromContextFace(
  client: OpenVikingClient,
  s: RecallSettings,
  r: RecallRequest,
  now: number,
): Promise<RecallResult | OvFailure | undefined> {
  const baseUrl = client.options.baseUrl;
  if (await isLegacyMemoed(r.stateDir, baseUrl, now)) return undefined;
  const res = await client.request("POST", "/api/v1/search/search", ContextReply, {
    body: contextSearchBody(s, r),
    budget: r.budget,
  });
  if (res.ok) {
    const result = res.result;
    if (result.stats?.rewrite === "no_relevant") return { source: "context", memories: [] };
    return assembled(result.entries, result, "context");
  }
  if (!isLegacyRejection(res)) return res;
  await memoLegacy(r.stateDir, baseUrl, now);
  return undefined;
}

/** ② The deprecated `/search/recall`, retried once without peer_scope on 400/422; its failure when it failed. */
async function fromRecallEndpoint(
  client: OpenVikingClient,
  s: RecallSettings,
  query: string,
  budget: Budget,
): Promise<RecallResult | OvFailure> {
  let body = recallEndpointBody(s, query);
  const RecallReply = fallbackReplies().recall;
  let res = await client.request("POST", "/api/v1/search/recall", RecallReply, { body, budget });
  if (!res.ok && (res.status === 400 || res.status === 422) && "peer_scope" in body) {
    body = { ...body };
    delete body.peer_scope;
    res = await client.request("POST", "/api/v1/search/recall", RecallReply, { body, budget });
  }
  return res.ok ? assembled(res.result.entries, { rendered: res.result.rendered }, "recall") : res;
}

/**
 * ③ `/search/find` per source, ranked and assembled here (content read where the abstract will not do); a
 * failure when no source answered.
 */
async function fromFind(
  client: OpenVikingClient,
  s: RecallSettings,
  r: RecallRequest,
  query: string,
): Promise<RecallResult | OvFailure> {
  const sources = [["viking://~/memories", "memory"], ["viking://~/skills", "skill"]] as const;
  const results = await Promise.all(
    sources.map(([target_uri]) =>
      client.request("POST", "/api/v1/search/find", fallbackReplies().find, {
        body: { query, target_uri, limit: Math.max(s.recallLimit * 2, 8), score_threshold: 0 },
        budget: r.budget,
      })
    ),
  );
  const failed = results.flatMap((x) => (x.ok ? [] : [x]));
  if (failed.length === results.length) return failed[0];
  const items = results.flatMap((x, i) => (x.ok ? findItems(x.result, sources[i][1]) : []));
  const exclude = new Set(r.excludeUris ?? []);
  const ranked = rankFindItems(items.filter((it) => !exclude.has(it.uri)), query, s);
  if (!ranked.length) return { source: "none", memories: [] };
  const content = await Promise.all(ranked.map(async (item) => {
    if (s.recallPreferAbstract && item.abstract) return item.abstract;
    if (item.level === 2 || !item.abstract) {
      const read = await client.request("GET", "/api/v1/content/read", fallbackReplies().content, {
        query: { uri: item.uri },
        budget: r.budget,
      });
      if (read.ok) return read.result;
    }
    return item.abstract;
  }));
  const memories = ranked.map((item, i): Memory => ({
    uri: item.uri,
    text: content[i].slice(0, MAX_MEMORY_TEXT),
    score: item.score,
    category: item.bucket,
  }));
  return { source: "find", memories };
}

/** Recalls memories for a prompt through the fallback chain. Never throws. */
export async function recallForPrompt(
  client: OpenVikingClient,
  s: RecallSettings,
  r: RecallRequest,
): Promise<RecallResult> {
  const query = r.query.trim();
  if (!query) return { source: "none", memories: [] };
  const failures: OvFailure[] = [];
  const stages = [
    () => fromContextFace(client, s, r, r.now ?? Date.now()),
    () => fromRecallEndpoint(client, s, query, r.budget),
    () => fromFind(client, s, r, query),
  ];
  for (const stage of stages) {
    const got = await stage();
    if (got === undefined) continue;
    if (!("ok" in got)) return got;
    failures.push(got);
  }
  // A stage the server does not have (an older or newer OpenViking) says less than why the others failed.
  const failure = failures.find((f) => f.kind !== "missing-route") ?? failures[failures.length - 1];
  return { source: "none", memories: [], failure };
}
