/**
 * Pure planning of our one key in Kimi's `mcp.json` (`mcpServers.openviking`): upsert on install, removal on
 * uninstall only when the entry is ours. The text is edited, not re-serialised: only our member's span
 * changes (inserted after the last sibling in its layout, replaced in place, or removed with its comma), so a
 * BOM, CRLF, escapes like `\u00e9`, numbers of any size or spelling (`1.0`, 20 digits) and the layout of
 * everything else stay byte for byte. A file `JSON.parse` refuses is refused.
 */

import * as z from "zod/mini";
import { MCP_SERVER_NAME } from "./spec.ts";
import { deepEqual, isRecord } from "../lib/parsed.ts";
import {
  type JsonLayout,
  type JsonMemberSpan,
  type JsonObjectSpan,
  jsonStyle,
  lineIndent,
  locateObject,
  locateRoot,
  parseJson,
  renderJson,
} from "./json-file.ts";

/** The stdio server entry we write. */
export interface McpEntry {
  command: string;
  args: string[];
}

/** Who wrote an `mcpServers.openviking` entry. */
export type McpOwner = "ours" | "upstream" | "foreign" | "absent";

const McpFileSchema = z.looseObject({ mcpServers: z.optional(z.record(z.string(), z.unknown())) });

const EntrySchema = z.looseObject({
  command: z.optional(z.string()),
  args: z.optional(z.array(z.string())),
  env: z.optional(z.record(z.string(), z.unknown())),
  url: z.optional(z.string()),
});

/** Classifies an entry: ours (runs `openviking-kimi mcp` / `… main.ts mcp`), OpenViking's Node proxy, or other. */
export function classifyMcpEntry(entry: unknown): McpOwner {
  if (entry === undefined) return "absent";
  const parsed = EntrySchema.safeParse(entry);
  if (!parsed.success) return "foreign";
  const { command = "", args = [], env = {} } = parsed.data;
  if (args.some((a) => /mcp-proxy\.mjs$/.test(a)) || "OPENVIKING_INTEGRATION_ID" in env) return "upstream";
  const base = command.split(/[\\/]/).pop() ?? "";
  if (/^openviking-kimi(\.exe|\.cmd)?$/.test(base) && args.length === 1 && args[0] === "mcp") return "ours";
  if (args[0] === "run" && args.at(-1) === "mcp" && /main\.ts$/.test(args.at(-2) ?? "")) return "ours";
  return "foreign";
}

/** A planned change of a JSON file. */
export type JsonPlan =
  | { ok: true; after: string | undefined; changed: boolean; previous: McpOwner; warnings: string[] }
  | { ok: false; error: string };

/** mcp.json as read: the parsed document and where its parts are in the text. */
interface McpDoc {
  text: string;
  doc: Record<string, unknown>;
  /** The top-level object; undefined for a blank file (written anew). */
  root?: JsonObjectSpan;
  /** The `mcpServers` object. */
  servers?: JsonObjectSpan;
  /** Index of our member in `servers.members`. */
  ours?: number;
}

/** The file install creates when there is none, without our entry: uninstall deletes it again. */
const CREATED_EMPTY = '{\n  "mcpServers": {}\n}\n';
const NEW_FILE: JsonLayout = { indent: "  ", eol: "\n", colon: ": ", comma: "," };

function refuse(what: string): { ok: false; error: string } {
  return { ok: false, error: `mcp.json ${what}; nothing was changed.` };
}

function load(current: string | undefined): { ok: true; file: McpDoc } | { ok: false; error: string } {
  if (current === undefined || current.trim() === "") return { ok: true, file: { text: "", doc: {} } };
  const parsed = parseJson(current);
  if (!parsed.ok) {
    return refuse(`is not valid JSON (${parsed.error}). Fix it or restore mcp.json.bak, then run again`);
  }
  const checked = McpFileSchema.safeParse(parsed.value);
  const root = locateRoot(current);
  if (!checked.success || !isRecord(parsed.value) || root === undefined) {
    return refuse('must be an object whose "mcpServers" is an object. Fix it and run again');
  }
  const file: McpDoc = { text: current, doc: parsed.value, root };
  const tops = root.members.filter((m) => m.key === "mcpServers");
  if (tops.length > 1) return refuse('has "mcpServers" more than once. Keep one and run again');
  if (tops.length === 1) {
    file.servers = locateObject(current, tops[0].valueStart);
    if (file.servers === undefined) {
      return refuse('has an "mcpServers" that is not an object. Fix it and run again');
    }
    const ours = file.servers.members.flatMap((m, i) => (m.key === MCP_SERVER_NAME ? [i] : []));
    if (ours.length > 1) {
      return refuse(`has the "${MCP_SERVER_NAME}" server more than once. Keep one and run again`);
    }
    file.ours = ours[0];
  }
  return { ok: true, file };
}

