/**
 * Pure text splicing of our marked block in Kimi's config.toml (toml-config.ts proves a splice keeps the
 * meaning of every key the user wrote, and plans install and uninstall).
 *
 * Placement: a new block goes at the very end of the file, so no key of the user's can ever follow one of
 * our `[[hooks]]` headers (TOML would read such a key as part of our table). A block that is already there is
 * replaced in place. The file's trailing-newline state is kept: a file that ended without a newline gets
 * `<newline><block>` (block last, no newline after it); otherwise `<block><newline>`. Removal undoes exactly
 * that, so install → uninstall gives back the same bytes. Every result is parsed with smol-toml and compared
 * with the user's own document before anyone writes it.
 */

import { parse } from "smol-toml";
import { BLOCK_BEGIN, BLOCK_END, type HookEntry } from "./spec.ts";
import { VERSION } from "../lib/version.ts";

/** A line ending. */
export type Eol = "\n" | "\r\n";

/** A marked block found in the text: `[start, end)` covers the begin marker line through the end marker (no EOL). */
export interface BlockRange {
  start: number;
  end: number;
  /** The text of the block, markers included. */
  text: string;
}

/** Outcome of parsing TOML. */
export type ParseResult = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** Parses TOML with smol-toml without throwing. */
export function parseToml(text: string): ParseResult {
  try {
    return { ok: true, value: parse(text) as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: (error as Error).message.split("\n")[0] };
  }
}

/** The file's line ending: CRLF if its first line ends so, else LF. */
export function detectEol(text: string): Eol {
  const i = text.indexOf("\n");
  return i > 0 && text[i - 1] === "\r" ? "\r\n" : "\n";
}

/** A TOML basic string. */
function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** The comment line that records that install created config.toml (so uninstall deletes it again). */
export const CREATED_LINE =
  "# openviking-kimi created this file: uninstall deletes it when nothing else is left.";

/** Renders our block (markers included, no trailing line ending). */
export function renderBlock(entries: readonly HookEntry[], eol: Eol, createdFile = false): string {
  const lines = [
    BLOCK_BEGIN,
    `# Written by openviking-kimi ${VERSION}; \`openviking-kimi uninstall\` removes it. Edits inside are replaced.`,
    ...(createdFile ? [CREATED_LINE] : []),
  ];
  for (const e of entries) {
    lines.push("[[hooks]]", `event = ${tomlString(e.event)}`);
    if (e.matcher !== undefined) lines.push(`matcher = ${tomlString(e.matcher)}`);
    lines.push(`command = ${tomlString(e.command)}`, `timeout = ${e.timeout}`);
  }
  lines.push(BLOCK_END);
  return lines.join(eol);
}

/** Whether a line is the marker line `marker` (surrounding blanks and a CR aside). */
function isMarker(line: string, marker: string): boolean {
  return line.replace(/\r$/, "").trim() === marker;
}

/** Finds our marked blocks, or explains why the markers are unusable. */
export function findBlocks(text: string): { blocks: BlockRange[] } | { error: string } {
  const blocks: BlockRange[] = [];
  let open: number | undefined;
  let pos = 0;
  let lineNo = 0;
  while (pos <= text.length) {
    const nl = text.indexOf("\n", pos);
    const lineEnd = nl < 0 ? text.length : nl;
    const line = text.slice(pos, lineEnd);
    const contentEnd = line.endsWith("\r") ? lineEnd - 1 : lineEnd;
    lineNo++;
    if (isMarker(line, BLOCK_BEGIN)) {
      if (open !== undefined) {
        return { error: `config.toml line ${lineNo}: a second "${BLOCK_BEGIN}" before the block was closed` };
      }
      open = pos;
    } else if (isMarker(line, BLOCK_END)) {
      if (open === undefined) {
        return { error: `config.toml line ${lineNo}: "${BLOCK_END}" without a matching begin line` };
      }
      blocks.push({ start: open, end: contentEnd, text: text.slice(open, contentEnd) });
      open = undefined;
    }
    if (nl < 0) break;
    pos = nl + 1;
  }
  if (open !== undefined) return { error: `config.toml: "${BLOCK_BEGIN}" is never closed by "${BLOCK_END}"` };
  return { blocks };
}

/** The exact range a block occupies together with the line ending that install added for it. */
function removalRange(text: string, b: BlockRange): [number, number] {
  if (text.startsWith("\r\n", b.end)) return [b.start, b.end + 2];
  if (text.startsWith("\n", b.end)) return [b.start, b.end + 1];
  if (b.start >= 2 && text.slice(b.start - 2, b.start) === "\r\n") return [b.start - 2, b.end];
  if (b.start >= 1 && text[b.start - 1] === "\n") return [b.start - 1, b.end];
  return [b.start, b.end];
}

/** Removes the given blocks (as install placed them). */
export function removeRanges(text: string, blocks: readonly BlockRange[]): string {
  let out = text;
  for (const b of [...blocks].reverse()) {
    const [s, e] = removalRange(out, b);
    out = out.slice(0, s) + out.slice(e);
  }
  return out;
}

/** Removes every marked block; text without blocks is returned unchanged. */
export function removeBlocks(text: string): string {
  const found = findBlocks(text);
  if ("error" in found) throw new Error(found.error);
  return removeRanges(text, found.blocks);
}

/** Puts `block` into `text`: in place of the first existing block (dropping the others), else at the end. */
export function spliceBlock(text: string, block: string): string {
  const found = findBlocks(text);
  if ("error" in found) throw new Error(found.error);
  const [first, ...rest] = found.blocks;
  if (first) {
    const kept = removeRanges(text, rest);
    return kept.slice(0, first.start) + block + kept.slice(first.end);
  }
  const eol = detectEol(text);
  if (text === "" || text.endsWith("\n")) return text + block + eol;
  return text + eol + block;
}
