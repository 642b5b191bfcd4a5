/** The injected text, server text in, SafeText out: the digest (a line per memory), the system prompt's profile block. */

import { cutText, neutralize, PRINT_MAX_CHARS, printable, safe, SafeText } from "../lib/neutralize.ts";
import { headWithin, unitsWithin } from "../lib/columns.ts";
import type { ProfileParts } from "./profile.ts";
import { byRank, isFolderSummary, type Memory } from "./memory.ts";

/** The markers around a digest. */
export const DIGEST_OPEN = safe`<openviking-context>`;
export const DIGEST_CLOSE = safe`</openviking-context>`;

/** A memory line's text at most and at least, in columns. */
const [LINE_TEXT_MAX, LINE_TEXT_MIN] = [220, 24];

/** A character's estimated tokens: a CJK one 1.5, any other a quarter. */
const tokenWeight = (ch: string) => ch.codePointAt(0)! >= 0x3000 ? 1.5 : 0.25;

/** A text's tokens, estimated. */
export const estimateTokens = (text: string): number =>
  Math.ceil(headWithin(text, Infinity, tokenWeight).used);

/** The head of an untrusted text worth reading for a line of at most `max` columns. */
const head = (text: string, max = LINE_TEXT_MAX) => text.slice(0, 4 * max + 64);

/** Untrusted text on one line as it is (a URI, a path): neutralised, blanks collapsed; cut to `max`. */
function flatLine(text: string, max?: number): string {
  const line = neutralize(head(text, max)).replace(/\s+/g, " ").trim();
  return max === undefined ? line : cutText(line, max);
}

/** Untrusted prose on one line: printable, markdown reduced to words, then the gate ({@link flatLine}). */
export const oneLine = (text: string, max?: number): string =>
  flatLine(
    printable(head(text, max)).replace(/\[([^\]\n]*)\]\([^)\n]*\)/g, "$1")
      .replace(/^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)/gm, "").replace(/\*\*|__/g, ""),
    max,
  );

/**
 * The lines for `memories` within `limits` (`reserved` taken): no folder summary, best first, each an equal
 * share of the room left, text and URI as `shown`; one whose URI alone does not fit is left out.
 */
export function digestLines(
  memories: readonly Memory[],
  limits: { memories: number; chars: number },
  reserved = 0,
  shown = (text: string) => text,
): { memory: Memory; line: SafeText }[] {
  const order = memories.filter((m) => !isFolderSummary(m.uri)).slice(0, Math.max(0, limits.memories))
    .sort(byRank);
  const out: { memory: Memory; line: SafeText }[] = [];
  let left = limits.chars - reserved;
  order.forEach((memory, i) => {
    const [uri, text] = [flatLine(shown(memory.uri)), oneLine(shown(memory.text))];
    const tail = uri ? ` (${uri})` : "";
    const frame = `- \n${tail}`.length;
    const room = Math.min(unitsWithin(text, LINE_TEXT_MAX), Math.floor(left / (order.length - i)) - frame);
    if ((!text && !uri) || room < Math.min(LINE_TEXT_MIN, text.length || LINE_TEXT_MIN) || left < frame) {
      return;
    }
    const line = text ? safe`- ${cutText(text, room)}${tail}` : safe`-${tail}`;
    if (line.length + 1 > left) return;
    out.push({ memory, line });
    left -= line.length + 1;
  });
  return out;
}

/** A profile within `tokens`: as it is, else its first 8 and last 3 lines, else cut (saying so). */
export function fitProfile(text: string, tokens: number): string {
  if (estimateTokens(text) <= tokens) return text;
  const lines = text.split("\n");
  const elided = [...lines.slice(0, 8), "... [profile middle elided] ...", ...lines.slice(-3)].join("\n");
  if (lines.length > 12 && estimateTokens(elided) <= tokens) return elided;
  const units = headWithin(text, Math.max(0, tokens - 6), tokenWeight).units;
  return `${cutText(text, units, "", "any")}\n... [profile truncated]`;
}

/** The memories folder of a user space as printed: all but letters, digits and `_.@-` %-encoded. */
function spaceUri(space: string): string {
  const hex = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`;
  const encode = (c: string) => encodeURIComponent(c).replace(/[!'()*~]/g, hex);
  return `viking://user/${
    space.slice(0, 128).toWellFormed().replace(/[^\p{L}\p{N}_.@-]/gu, encode)
  }/memories`;
}

/** The profile block within `budget` tokens: `<user-profile>` (≤ half), then `<available-memories>`; null if empty. */
export function renderProfile(parts: ProfileParts, budget: number): SafeText | null {
  const base = safe`${spaceUri(parts.space)}`;
  const [sections, listing]: SafeText[][] = [[], []];
  let used = 0;
  const profile = neutralize(parts.profile.slice(0, PRINT_MAX_CHARS)).trim();
  if (profile) {
    sections.push(
      safe`<user-profile uri="${base}/profile.md">\n${fitProfile(profile, budget / 2 | 0)}\n</user-profile>`,
    );
    used += estimateTokens(sections[0].text);
  }
  for (const [name, leaves] of [["preferences", parts.preferences], ["entities", parts.entities]] as const) {
    if (!leaves.length) continue;
    listing.push(safe`  ${base}/${name}/`);
    let shown = 0;
    for (const leaf of leaves) {
      const abstract = oneLine(leaf.abstract, 200);
      const line = safe`    - ${flatLine(leaf.path, 200)}${abstract ? ` — ${abstract}` : ""}`;
      if (used + estimateTokens(line.text) > budget) break;
      used += estimateTokens(line.text);
      listing.push(line);
      shown++;
    }
    if (shown < leaves.length) {
      listing.push(safe`    ... +${leaves.length - shown} more: use the search MCP tool`);
    }
  }
  if (listing.length) {
    sections.push(safe`<available-memories>\n${SafeText.join(listing, safe`\n`)}\n</available-memories>`);
  }
  return sections.length ? SafeText.join(sections, safe`\n`) : null;
}
