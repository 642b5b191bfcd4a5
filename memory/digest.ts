/** The digest: a line per memory (text cut at a word, then its URI), profile rows first. Server text in, SafeText out. */

import { neutralize, safe, type SafeText } from "../lib/neutralize.ts";
import { charColumns } from "../lib/columns.ts";
import { isFolderSummary, type Memory } from "./recall.ts";

/** The markers around a digest. */
export const DIGEST_OPEN = safe`<openviking-context>`;
export const DIGEST_CLOSE = safe`</openviking-context>`;

/** A memory line's text at most and at least, in columns. */
const LINE_TEXT_MAX = 220;
const LINE_TEXT_MIN = 24;
/** A profile row in columns, and the rows at most. */
export const PROFILE_ROW = 150;
export const PROFILE_ROWS = 6;

/** The code units of `text`'s longest head whose characters weigh ≤ `max`, and their weight. */
export function headWithin(text: string, max: number, weight: (ch: string) => number) {
  let used = 0;
  let units = 0;
  for (const ch of text) {
    if (used + weight(ch) > max) break;
    used += weight(ch);
    units += ch.length;
  }
  return { units, used };
}

/** How many UTF-16 code units of `text` fit in `width` terminal columns. */
const unitsWithin = (text: string, width: number) => headWithin(text, width, charColumns).units;

let segmenter: Intl.Segmenter | undefined;
const blank = (s: Intl.SegmentData) => /^\s+$/.test(s.segment);

/**
 * `text` cut to ≤ `max` code units, `mark` included, at the last word boundary of the second half (never
 * inside a token such as `sk-…`), else at `max` (whole pairs). @example cutAtWord("tabs over spaces", 12) // "tabs over…"
 */
export function cutAtWord(text: string, max: number, mark = "…"): string {
  if (text.length <= max) return text;
  const room = Math.max(0, max - mark.length);
  const from = Math.max(0, room - 2048);
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "word" });
  let end = 0;
  let prev: Intl.SegmentData | undefined;
  for (const seg of segmenter.segment(text.slice(from, room + 64))) {
    if (seg.index > room - from) break;
    if (prev && (blank(prev) || blank(seg) || (prev.isWordLike && seg.isWordLike))) end = from + seg.index;
    prev = seg;
  }
  if (end < room / 2) {
    end = room;
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
  }
  return `${text.slice(0, end).trimEnd()}${mark}`;
}

/** Untrusted text on one line: neutralised, markdown reduced to words, blanks collapsed; cut to `max`. */
export function oneLine(text: string, max?: number): string {
  const line = neutralize(text.slice(0, 4 * (max ?? LINE_TEXT_MAX * PROFILE_ROWS) + 64))
    .replace(/\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)/gm, "")
    .replace(/\*\*|__/g, "")
    .replace(/\s+/g, " ")
    .trim();
  return max === undefined ? line : cutAtWord(line, max);
}

/** One digest line and the memory it shows. */
export interface DigestLine {
  memory: Memory;
  line: SafeText;
}

/**
 * The lines for `memories` within `limits` (`reserved` taken): the first that are no folder summary, best
 * first, each an equal share of the room left; one whose URI alone does not fit is left out.
 */
export function digestLines(
  memories: readonly Memory[],
  limits: { memories: number; chars: number },
  reserved = 0,
): DigestLine[] {
  const order = memories.filter((m) => !isFolderSummary(m.uri)).slice(0, Math.max(0, limits.memories))
    .sort((a, b) => a.score === undefined || b.score === undefined ? 0 : b.score - a.score);
  const out: DigestLine[] = [];
  let left = limits.chars - reserved;
  order.forEach((memory, i) => {
    const uri = oneLine(memory.uri);
    const tail = uri ? ` (${uri})` : "";
    const frame = `- \n${tail}`.length;
    const text = oneLine(memory.text);
    const room = Math.min(unitsWithin(text, LINE_TEXT_MAX), Math.floor(left / (order.length - i)) - frame);
    if ((!text && !uri) || room < Math.min(LINE_TEXT_MIN, text.length || LINE_TEXT_MIN) || left < frame) {
      return;
    }
    const line = text ? safe`- ${cutAtWord(text, room)}${tail}` : safe`-${tail}`;
    if (line.length + 1 > left) return;
    out.push({ memory, line });
    left -= line.length + 1;
  });
  return out;
}

/** The profile (else the abstracts), its URI, whether it comes again, the rows' characters at most. */
export interface ProfileDigestInput {
  profile: string;
  uri: string;
  abstracts: readonly string[];
  afterCompaction: boolean;
  maxChars?: number;
}

/** A few rows of the profile: a label, then its lines joined with " · ", " …" when cut; [] when empty. */
export function profileDigest(input: ProfileDigestInput): SafeText[] {
  const lines = input.profile ? input.profile.split("\n") : input.abstracts.map((a) => a.split("\n")[0]);
  const pieces = lines.filter((l) => !/^\s{0,3}#{1,6}\s*(?:user\s+)?profile\s*$/i.test(l)).map((l) =>
    oneLine(l)
  )
    .filter(Boolean).map((p) => cutAtWord(p, Math.min(PROFILE_ROW, unitsWithin(p, PROFILE_ROW) + 1)));
  if (!pieces.length) return [];
  const uri = oneLine(input.uri);
  const label = input.afterCompaction ? `Profile, again after compaction (${uri}):` : `Profile (${uri}):`;
  const rows: string[] = [];
  let row = label;
  let cut = false;
  for (const piece of pieces) {
    const joined = row === label ? `${row} ${piece}` : `${row} · ${piece}`;
    if (unitsWithin(joined, PROFILE_ROW) === joined.length) {
      row = joined;
      continue;
    }
    rows.push(row);
    const used = rows.reduce((n, r) => n + r.length + 1, 0);
    cut = rows.length >= PROFILE_ROWS || used + PROFILE_ROW + 1 > (input.maxChars ?? Infinity);
    if (cut) break;
    row = piece;
  }
  if (!cut) rows.push(row);
  else {
    const last = rows.pop()!;
    rows.push(cutAtWord(last, unitsWithin(last, PROFILE_ROW - 2)).replace(/…?$/, " …"));
  }
  // Every piece passed `oneLine` (the gate).
  return rows.map((r) => safe`${r}`);
}
