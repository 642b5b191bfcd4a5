/** The recall query made from a prompt (which may be megabytes: a pasted log): bounded, cleaned, redacted. */

import { redact } from "../lib/redact.ts";
import { cleanInjected } from "../kimi/journal/clean.ts";

/** Longest query sent, in characters: more than an embedder reads of it, never more than a search can use. */
export const QUERY_MAX_CHARS = 2000;

/** `text` cut to at most `max` characters at the last blank of its second half, else at `max` (whole pairs). */
function cutAtBlank(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  for (let i = max; i > max / 2; i--) {
    if (/\s/.test(text[i])) {
      end = i;
      break;
    }
  }
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end).trimEnd();
}

/**
 * The query for a prompt: the raw text cut at a blank first (so no secret is split before redaction sees
 * it), injected blocks removed, redacted (when `redactIt`), cut at a blank to {@link QUERY_MAX_CHARS}.
 */
export function recallQuery(raw: string, redactIt: boolean): string {
  const cleaned = cleanInjected(cutAtBlank(raw, 32 * QUERY_MAX_CHARS));
  return cutAtBlank(redactIt ? redact(cleaned).trim() : cleaned, QUERY_MAX_CHARS);
}