/** The entry under our name, if any. */
function currentEntry(doc: Record<string, unknown>): unknown {
  const servers = isRecord(doc.mcpServers) ? doc.mcpServers : {};
  return Object.hasOwn(servers, MCP_SERVER_NAME) ? servers[MCP_SERVER_NAME] : undefined;
}

/** Plans the upsert of our entry; an entry someone else wrote is replaced only with `replaceOthers`. */
export function planMcpInstall(
  current: string | undefined,
  entry: McpEntry,
  options: { replaceOthers?: boolean } = {},
): JsonPlan {
  const loaded = load(current);
  if (!loaded.ok) return loaded;
  const { file } = loaded;
  const existing = currentEntry(file.doc);
  const previous = classifyMcpEntry(existing);
  if ((previous === "foreign" || previous === "upstream") && !options.replaceOthers) {
    const who = previous === "upstream" ? "OpenViking's own Kimi plugin installer" : "someone else";
    return {
      ok: false,
      error: `mcp.json already has an "${MCP_SERVER_NAME}" server written by ${who} (${
        JSON.stringify(redactEntry(existing))
      }). Remove or rename it, or run install again with --yes to replace it (a copy stays in mcp.json.bak).`,
    };
  }
  const value = { ...entry };
  if (previous !== "absent" && deepEqual(existing, value)) {
    return { ok: true, after: current, changed: false, previous, warnings: [] };
  }
  const after = file.root === undefined
    ? `${renderJson({ mcpServers: { [MCP_SERVER_NAME]: value } }, NEW_FILE)}\n`
    : file.servers === undefined
    ? insertMember(file.text, file.root, "mcpServers", { [MCP_SERVER_NAME]: value })
    : file.ours === undefined
    ? insertMember(file.text, file.servers, MCP_SERVER_NAME, value)
    : replaceValue(file.text, file.servers.members[file.ours], value);
  return { ok: true, after, changed: after !== current, previous, warnings: [] };
}

/** Plans the removal of our entry (left alone when someone else wrote it; OpenViking's only with `removeUpstream`). */
export function planMcpUninstall(
  current: string | undefined,
  options: { removeUpstream?: boolean } = {},
): JsonPlan {
  // No file reads as an empty one: nothing of ours in it, nothing to change.
  const loaded = load(current);
  if (!loaded.ok) return loaded;
  const { file } = loaded;
  const previous = classifyMcpEntry(currentEntry(file.doc));
  if (
    file.servers === undefined || file.ours === undefined ||
    (previous !== "ours" && !(previous === "upstream" && options.removeUpstream))
  ) {
    const warnings = previous === "absent" ? [] : [
      `mcp.json's "${MCP_SERVER_NAME}" server was not written by openviking-kimi; it was left in place.`,
    ];
    return { ok: true, after: current, changed: false, previous, warnings };
  }
  const after = removeMember(file.text, file.servers, file.ours);
  return {
    ok: true,
    after: after === CREATED_EMPTY ? undefined : after,
    changed: true,
    previous,
    warnings: [],
  };
}

// --- Edits of the text: everything outside the member we add, replace or remove stays byte for byte. ---

const LINE_BREAK = /[\r\n]/;

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end);
}

/** The text between a member's key and its value (`": "`), or `": "` when that spans lines. */
function colonOf(text: string, m: JsonMemberSpan): string {
  const colon = text.slice(m.keyEnd, m.valueStart);
  return LINE_BREAK.test(colon) ? ": " : colon;
}

/** The line ending `text` uses (the first one it has). */
function eolOf(text: string): string {
  const m = /\r\n|\n|\r/.exec(text);
  return m ? m[0] : "\n";
}

/** Whether the document spans more than one line (a final line ending aside). */
function isMultiLine(text: string): boolean {
  return LINE_BREAK.test(text.trimEnd());
}

