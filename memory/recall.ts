/** Recall, query to printed text: `/search/search` in context mode, what the session holds left out. */

import * as z from "zod/mini";
import type { Budget, OpenVikingClient, OvFailure } from "../openviking/client.ts";
import type { Config } from "../openviking/config.ts";
import { madeIn } from "./extraction.ts";
import { printBlocks, safe, SafeText } from "../lib/neutralize.ts";
import { redact } from "../lib/redact.ts";
import { type Memory, MemorySchema, type ShownSchema } from "./memory.ts";
import { DIGEST_CLOSE, DIGEST_OPEN, digestLines } from "./digest.ts";

/** What a recall found (prompt state keeps it): the stage and its memories in order. */
export const RecallSchema = z.object({
  source: z.enum(["context", "none"]),
  memories: z.array(MemorySchema),
});

/** What a recall gives, and why the server did not answer when it did not. */
export type RecallResult = z.infer<typeof RecallSchema> & { failure?: OvFailure };

/** One recall: the query, the session, the URIs it has, the state directory (strict scope's `madeIn`). */
export interface RecallRequest {
  query: string;
  sessionId?: string;
  excludeUris?: readonly string[];
  budget: Budget;
  stateDir: string;
}

/** A reply's `entries`: an entry without a URI, or a list that is not one, reads as nothing. */
export const Entries = z.catch(z.array(z.catch(z.nullable(MemorySchema), null)), []);

/** The context face's reply (its `rendered` and `digest` texts are not printed). */
const ContextReply = z.looseObject({ entries: Entries });

/** The shortest prompt recall asks for (characters, once cleaned). */
export const MIN_QUERY_LENGTH = 3;
/** The least score a memory needs to be recalled (the server's 0–1). */
const SCORE_THRESHOLD = 0.35;
/** The digest's size: at most this many memories, in at most this many characters. */
const [DIGEST_LIMIT, DIGEST_CHARS] = [5, 1200];
const MAX_MEMORIES = 50;
const MAX_TEXT = 4000;
const MAX_URI = 300;

/** A URI the digest may print: `viking://`, no blank or parenthesis (a link, or a forged second "(URI)", is none). */
const SHOWN_URI = /^viking:\/\/[^\s()]+$/;

/** The memories of parsed `entries`, in order: each URI once (empty, too long or not {@link SHOWN_URI}: dropped), texts cut, ≤ 50. */
export function memoriesFromEntries(list: Iterable<Memory | null>): Memory[] {
  const out = new Map<string, Memory>();
  for (const m of list) {
    if (!m || m.uri.length > MAX_URI || !SHOWN_URI.test(m.uri) || out.has(m.uri)) continue;
    out.set(m.uri, {
      uri: m.uri,
      text: m.text.slice(0, MAX_TEXT),
      ...(m.score !== undefined && Number.isFinite(m.score) ? { score: m.score } : {}),
      ...(m.category ? { category: m.category.slice(0, 64) } : {}),
      ...(m.detail ? { detail: m.detail.slice(0, 64) } : {}),
    });
    if (out.size >= MAX_MEMORIES) break;
  }
  return [...out.values()];
}

/** Whether `uri` is in peer `peerId`'s strict scope by its place: the user's preferences and profile, the peer's space. */
export function inStrictScope(uri: string, peerId: string): boolean {
  const rest = /^viking:\/\/user\/[^/]+\/(.*)$/.exec(uri)?.[1] ?? "";
  return /^memories\/(?:preferences\/|profile\.md$)/.test(rest) ||
    (!!peerId && rest.startsWith(`peers/${peerId}/`));
}

/** Recalls memories for a prompt from the context face; never throws. */
export async function recallForPrompt(
  c: OpenVikingClient,
  s: Config,
  req: RecallRequest,
): Promise<RecallResult> {
  const query = req.query.trim();
  if (!query) return { source: "none", memories: [] };
  // No quotas, token cap or dedupe window: the server's defaults; `exclude_uris` what the session was shown.
  const body = {
    ...{ query, mode: "context", purpose: "coding", score_threshold: SCORE_THRESHOLD },
    ...(s.recallPeerScope !== "all" ? { peer_scope: "actor" } : {}),
    ...(req.sessionId ? { session_id: req.sessionId } : {}),
    ...(req.excludeUris?.length ? { exclude_uris: req.excludeUris.slice(-200) } : {}),
  };
  const res = await c.request("POST", "/api/v1/search/search", ContextReply, { body, budget: req.budget });
  if (!res.ok) return { source: "none", memories: [], failure: res };
  const memories = memoriesFromEntries(res.result.entries);
  if (s.recallPeerScope !== "strict") return { source: "context", memories };
  // The server's text may name what strict leaves out: only the memories kept are shown.
  const peer = c.options.peerId ?? "";
  const made = await madeIn(req.stateDir, peer);
  return {
    source: "context",
    memories: memories.filter((m) => inStrictScope(m.uri, peer) || made.has(m.uri)),
  };
}

/** One prompt's ask: the query, the session, the URIs it holds, the same prompt's kept recall. */
export interface InjectionRequest extends Omit<RecallRequest, "excludeUris"> {
  injected: readonly string[];
  reuse?: RecallResult;
}

/** What is printed and why: the stage, memories printed and left out, the recall to keep. */
export interface Injection {
  stdout: string;
  recall: RecallResult["source"] | "reused" | "skipped";
  injected: z.infer<typeof ShownSchema>[];
  suppressed: string[];
  found?: RecallResult;
  failure?: OvFailure;
}

/** The digest block, redacted; `injected` keeps each URI (the session's key) and the characters its line took. */
function digestOutput(c: Config, found: Memory[]): Pick<Injection, "stdout" | "injected"> {
  const reserved = DIGEST_OPEN.length + DIGEST_CLOSE.length + 2;
  const limits = { memories: DIGEST_LIMIT, chars: DIGEST_CHARS };
  const lines = digestLines(found, limits, reserved, c.redact ? redact : undefined);
  if (!lines.length) return { stdout: "", injected: [] };
  const body = SafeText.join(lines.map((l) => l.line), safe`\n`);
  return {
    stdout: printBlocks([{ open: DIGEST_OPEN, body, close: DIGEST_CLOSE }]),
    injected: lines.map(({ memory: m, line }) => ({
      uri: m.uri,
      ...(m.score !== undefined ? { score: m.score } : {}),
      chars: line.length,
    })),
  };
}

/** What to print for a prompt: asks the server within the budget; never throws. */
export async function injectionFor(
  client: OpenVikingClient,
  c: Config,
  req: InjectionRequest,
): Promise<Injection> {
  const ask = req.reuse === undefined && req.query.length >= MIN_QUERY_LENGTH && req.query.trim() !== "";
  // The server takes only viking:// URIs as exclude_uris (an older version kept `text:` keys beside them).
  const excludeUris = req.injected.filter((k) => k.startsWith("viking://"));
  const recalled = ask ? await recallForPrompt(client, c, { ...req, excludeUris }) : req.reuse;
  const seen = new Set(req.injected);
  const unseen = recalled?.memories.filter((m) => !seen.has(m.uri)) ?? [];
  return {
    ...digestOutput(c, unseen),
    recall: req.reuse !== undefined ? "reused" : recalled?.source ?? "skipped",
    suppressed: recalled?.memories.filter((m) => seen.has(m.uri)).map((m) => m.uri) ?? [],
    found: ask && !recalled?.failure ? recalled : undefined,
    ...(recalled?.failure ? { failure: recalled.failure } : {}),
  };
}
