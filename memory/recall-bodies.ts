/**
 * The request bodies of recall's server stages, as OpenViking's other plugins send them: the context face
 * (`/api/v1/search/search`, mode context) and the deprecated `/api/v1/search/recall`; the quotas they split
 * the recall limit into (pure).
 */

import type { RecallRequest, RecallSettings } from "./recall-types.ts";

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
export function recallEndpointBody(s: RecallSettings, query: string) {
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
