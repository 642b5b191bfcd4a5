/**
 * The recall query made from a prompt: bounded, cleaned of injected blocks, redacted like captured text.
 * A prompt may be megabytes (a pasted log); the query never is.
 */

import { redact } from "../lib/redact.ts";
import { cleanInjected } from "../kimi/journal/clean.ts";

/**
 * Longest query sent, in characters. OpenViking embeds the query (dense embedders read 512–8192 tokens;
 * 2000 characters ≈ 500 tokens of English fit even the smallest window, so nothing a server could use is
 * lost) and may expand it with a model; a search gains nothing from more than the prompt's first
 * paragraphs.
 */
export const QUERY_MAX_CHARS = 2000;

/** How much of the raw prompt is cleaned and redacted at all: generous, since cleaning may remove a lot. */
const QUERY_RAW_MAX_CHARS = 32 * QUERY_MAX_CHARS;

/** `text` cut to at most `max` characters at the last whitespace in its second half, else at `max`. */
function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  for (let i = max; i > max / 2; i--) {
    if (/\s/.test(text[i])) {
      end = i;
      break;
    }
  }
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end).trimEnd();
}

/**
 * The query for a prompt: the raw text cut cheaply first (at a word, so no secret is split before
 * redaction sees it), then cleaned and (when `redactIt`) redacted, then cut to {@link QUERY_MAX_CHARS} at a
 * word boundary.
 */
export function recallQuery(raw: string, redactIt: boolean): string {
  const cleaned = cleanInjected(cutAtWord(raw, QUERY_RAW_MAX_CHARS));
  return cutAtWord(redactIt ? redact(cleaned).trim() : cleaned, QUERY_MAX_CHARS);
}
