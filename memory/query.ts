/** The recall query made from a prompt (which may be megabytes: a pasted log): bounded, cleaned, redacted. */

import { redact } from "../lib/redact.ts";
import { cutText } from "../lib/neutralize.ts";
import { cleanInjected } from "../kimi/journal/clean.ts";

/** Longest query sent, in characters. */
export const QUERY_MAX_CHARS = 2000;

/** The query: the raw text cut at a word first (no secret split before redaction), cleaned, redacted, cut. */
export function recallQuery(raw: string, redactIt: boolean): string {
  const cleaned = cleanInjected(cutText(raw, 32 * QUERY_MAX_CHARS, ""));
  return cutText(redactIt ? redact(cleaned).trim() : cleaned, QUERY_MAX_CHARS, "");
}