/** The colon of the document's first top-level member, for objects that have no members to copy. */
function documentColon(text: string): string {
  const root = locateRoot(text);
  return root?.members.length ? colonOf(text, root.members[0]) : ": ";
}

/** Adds `key: value` as the last member of `obj`, laid out like its siblings (or the document). */
function insertMember(text: string, obj: JsonObjectSpan, key: string, value: unknown): string {
  const keyText = JSON.stringify(key);
  const indent = jsonStyle(text).indent;
  const last = obj.members.at(-1);
  if (last) {
    const colon = colonOf(text, last);
    const lead = text.slice(last.leadStart, last.keyStart);
    if (LINE_BREAK.test(lead)) {
      const base = lead.slice(Math.max(lead.lastIndexOf("\n"), lead.lastIndexOf("\r")) + 1);
      const layout = { indent, eol: eolOf(lead), colon, comma: "," };
      return splice(
        text,
        last.valueEnd,
        last.valueEnd,
        `,${lead}${keyText}${colon}${renderJson(value, layout, base)}`,
      );
    }
    // One line: after a comma the siblings' spacing; after "{" (a single sibling) a space if the colon has one.
    const space = obj.members.length > 1 ? lead : colon.endsWith(" ") ? " " : "";
    const layout = { eol: "", colon, comma: `,${space}` };
    return splice(
      text,
      last.valueEnd,
      last.valueEnd,
      `,${space}${keyText}${colon}${renderJson(value, layout)}`,
    );
  }
  const colon = documentColon(text);
  if (!isMultiLine(text)) {
    const layout = { eol: "", colon, comma: colon.endsWith(" ") ? ", " : "," };
    return splice(text, obj.close, obj.close, keyText + colon + renderJson(value, layout));
  }
  const eol = eolOf(text);
  const outer = lineIndent(text, obj.open);
  const base = outer + indent;
  const member = eol + base + keyText + colon + renderJson(value, { indent, eol, colon, comma: "," }, base);
  const inside = text.slice(obj.open + 1, obj.close);
  const lastBreak = inside.search(/(\r\n|\n|\r)[^\r\n]*$/);
  // `{` … `}` already on separate lines: our member goes before the closing line; else it gets its own lines.
  return lastBreak >= 0
    ? splice(text, obj.open + 1 + lastBreak, obj.open + 1 + lastBreak, member)
    : splice(text, obj.close, obj.close, member + eol + outer);
}

/** Replaces a member's value, laid out like the value it replaces (one line or indented lines). */
function replaceValue(text: string, m: JsonMemberSpan, value: unknown): string {
  const old = text.slice(m.valueStart, m.valueEnd);
  const colon = colonOf(text, m);
  const layout: JsonLayout = LINE_BREAK.test(old)
    ? { indent: jsonStyle(text).indent, eol: eolOf(old), colon, comma: "," }
    : { eol: "", colon, comma: colon.endsWith(" ") ? ", " : "," };
  return splice(text, m.valueStart, m.valueEnd, renderJson(value, layout, lineIndent(text, m.keyStart)));
}

/**
 * Removes member `index` of `obj` with its comma: the exact inverse of `insertMember`. The last member of an
 * object spread over lines leaves `{}` (an object that was empty over several lines does not come back so).
 */
function removeMember(text: string, obj: JsonObjectSpan, index: number): string {
  const m = obj.members[index];
  if (obj.members.length === 1) {
    const inside = text.slice(obj.open + 1, m.keyStart) + text.slice(m.valueEnd, obj.close);
    const cut = inside.search(LINE_BREAK);
    return splice(text, obj.open + 1, obj.close, cut < 0 ? inside : inside.slice(0, cut));
  }
  return index > 0
    ? splice(text, obj.members[index - 1].valueEnd, m.valueEnd, "")
    : splice(text, m.keyStart, obj.members[1].keyStart, "");
}

/** The entry with env values and headers hidden (they may hold credentials). */
function redactEntry(entry: unknown): unknown {
  if (!isRecord(entry)) return entry;
  const out: Record<string, unknown> = { ...entry };
  for (const k of ["env", "headers"]) {
    if (isRecord(out[k])) out[k] = Object.fromEntries(Object.keys(out[k] as object).map((n) => [n, "…"]));
  }
  return out;
}
