/**
 * Recall's last stage ③: `/search/find` per source (memories, skills), the hits ranked and cut here
 * (recall-rank.ts), each memory's text its abstract or, where that will not do, its content read.
 */

import type { OpenVikingClient, OvFailure } from "../openviking/client.ts";
import { MAX_MEMORY_TEXT, type Memory } from "./recalled.ts";
import { type FindItem, rankFindItems } from "./recall-rank.ts";
import { fallbackReplies, type FindReply } from "./recall-replies.ts";
import type { RecallRequest, RecallResult, RecallSettings } from "./recall-types.ts";

/**
 * The hits of a find result as items of `bucket`; in memories, a folder's summary (find's level 0 or 1) is
 * left out: it is no memory.
 */
function findItems(result: FindReply, bucket: "memory" | "skill"): FindItem[] {
  const summary = (level: number | undefined) => bucket === "memory" && level !== undefined && level !== 2;
  return [...result.memories, ...result.skills, ...result.resources].flatMap((x) =>
    x && !summary(x.level)
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
 * ③ `/search/find` per source, ranked and assembled here (content read where the abstract will not do); a
 * failure when no source answered.
 */
export async function fromFind(
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
