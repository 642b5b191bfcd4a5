/**
 * The schemas of recall's replies: the context face's, checked on every prompt, and the fallbacks' (the
 * recall endpoint's, find's and a content read's), built when a fallback first runs.
 */

import * as z from "zod/mini";
import { Entries } from "./recalled.ts";

/** A text member a reply may have: absent (or of another type) reads as undefined. */
const optionalText = z.catch(z.optional(z.string()), undefined);

/** The context face's result: its entries, the assembled text (`digest`, `rendered`), "no_relevant" stats. */
export const ContextReply = z.looseObject({
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
export const fallbackReplies = () => fallbackReplyCache ??= buildFallbackReplies();

/** `/search/find`'s result as parsed. */
export type FindReply = z.output<ReturnType<typeof fallbackReplies>["find"]>;
