/**
 * Kimi's JSON files edited in their text: our registry record written by jsonc-parser `modify` in Kimi's own
 * layout (2-space JSON), and removed, like our mcp.json entry, by the smallest splice, so every other byte
 * stays and removing what was inserted gives the bytes back (decision 36). Pure.
 */

import { applyEdits, findNodeAtLocation, modify, type Node, parseTree } from "jsonc-parser";
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

function treeOf(text: string): Node | undefined {
  try {
    return parseTree(text);
  } catch {
    return undefined; // RangeError: nesting deeper than the parser's stack
  }
}

const BREAK = /\r\n|\n|\r/;

const splice = (text: string, start: number, end: number, insert = "") =>
  text.slice(0, start) + insert + text.slice(end);

/**
 * `text` without the member at `path` and its comma, every other byte kept (the last one leaves `{}`): the
 * exact inverse of inserting it as Kimi lays it out.
 */
function removeAt(text: string, path: [string, string | number]): string {
  const parent = findNodeAtLocation(treeOf(text)!, path.slice(0, 1));
  const kids = parent?.children ?? [];
  const index = parent?.type === "array"
    ? path[1] as number
    : kids.findIndex((p) => p.children?.[0]?.value === path[1]);
  const m = kids[index];
  if (!parent || !m) return text;
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
  const after = removeAt(current, ["mcpServers", MCP_SERVER_NAME]);
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
  const after = next === undefined ? removeAt(text, ["plugins", index]) : applyEdits(
    text,
    modify(text, ["plugins", index], next, {
      formattingOptions: { tabSize: 2, insertSpaces: true, eol: /\r\n/.test(text) ? "\r\n" : "\n" },
      isArrayInsertion: !previous,
    }),
  );
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
