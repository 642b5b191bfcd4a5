/** Text in terminal columns (marks and joiners 0, wide and emoji 2, the rest 1): preview, wrap, age, plural. */

import { cutText, neutralize } from "./neutralize.ts";

const WIDE =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1faff}\u{20000}-\u{3fffd}]/u;

const ZERO_WIDTH = /^[\p{M}\u200b-\u200d]$/u;

/** Terminal columns of one character (one code point): 0, 1 or 2. */
export const charColumns = (char: string): number => ZERO_WIDTH.test(char) ? 0 : WIDE.test(char) ? 2 : 1;

/** The code units of `text`'s longest head weighing ≤ `max` (in columns, else by `weight`), and its weight. */
export function headWithin(text: string, max: number, weight = charColumns) {
  let [used, units] = [0, 0];
  for (const ch of text) {
    if (used + weight(ch) > max) break;
    used += weight(ch);
    units += ch.length;
  }
  return { units, used };
}

/** Terminal columns of one line of text; how many UTF-16 code units of `text` fit in `width` columns. */
export const textColumns = (text: string): number => headWithin(text, Infinity).used;
export const unitsWithin = (text: string, width: number): number => headWithin(text, width).units;

/** `text` as one line of at most `width` terminal columns: whitespace runs become a space, a cut ends in `…`. */
export function preview(text: string, width: number): string {
  const flat = neutralize(text).replace(/\s+/g, " ").trim();
  return textColumns(flat) <= width ? flat : `${cutText(flat, unitsWithin(flat, width - 1), "", "any")}…`;
}

/** The width help, usage lines and the reports are wrapped to. */
export const WIDTH = 80;

/**
 * `line` wrapped at spaces into lines of at most `width`, continuations indented by `indent`; a word (a URI)
 * is never broken, and the line's indent and list marker (`+ `, `- `) stay with its first word.
 */
export function wrap(line: string, indent: string, width = WIDTH): string[] {
  if (textColumns(line) <= width) return [line];
  const lead = /^ *(?:[+-] )?/.exec(line)![0];
  const [first, ...words] = line.slice(lead.length).split(/(?<= )(?=[^ ])/);
  const out = [`${lead}${first}`];
  for (const word of words) {
    if (textColumns(out.at(-1)!) + textColumns(word.trimEnd()) <= width) out[out.length - 1] += word;
    else out.push(`${indent}${word}`);
  }
  return out.map((l) => l.trimEnd());
}

/** `lines` wrapped, each continuation indented two more than its line. */
export const wrapLines = (lines: readonly string[]): string[] =>
  lines.flatMap((l) => wrap(l, `${/^ */.exec(l)![0]}  `));

/** `n` and the word for that many: `plural(1, "memory", "memories")` is "1 memory". */
export const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** A time as a short age ("4 min ago"). */
export function ago(at: number, now: number): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return s < 86_400 ? `${Math.round(s / 3600)} h ago` : `${Math.round(s / 86_400)} d ago`;
}
