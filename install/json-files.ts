/**
 * Kimi's JSON files edited in their text (jsonc-parser finds the span; the edit is ours, laid out like the
 * siblings), so every other byte stays and removing what was inserted gives the bytes back. Pure.
 */

import { findNodeAtLocation, type Node, parseTree } from "jsonc-parser";
import * as z from "zod/mini";
import { deepEqual, isRecord } from "../lib/parsed.ts";
import {
  classifyMcpEntry,
  type Edit,
  type EditPlan,
  MCP_SERVER_NAME,
  PLUGIN_ID,
  type Refusal,
  type Result,
} from "./spec.ts";

/** JSON text parsed (a BOM aside), or why it is not JSON. */
export function parseJson(text: string): Result<{ value: unknown }> {
  try {
    return { ok: true, value: JSON.parse(text.replace(/^\uFEFF/, "")) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** The tree of JSON text `JSON.parse` accepted (offsets into the text); undefined when nested too deep. */
function treeOf(text: string): Node | undefined {
  try {
    return parseTree(text);
  } catch {
    return undefined; // RangeError: nesting deeper than the parser's stack
  }
}

/** How JSON we write is laid out: on one line (`indent` undefined), or a member per line. */
type Layout = { indent?: string; eol: string; colon: string; comma: string };

/** `value` in `layout`; continuation lines start with `base` (JSON.stringify breaks lines only between members). */
function render(value: unknown, layout: Layout, base = ""): string {
  const lines = (JSON.stringify(value, null, "\t") ?? "null").split("\n").map((l) =>
    l.replace(
      /^(\t*)(?:("(?:[^"\\]|\\.)*"): )?/,
      (_, tabs: string, key?: string) =>
        (layout.indent ?? "").repeat(tabs.length) + (key === undefined ? "" : key + layout.colon),
    )
  );
  if (layout.indent !== undefined) return lines.join(layout.eol + base);
  return lines.join("\n").replace(/,\n/g, layout.comma).replaceAll("\n", "");
}

const BREAK = /\r\n|\n|\r/;

/** The indentation of the line holding offset `pos`. */
function indentAt(text: string, pos: number): string {
  const start = Math.max(text.lastIndexOf("\n", pos - 1), text.lastIndexOf("\r", pos - 1)) + 1;
  return /^\uFEFF?([ \t]*)/.exec(text.slice(start, pos))![1];
}

/** The text between a property's key and its value (`": "` when that spans lines or there is none). */
function colonOf(text: string, prop: Node | undefined): string {
  const [key, value] = prop?.type === "property" ? prop.children ?? [] : [];
  const colon = key && value ? text.slice(key.offset + key.length, value.offset) : ": ";
  return BREAK.test(colon) ? ": " : colon;
}

/** A member per line, indented like the first indented line of `text`. */
const lines = (text: string, eol: string, colon: string): Layout => ({
  indent: /\n([ \t]+)\S/.exec(text)?.[1] ?? "  ",
  eol,
  colon,
  comma: ",",
});

/** One line, spaced like `colon`. */
const oneLine = (colon: string, comma = colon.endsWith(" ") ? ", " : ","): Layout => ({
  eol: "",
  colon,
  comma,
});

const splice = (text: string, start: number, end: number, insert = "") =>
  text.slice(0, start) + insert + text.slice(end);

/** Inserts `key: value` (an array item when `key` is undefined) as the last member of `parent`, laid out like its siblings. */
function insert(text: string, parent: Node, key: string | undefined, value: unknown): string {
  const item = (layout: Layout, base: string) =>
    (key === undefined ? "" : JSON.stringify(key) + layout.colon) + render(value, layout, base);
  const kids = parent.children ?? [];
  const last = kids.at(-1);
  if (last) {
    const from = kids.length > 1 ? kids.at(-2)!.offset + kids.at(-2)!.length : parent.offset + 1;
    const lead = text.slice(from, last.offset).replace(/^\s*,/, "");
    const colon = colonOf(text, last.type === "property" ? last : last.children?.[0]);
    const end = last.offset + last.length;
    const brk = BREAK.exec(lead);
    if (brk) {
      const base = lead.slice(Math.max(lead.lastIndexOf("\n"), lead.lastIndexOf("\r")) + 1);
      return splice(text, end, end, `,${lead}${item(lines(text, brk[0], colon), base)}`);
    }
    const space = kids.length > 1 ? lead : colon.endsWith(" ") ? " " : "";
    return splice(text, end, end, `,${space}${item(oneLine(colon, `,${space}`), "")}`);
  }
  const close = parent.offset + parent.length - 1;
  const colon = colonOf(text, treeOf(text)?.children?.[0]);
  if (!BREAK.test(text.trimEnd())) return splice(text, close, close, item(oneLine(colon), ""));
  const layout = lines(text, BREAK.exec(text)![0], colon);
  const outer = indentAt(text, parent.offset);
  const member = layout.eol + outer + layout.indent + item(layout, outer + layout.indent);
  const lastBreak = text.slice(parent.offset + 1, close).search(/(\r\n|\n|\r)[^\r\n]*$/);
  return lastBreak >= 0
    ? splice(text, parent.offset + 1 + lastBreak, parent.offset + 1 + lastBreak, member)
    : splice(text, close, close, member + layout.eol + outer);
}

/** Removes child `index` of `parent` with its comma: the inverse of `insert` (the last one leaves `{}`). */
function remove(text: string, parent: Node, index: number): string {
  const kids = parent.children!;
  const m = kids[index];
  if (kids.length === 1) {
    const close = parent.offset + parent.length - 1;
    const inside = text.slice(parent.offset + 1, m.offset) + text.slice(m.offset + m.length, close);
    const cut = inside.search(BREAK);
    return splice(text, parent.offset + 1, close, cut < 0 ? inside : inside.slice(0, cut));
  }
  return index > 0
    ? splice(text, kids[index - 1].offset + kids[index - 1].length, m.offset + m.length)
    : splice(text, m.offset, kids[1].offset);
}

/**
 * `text` with the value at `path` set to `value` (undefined: removed), every other byte kept; a missing
 * object on the way is made, an array index past the end appends: `editJson('{"a": 1}', ["b"], 2)`.
 */
function editJson(text: string, path: (string | number)[], value: unknown): string {
  const root = treeOf(text);
  if (!root || path.length === 0) throw new Error("not a JSON document");
  const parent = findNodeAtLocation(root, path.slice(0, -1));
  const key = path.at(-1)!;
  if (!parent || (parent.type !== "object" && parent.type !== "array")) {
    return value === undefined
      ? text
      : editJson(text, path.slice(0, -1), typeof key === "number" ? [value] : { [key]: value });
  }
  const kids = parent.children ?? [];
  const index = parent.type === "array"
    ? (key as number)
    : kids.findIndex((p) => p.children?.[0]?.value === key);
  const at = index >= 0 && index < kids.length ? kids[index] : undefined;
  if (!at) {
    return value === undefined
      ? text
      : insert(text, parent, parent.type === "object" ? String(key) : undefined, value);
  }
  if (value === undefined) return remove(text, parent, index);
  const old = parent.type === "object" ? at.children![1] : at;
  const was = text.slice(old.offset, old.offset + old.length);
  const colon = colonOf(text, at.type === "property" ? at : undefined);
  const layout = BREAK.test(was) ? lines(text, BREAK.exec(was)![0], colon) : oneLine(colon);
  return splice(text, old.offset, old.offset + old.length, render(value, layout, indentAt(text, at.offset)));
}

/** The file install creates when there is none, without our entry: uninstall deletes it again. */
const CREATED_EMPTY = '{\n  "mcpServers": {}\n}\n';

const named = (node: Node | undefined, key: string) =>
  (node?.children ?? []).filter((p) => p.children?.[0]?.value === key);

const refuse = (what: string): Refusal => ({ ok: false, error: `mcp.json ${what}; nothing was changed.` });

/** Plans our entry out of mcp.json (someone else's stays, OpenViking's too), refused when the rest would read differently. */
export function planMcpUninstall(current: string | undefined): EditPlan {
  const same = (warnings: string[] = []) => ({ ok: true as const, after: current, changed: false, warnings });
  if (current === undefined || current.trim() === "") return same();
  const before = parseJson(current);
  if (!before.ok) {
    return refuse(`is not valid JSON (${before.error}). Fix it or restore mcp.json.bak, then run again`);
  }
  const doc = before.value;
  const servers = isRecord(doc) ? (Object.hasOwn(doc, "mcpServers") ? doc.mcpServers : {}) : undefined;
  if (!isRecord(doc) || !isRecord(servers) || !treeOf(current)) {
    return refuse('must be an object whose "mcpServers" is an object. Fix it and run again');
  }
  const { [MCP_SERVER_NAME]: entry, ...rest } = servers;
  const owner = classifyMcpEntry(Object.hasOwn(servers, MCP_SERVER_NAME) ? entry : undefined);
  if (owner === "absent") return same();
  if (owner !== "ours") {
    return same([
      `mcp.json's "${MCP_SERVER_NAME}" server was not written by openviking-kimi; it was left in place.`,
    ]);
  }
  const after = editJson(current, ["mcpServers", MCP_SERVER_NAME], undefined);
  const left = parseJson(after);
  if (!left.ok || !deepEqual(left.value, { ...doc, mcpServers: rest })) {
    return refuse(
      `has "mcpServers" or the "${MCP_SERVER_NAME}" server more than once. Keep one and run again`,
    );
  }
  return { ok: true, after: after === CREATED_EMPTY ? undefined : after, changed: true, warnings: [] };
}

const RecordSchema = z.looseObject({ id: z.string(), root: z.optional(z.string()) });
/** Kimi's plugin registry, `{version: 1, plugins: [...]}`. */
const RegistrySchema = z.looseObject({ version: z.literal(1), plugins: z.array(RecordSchema) });
type RegistryRecord = z.infer<typeof RecordSchema>;

/** The registry in `text` (absent or blank: empty), or why Kimi cannot read it either. */
export function parseRegistry(text: string | undefined): Result<{ value: z.infer<typeof RegistrySchema> }> {
  if (text === undefined || text.trim() === "") return { ok: true, value: { version: 1, plugins: [] } };
  const parsed = parseJson(text);
  const checked = parsed.ok ? RegistrySchema.safeParse(parsed.value) : undefined;
  const root = treeOf(text);
  if (checked?.success && root && named(root, "plugins").length < 2) return { ok: true, value: checked.data };
  return {
    ok: false,
    error:
      `plugins/installed.json is not a Kimi plugin registry ({"version":1,"plugins":[…]}${
        parsed.ok ? "" : `: ${parsed.error}`
      }). ` +
      "Kimi Code cannot read it either: fix or delete it (a copy may be in installed.json.bak), then run again; nothing was changed.",
  };
}

/** The `openviking-memory` record of a registry (ours or OpenViking's), if any. */
export function findRecord(registry: z.infer<typeof RegistrySchema>): RegistryRecord | undefined {
  return registry.plugins.find((p) => p.id.toLowerCase() === PLUGIN_ID);
}

/** A planned registry change. */
type RegistryPlan = Edit<{ previous: RegistryRecord | undefined }>;

/** The registry install creates when there is none, without our record: uninstall deletes it again. */
const CREATED_REGISTRY = '{\n  "version": 1,\n  "plugins": []\n}\n';

/** The registry with its `openviking-memory` record replaced by `make(previous)` (undefined: removed). */
function withRecord(
  current: string | undefined,
  make: (previous: RegistryRecord | undefined) => unknown,
): RegistryPlan {
  const parsed = parseRegistry(current);
  if (!parsed.ok) return parsed;
  const previous = findRecord(parsed.value);
  const next = make(previous);
  if (next === previous) return { ok: true, after: current, changed: false, previous };
  const index = previous ? parsed.value.plugins.indexOf(previous) : parsed.value.plugins.length;
  const text = current?.trim() ? current : CREATED_REGISTRY;
  const after = editJson(text, ["plugins", index], next);
  return { ok: true, after, changed: after !== current, previous };
}

/** Plans our record pointing at `root` (re-install keeps `enabled`, `installedAt` and everything else of it). */
export function planRegistryInstall(
  current: string | undefined,
  record: { root: string; originalSource: string },
  now: Date,
): RegistryPlan {
  return withRecord(current, (p) => ({
    ...p,
    id: PLUGIN_ID,
    root: record.root,
    source: "local-path",
    enabled: typeof p?.enabled === "boolean" ? p.enabled : true,
    installedAt: typeof p?.installedAt === "string" ? p.installedAt : now.toISOString(),
    updatedAt: now.toISOString(),
    originalSource: record.originalSource,
  }));
}

/** Plans the record out (the file goes when it is again the one install created, never for being left empty). */
export function planRegistryUninstall(current: string | undefined): RegistryPlan {
  const plan = withRecord(current, () => undefined);
  if (!plan.ok || plan.after !== CREATED_REGISTRY || !plan.changed) return plan;
  return { ...plan, after: undefined };
}
