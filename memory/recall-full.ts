/**
 * The full output format of a recall (OpenViking's own plugins' blocks, `OPENVIKING_RECALL_FORMAT=full`):
 * the server's assembled text, or the memories in its `<memory>` form, or the find fallback's lines within
 * the token budget. Every server text in it is cut and neutralised (pure).
 */

import { neutralize, safe, SafeText } from "../lib/neutralize.ts";
import { type Block, PRINT_MAX_CHARS } from "../lib/printed.ts";
import { type Memory, renderElement } from "./recalled.ts";
import type { RecallResult, RecallSettings } from "./recall-types.ts";

/** The full format's headers (server-assembled text, the find fallback's lines) and its markers. */
const CONTEXT_HEADER = safe`Relevant memory from OpenViking. Use the search/read MCP tools to expand URIs.`;
const FIND_HEADER = safe`Relevant context from OpenViking. Use the read MCP tool to expand URIs.`;
const OPEN = safe`<openviking-context>`;
const CLOSE = safe`</openviking-context>`;

/** Token estimate used for budgets: a quarter of the characters. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Server text, cut to what could ever be printed, then neutralised (a server may send megabytes). */
function untrusted(text: string, max = PRINT_MAX_CHARS): string {
  return neutralize(text.length > max ? text.slice(0, max) : text);
}

/** Wraps server-assembled text in the documented block. */
function contextBlock(text: string): Block {
  return { open: OPEN, body: safe`${CONTEXT_HEADER}\n${untrusted(text).trim()}`, close: CLOSE };
}

/** One line of server text: neutralised, whitespace collapsed, at most `max` characters (then "..."). */
function oneLine(text: string, max: number): string {
  const line = untrusted(text, max * 4 + 64).replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** The find fallback's block in the full format, within the token budget (pure). */
function findBlock(memories: readonly Memory[], s: RecallSettings): Block | undefined {
  if (!memories.length) return undefined;
  const budget = Math.max(200, s.recallTokenBudget);
  const max = Math.max(50, s.recallMaxContentChars);
  let used = estimateTokens(FIND_HEADER.text);
  const lines: SafeText[] = [];
  for (const m of memories) {
    const pct = Math.round(Math.min(1, Math.max(0, m.score ?? 0)) * 100);
    const bucket = m.category ?? "memory";
    const uri = oneLine(m.uri, 1000);
    let line = safe`- [${bucket} ${pct}%] ${oneLine(m.text, max) || uri}`;
    if (used + estimateTokens(line.text) > budget) line = safe`- [${bucket} ${pct}%] ${uri}`;
    used += estimateTokens(line.text);
    lines.push(line);
  }
  return { open: OPEN, body: SafeText.join([FIND_HEADER, ...lines], safe`\n`), close: CLOSE };
}

/**
 * The full output format of a recall (OpenViking's own plugins' block), showing `shown` of its memories:
 * the server's assembled text as it is when nothing is left out, else the memories to show in the server's
 * `<memory>` form; the find fallback's lines. Every server text in it is neutralised. Undefined when there is
 * nothing to show.
 */
export function fullRecallBlock(
  r: RecallResult,
  shown: readonly Memory[],
  s: RecallSettings,
): Block | undefined {
  if (r.source === "find") return findBlock(shown, s);
  // Nothing left out: the server's own text, as it sent it. Else the memories still to show, in its form.
  if (r.assembled !== undefined && shown.length === r.memories.length) return contextBlock(r.assembled);
  if (!shown.length) return undefined;
  return contextBlock(shown.map(renderElement).join("\n"));
}
