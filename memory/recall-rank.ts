/** The find fallback's local ranking (pure): score, the kind of memory a query asks for, word overlap; dedupe. */

import type { RecallSettings } from "./recall-types.ts";

/** A find result item. */
export interface FindItem {
  uri: string;
  level?: number;
  score: number;
  abstract: string;
  contextType: string;
  bucket: "memory" | "skill";
}

/** A query about time: events rank higher. */
const TEMPORAL =
  /\b(yesterday|today|last (week|time|month)|earlier|before|recent(ly)?|when did|ago)\b|昨天|今天|上次|之前|最近/i;
/** A query about preferences: preferences rank higher. */
const PREFERENCE =
  /\b(prefer|preference|like|favorite|favourite|style|convention|always|never)\b|喜欢|偏好|习惯/i;

/** The words of a text (lower case, longer than two characters) that a query and a hit may share. */
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
