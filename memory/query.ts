/** The recall query made from a prompt (which may be megabytes: a pasted log): bounded, cleaned, redacted. */

import { redact } from "../lib/redact.ts";
import { cleanInjected } from "../kimi/journal/clean.ts";
import { cutAtWord } from "./digest.ts";

/** Longest query sent, in characters: more than an embedder reads of it, never more than a search can use. */
export const QUERY_MAX_CHARS = 2000;

/**
 * The query for a prompt: the raw text cut at a word first (so no secret is split before redaction sees
 * it), injected blocks removed, redacted (when `redactIt`), cut at a word to {@link QUERY_MAX_CHARS}.
 */
export function recallQuery(raw: string, redactIt: boolean): string {
  const cleaned = cleanInjected(cutAtWord(raw, 32 * QUERY_MAX_CHARS, ""));
  return cutAtWord(redactIt ? redact(cleaned).trim() : cleaned, QUERY_MAX_CHARS, "");
}
