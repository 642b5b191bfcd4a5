/**
 * The digest: what the prompt hook prints by default — short, one line per memory (its text on one line,
 * cut at a word boundary, then its URI in parentheses, which the MCP read tool takes as it is), within a
 * number of memories and a number of characters; and, on the first prompt of a session in config mode, a
 * few rows of the user's profile. Pure: memories in, lines of {@link SafeText} out (every server text passes
 * the gate in neutralize.ts on its way in).
 */

import { neutralize, safe, type SafeText } from "../lib/neutralize.ts";
import { charColumns } from "../lib/columns.ts";
import { isFolderSummary, type Memory } from "./recalled.ts";

/** How much one digest may hold. */
export interface DigestLimits {
  /** Memories at most. */
  memories: number;
  /** Characters at most, the markers around the lines included. */
  chars: number;
}

/** The markers around a digest (the same ones capture removes, with everything between them). */
export const DIGEST_OPEN = safe`<openviking-context>`;
export const DIGEST_CLOSE = safe`</openviking-context>`;

/** Widest text of one memory line, in terminal columns: a long abstract is a paragraph; the URI leads to the rest. */
const LINE_TEXT_MAX = 220;
/** Shortest text worth a line: below it the line would say nothing but its URI. */
const LINE_TEXT_MIN = 24;
/** A profile row, in terminal columns: one row at 160 columns under Kimi's 3-column indent, with room to spare. */
export const PROFILE_ROW = 150;
/** Profile rows at most (the label shares the first). */
export const PROFILE_ROWS = 6;

const ELLIPSIS = "…";

/** How many UTF-16 code units of `text` fit in `width` terminal columns. */
function unitsWithin(text: string, width: number): number {
  let cols = 0;
  let units = 0;
  for (const ch of text) {
    cols += charColumns(ch);
    if (cols > width) break;
    units += ch.length;
  }
  return units;
}

