/** Pure helpers to re-serialize a JSON file the way it was written (indent, line ending, final newline). */

import { isRecord } from "../lib/parsed.ts";

/** How a JSON file is laid out. */
export interface JsonStyle {
  indent: string;
  eol: "\n" | "\r\n";
  finalNewline: boolean;
}

/** The layout of existing JSON text (2 spaces, LF and a final newline for a new file). */
export function jsonStyle(text: string | undefined): JsonStyle {
  if (text === undefined || text.trim() === "") return { indent: "  ", eol: "\n", finalNewline: true };
  const m = /\n([ \t]+)\S/.exec(text);
  return {
    indent: m ? m[1] : "  ",
    eol: text.includes("\r\n") ? "\r\n" : "\n",
    finalNewline: /\n$/.test(text),
  };
}

/** Serializes `value` in `style`. */
export function formatJson(value: unknown, style: JsonStyle): string {
  let text = JSON.stringify(value, null, style.indent);
  if (style.eol === "\r\n") text = text.replace(/\n/g, "\r\n");
  return style.finalNewline ? text + style.eol : text;
}

/** Parses JSON text, describing the error instead of throwing. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text.replace(/^\uFEFF/, "")) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

// --- Where things are in JSON text, for edits that leave every other byte alone. ---

/** One member of a JSON object in its text (UTF-16 offsets). */
export interface JsonMemberSpan {
  /** The key, decoded (`"a\u0062"` is `ab`). */
  key: string;
  /** Just after the `{` or `,` before the member: `[leadStart, keyStart)` is the whitespace before its key. */
  leadStart: number;
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

/** A JSON object in its text: `text[open] === "{"`, `text[close] === "}"`. */
export interface JsonObjectSpan {
  open: number;
  close: number;
  members: JsonMemberSpan[];
}

const isJsonSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r";

function skipSpace(text: string, i: number): number {
  while (isJsonSpace(text[i])) i++;
  return i;
}

/** The end of the string literal starting at `i` (`text[i] === '"'`), or -1. */
function skipString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === "\\") j++;
    else if (text[j] === '"') return j + 1;
  }
  return -1;
}

/** The end of the JSON value starting at `i`, or -1. Iterative, so any nesting depth is fine. */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < text.length; j++) {
      const d = text[j];
      if (d === '"') {
        j = skipString(text, j) - 1;
        if (j < 0) return -1;
      } else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < text.length && /[-+.0-9a-zA-Z]/.test(text[j])) j++;
  return j > i ? j : -1;
}

/**
 * The members of the object whose `{` is at `open`. Meant for text `JSON.parse` accepted: it finds spans, it
 * does not validate (undefined when the text is not shaped like an object there).
 */
export function locateObject(text: string, open: number): JsonObjectSpan | undefined {
  if (text[open] !== "{") return undefined;
  const members: JsonMemberSpan[] = [];
  let leadStart = open + 1;
  let i = skipSpace(text, leadStart);
  if (text[i] === "}") return { open, close: i, members };
  while (i < text.length) {
    if (text[i] !== '"') return undefined;
    const keyStart = i;
    const keyEnd = skipString(text, i);
    if (keyEnd < 0) return undefined;
    let key: string;
    try {
      key = JSON.parse(text.slice(keyStart, keyEnd)) as string;
    } catch {
      return undefined;
    }
    i = skipSpace(text, keyEnd);
    if (text[i] !== ":") return undefined;
    const valueStart = skipSpace(text, i + 1);
    const valueEnd = skipValue(text, valueStart);
    if (valueEnd < 0) return undefined;
    members.push({ key, leadStart, keyStart, keyEnd, valueStart, valueEnd });
    i = skipSpace(text, valueEnd);
    if (text[i] === "}") return { open, close: i, members };
    if (text[i] !== ",") return undefined;
    leadStart = i + 1;
    i = skipSpace(text, leadStart);
  }
  return undefined;
}

/** The top-level object of a JSON document (after an optional BOM), or undefined when it is not one. */
export function locateRoot(text: string): JsonObjectSpan | undefined {
  const root = locateObject(text, skipSpace(text, text.startsWith("\uFEFF") ? 1 : 0));
  return root && skipSpace(text, root.close + 1) === text.length ? root : undefined;
}

/** How JSON we add is laid out: on one line (`indent` undefined) or one member / item per line. */
export interface JsonLayout {
  /** One level of indentation; undefined for one line. */
  indent?: string;
  eol: string;
  /** Between a key and its value (`": "`, `":"`). */
  colon: string;
  /** Between members / items on one line (`", "`, `","`). */
  comma: string;
}

/** Renders `value` in `layout`; continuation lines start with `base` (the indentation of the first line). */
export function renderJson(value: unknown, layout: JsonLayout, base = ""): string {
  const entries: [string | undefined, unknown][] | undefined = Array.isArray(value)
    ? value.map((v) => [undefined, v])
    : isRecord(value)
    ? Object.entries(value)
    : undefined;
  if (entries === undefined) return JSON.stringify(value) ?? "null";
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) return open + close;
  const inner = layout.indent === undefined ? base : base + layout.indent;
  const items = entries.map(([k, v]) =>
    (k === undefined ? "" : JSON.stringify(k) + layout.colon) + renderJson(v, layout, inner)
  );
  if (layout.indent === undefined) return open + items.join(layout.comma) + close;
  const sep = layout.eol + inner;
  return open + sep + items.join("," + sep) + layout.eol + base + close;
}

/** The indentation (spaces and tabs) at the start of the line holding offset `pos`. */
export function lineIndent(text: string, pos: number): string {
  let start = pos;
  while (start > 0 && text[start - 1] !== "\n" && text[start - 1] !== "\r") start--;
  return /^\uFEFF?([ \t]*)/.exec(text.slice(start, pos))![1];
}
