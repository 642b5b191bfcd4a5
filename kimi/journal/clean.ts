/** Text cleaning for capture: injected blocks stripped, then the filters and truncation (`prepareText`). */

import { redact } from "../../lib/redact.ts";
import { cutText } from "../../lib/neutralize.ts";

/** Where an open or close tag (group 1: "/") of a tag whose whole element is injected context (group 2) starts. */
const TAG =
  /<(\/)?(openviking-context|user-profile|available-memories|system-reminder|hook_result)(?=[\s>/])/gi;

/** The blanks and `>` that end a close tag; the next `<` or `>` (where an open tag's attributes stop). */
const [CLOSE_END, ANGLE] = [/\s*>/y, /[<>]/g];

/** Removes the whole elements of those tags (matched like brackets per tag, `<tag/>` too); a lone open or close is text. */
function removeElements(text: string): string {
  const [spans, opens]: [[number, number][], Record<string, number[]>] = [[], {}];
  TAG.lastIndex = 0;
  for (let m = TAG.exec(text); m; m = TAG.exec(text)) {
    const [after, name] = [m.index + m[0].length, m[2].toLowerCase()];
    if (m[1]) { // a close tag
      CLOSE_END.lastIndex = after;
      if (!CLOSE_END.exec(text)) continue;
      const start = opens[name]?.pop();
      if (start !== undefined) spans.push([start, CLOSE_END.lastIndex]);
      TAG.lastIndex = CLOSE_END.lastIndex;
      continue;
    }
    ANGLE.lastIndex = after;
    const angle = ANGLE.exec(text);
    if (!angle || angle[0] === "<") continue; // not an open tag: its attributes never end
    if (text[angle.index - 1] === "/") spans.push([m.index, angle.index + 1]); // self-closing
    else (opens[name] ??= []).push(m.index);
    TAG.lastIndex = angle.index + 1;
  }
  if (!spans.length) return text;
  spans.sort((a, b) => a[0] - b[0]);
  let [out, at] = ["", 0];
  for (const [start, end] of spans) {
    if (end <= at) continue; // inside a span already removed
    out += text.slice(at, start);
    at = end;
  }
  return out + text.slice(at);
}

/** Removes every injected block, NULs and lone surrogates (U+FFFD: OpenViking 0.5.2 refuses them), extra blanks. */
export function cleanInjected(text: string): string {
  const out = removeElements(text.replace(/\0/g, "").toWellFormed());
  // Trailing blanks go from every line; a run is tried from its start only, so a long one costs its length once.
  return out.replace(/(?<![ \t])[ \t]+(?=\n|$)/g, "").replace(/\n{3,}/g, "\n\n").trim();
}

/** Acknowledgements: a message that is only one of these is not captured. */
const ACKS = new Set(
  ("ok|okay|k|kk|yes|yep|yeah|y|no|nope|n|sure|thanks|thank you|thx|ty|got it|cool|nice|great|" +
    "go|go on|continue|next|done|good|fine|lgtm|收到|好的|好|嗯|嗯嗯|可以|继续|不用|不需要|没了|好了|谢谢|行|对")
    .split("|"),
);

/** Why a text is not captured, or "" when it is. */
export type SkipReason = "" | "empty" | "ack" | "slash-command" | "punctuation" | "too-short";

/** Kana, CJK ideographs (and Extension A, compatibility) and Hangul syllables: a character is a word of text. */
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/;

/** A one-line `/command` with at most three arguments (a path like "/tmp is full, clean it" is not one). */
function isSlashCommand(text: string): boolean {
  if (text.includes("\n")) return false;
  const m = /^\/[a-z0-9_:-]{1,64}(?:\s+(.*))?$/i.exec(text);
  return m !== null && (m[1] ?? "").split(/\s+/).filter(Boolean).length <= 3;
}

/** A text without blanks, punctuation and symbols at either end (the trailing run backtracked once: linear). */
const CORE = /[^\s\p{P}\p{S}](?:.*[^\s\p{P}\p{S}])?/su;

/** The capture filters: why `text` (already cleaned) from `role` should not be captured, or "". */
export function skipReason(text: string, role: "user" | "assistant"): SkipReason {
  const t = text.trim();
  if (!t) return "empty";
  if (role === "user" && isSlashCommand(t)) return "slash-command";
  const bare = CORE.exec(t.toLowerCase())?.[0] ?? "";
  if (!bare) return "punctuation";
  if (ACKS.has(bare)) return "ack";
  if (t.length >= 12) return "";
  let [cjk, alnum] = [0, 0];
  for (const ch of t) {
    if (CJK.test(ch)) cjk++;
    else if (/[\p{L}\p{N}]/u.test(ch)) alnum++;
  }
  return cjk < 4 && alnum < 6 ? "too-short" : "";
}

/** Marker appended to a truncated text. */
export const TRUNCATION_MARK = "\n[truncated]";

/**
 * A message's text after cleaning, redaction and the filters: `{text}` to send or `{reason}` to skip; secrets of
 * `seen` and `prints` (lib/redact.ts `redact`) hidden where they recur bare; with `prints`, a text longer than
 * `maxLength` is redacted and judged by its head only.
 */
export function prepareText(
  raw: string,
  role: "user" | "assistant",
  options: { maxLength: number; redact: boolean; seen?: Set<string>; prints?: ReadonlySet<string> },
): { text: string; reason: SkipReason } {
  const cleaned = cleanInjected(raw);
  const safe = options.redact
    ? redact(cleaned, options.seen, options.prints, options.maxLength).trim()
    : cleaned;
  const reason = skipReason(safe, role);
  return { text: reason ? "" : cutText(safe, options.maxLength, TRUNCATION_MARK, "any"), reason };
}