/** Untrusted text on one line: neutralised, markdown markers and links reduced to their words, blanks collapsed. */
export function oneLine(text: string): string {
  return neutralize(text.slice(0, 4 * LINE_TEXT_MAX * PROFILE_ROWS))
    .replace(/\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
    .replace(/^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)/gm, "")
    .replace(/\*\*|__/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

let words: Intl.Segmenter | undefined;

/**
 * `text` cut to at most `max` characters (the ellipsis included) at a word boundary — a space in most
 * scripts, a word as the Unicode segmenter sees it in CJK, which has no spaces — never inside a surrogate
 * pair; unchanged when it fits.
 */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = Math.max(0, max - ELLIPSIS.length);
  words ??= new Intl.Segmenter(undefined, { granularity: "word" });
  let end = 0;
  for (const { segment, index } of words.segment(text.slice(0, room + 64))) {
    if (index + segment.length > room) break;
    end = index + segment.length;
  }
  if (end < room / 2) { // one word longer than half the room: cut inside it rather than lose the line
    end = room;
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
  }
  return `${text.slice(0, end).trimEnd()}${ELLIPSIS}`;
}

/**
 * The memories a digest shows, in the server's choice and in score order (highest first; without scores, the
 * server's order): never a folder's summary, which is no memory.
 */
function shownOrder(memories: readonly Memory[], limit: number): Memory[] {
  const chosen = memories.filter((m) => !isFolderSummary(m.uri)).slice(0, Math.max(0, limit));
  return chosen.sort((a, b) => a.score === undefined || b.score === undefined ? 0 : b.score - a.score);
}

/** One digest line and the memory it shows. */
export interface DigestLine {
  memory: Memory;
  line: SafeText;
}

/**
 * The lines for `memories` within `limits`, `reserved` characters of it already taken (the markers, a
 * profile): each memory's text gets an equal share of what is left, the room a short one leaves going to
 * the next; a memory whose URI alone does not fit is left out.
 */
export function digestLines(memories: readonly Memory[], limits: DigestLimits, reserved = 0): DigestLine[] {
  const order = shownOrder(memories, limits.memories);
  const out: DigestLine[] = [];
  let left = limits.chars - reserved;
  order.forEach((memory, i) => {
    const uri = oneLine(memory.uri);
    const tail = uri ? ` (${uri})` : "";
    const frame = `- \n${tail}`.length;
    const share = Math.floor(left / (order.length - i)) - frame;
    const text = oneLine(memory.text);
    const room = Math.min(unitsWithin(text, LINE_TEXT_MAX), share, LINE_TEXT_MAX);
    if (!text && !uri) return;
    if (room < Math.min(LINE_TEXT_MIN, text.length || LINE_TEXT_MIN) || left < frame) return;
    const line = text ? safe`- ${cutAtWord(text, room)}${tail}` : safe`-${tail}`;
    if (line.length + 1 > left) return;
    out.push({ memory, line });
    left -= line.length + 1;
  });
  return out;
}

/** The profile, as the digest shows it: its text, where it is, and whether compaction brought it back. */
export interface ProfileDigestInput {
  /** profile.md's text (untrusted); "" when there is none. */
  profile: string;
  /** Its URI. */
  uri: string;
  /** Abstracts of the user's preference and entity memories, used when there is no profile text. */
  abstracts: readonly string[];
  /** Printed again because a compaction dropped the session's first copy. */
  afterCompaction: boolean;
  /** Characters the rows may take together, newlines included (default: no limit but the rows'). */
  maxChars?: number;
}

/** The profile's pieces: its lines on one line each, headings and blank lines dropped, each cut to a row. */
function profilePieces(input: ProfileDigestInput): string[] {
  const lines = input.profile ? input.profile.split("\n") : input.abstracts.map((a) => a.split("\n")[0]);
  return lines
    .filter((l) => !/^\s{0,3}#{1,6}\s*(?:user\s+)?profile\s*$/i.test(l))
    .map(oneLine)
    .filter(Boolean)
    .map((p) => cutAtWord(p, Math.min(PROFILE_ROW, unitsWithin(p, PROFILE_ROW) + 1)));
}

/**
 * A few rows of the profile: a label naming its URI (and, after a compaction, saying so), then its lines
 * joined with " · " into rows of at most {@link PROFILE_ROW} characters, at most {@link PROFILE_ROWS} rows
 * and `maxChars` in all, an ellipsis when more was left out. Empty when there is nothing to show.
 */
export function profileDigest(input: ProfileDigestInput): SafeText[] {
  const pieces = profilePieces(input);
  if (!pieces.length) return [];
  const label = input.afterCompaction
    ? safe`Profile, again after compaction (${oneLine(input.uri)}):`
    : safe`Profile (${oneLine(input.uri)}):`;
  const rows: string[] = [];
  let row = label.text;
  let cut = false;
  for (const piece of pieces) {
    const joined = row === label.text ? `${row} ${piece}` : `${row} · ${piece}`;
    if (unitsWithin(joined, PROFILE_ROW) === joined.length) {
      row = joined;
      continue;
    }
    rows.push(row);
    // The next row may grow to a whole PROFILE_ROW: it starts only when one fits in what is left.
    const used = rows.reduce((n, r) => n + r.length + 1, 0);
    if (rows.length >= PROFILE_ROWS || used + PROFILE_ROW + 1 > (input.maxChars ?? Infinity)) {
      cut = true;
      break;
    }
    row = piece;
  }
  if (!cut) rows.push(row);
  else {
    const last = rows[rows.length - 1];
    rows[rows.length - 1] = cutAtWord(last, unitsWithin(last, PROFILE_ROW - 2)).replace(/…?$/, " …");
  }
  // Every piece went through `oneLine` (the gate) already; neutralising again changes nothing.
  return rows.map((r) => safe`${r}`);
}
