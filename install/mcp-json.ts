/**
 * Pure planning of our one key in Kimi's `mcp.json` (`mcpServers.openviking`): upsert on install, removal on
 * uninstall only when the entry is ours. Everything else in the file is kept (same keys, same order, same
 * indentation and line endings).
 */

import { z } from "zod";
import { MCP_SERVER_NAME } from "./spec.ts";
import { formatJson, isObject, jsonStyle, parseJson } from "./json-file.ts";

/** The stdio server entry we write. */
export interface McpEntry {
  command: string;
  args: string[];
}

/** Who wrote an `mcpServers.openviking` entry. */
export type McpOwner = "ours" | "upstream" | "foreign" | "absent";

const McpFileSchema = z.looseObject({ mcpServers: z.record(z.string(), z.unknown()).optional() });

const EntrySchema = z.looseObject({
  command: z.string().optional(),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.unknown()).optional(),
  url: z.string().optional(),
});

/** Classifies an entry: ours (runs `openviking-kimi mcp` / `… main.ts mcp`), OpenViking's Node proxy, or other. */
export function classifyMcpEntry(entry: unknown): McpOwner {
  if (entry === undefined) return "absent";
  const parsed = EntrySchema.safeParse(entry);
  if (!parsed.success) return "foreign";
  const { command = "", args = [], env = {} } = parsed.data;
  if (args.some((a) => /mcp-proxy\.mjs$/.test(a)) || "OPENVIKING_INTEGRATION_ID" in env) return "upstream";
  const base = command.split(/[\\/]/).pop() ?? "";
  if (/^openviking-kimi(\.exe)?$/.test(base) && args.length === 1 && args[0] === "mcp") return "ours";
  if (args[0] === "run" && args.at(-1) === "mcp" && /main\.ts$/.test(args.at(-2) ?? "")) return "ours";
  return "foreign";
}

/** A planned change of a JSON file. */
export type JsonPlan =
  | { ok: true; after: string | undefined; changed: boolean; previous: McpOwner; warnings: string[] }
  | { ok: false; error: string };

function load(
  current: string | undefined,
): { ok: true; doc: Record<string, unknown> } | { ok: false; error: string } {
  if (current === undefined || current.trim() === "") return { ok: true, doc: {} };
  const parsed = parseJson(current);
  if (!parsed.ok) {
    return {
      ok: false,
      error:
        `mcp.json is not valid JSON (${parsed.error}). Fix it or restore mcp.json.bak, then run again; nothing was changed.`,
    };
  }
  const checked = McpFileSchema.safeParse(parsed.value);
  if (!checked.success || !isObject(parsed.value)) {
    return {
      ok: false,
      error:
        'mcp.json must be an object whose "mcpServers" is an object. Fix it and run again; nothing was changed.',
    };
  }
  return { ok: true, doc: parsed.value };
}

/** Plans the upsert of our entry; an entry someone else wrote is replaced only with `replaceOthers`. */
export function planMcpInstall(
  current: string | undefined,
  entry: McpEntry,
  options: { replaceOthers?: boolean } = {},
): JsonPlan {
  const loaded = load(current);
  if (!loaded.ok) return loaded;
  const doc = loaded.doc;
  const servers = isObject(doc.mcpServers) ? doc.mcpServers : {};
  const previous = classifyMcpEntry(servers[MCP_SERVER_NAME]);
  if ((previous === "foreign" || previous === "upstream") && !options.replaceOthers) {
    const who = previous === "upstream" ? "OpenViking's own Kimi plugin installer" : "someone else";
    return {
      ok: false,
      error: `mcp.json already has an "${MCP_SERVER_NAME}" server written by ${who} (${
        JSON.stringify(redactEntry(servers[MCP_SERVER_NAME]))
      }). Remove or rename it, or run install again with --yes to replace it (a copy stays in mcp.json.bak).`,
    };
  }
  const nextServers: Record<string, unknown> = { ...servers, [MCP_SERVER_NAME]: { ...entry } };
  const next: Record<string, unknown> = { ...doc, mcpServers: nextServers };
  const after = formatJson(next, jsonStyle(current));
  return { ok: true, after, changed: after !== current, previous, warnings: [] };
}

/** Plans the removal of our entry (left alone when someone else wrote it; OpenViking's only with `removeUpstream`). */
export function planMcpUninstall(
  current: string | undefined,
  options: { removeUpstream?: boolean } = {},
): JsonPlan {
  if (current === undefined) {
    return { ok: true, after: undefined, changed: false, previous: "absent", warnings: [] };
  }
  const loaded = load(current);
  if (!loaded.ok) return loaded;
  const doc = loaded.doc;
  const servers = isObject(doc.mcpServers) ? doc.mcpServers : {};
  const previous = classifyMcpEntry(servers[MCP_SERVER_NAME]);
  if (previous !== "ours" && !(previous === "upstream" && options.removeUpstream)) {
    const warnings = previous === "absent" ? [] : [
      `mcp.json's "${MCP_SERVER_NAME}" server was not written by openviking-kimi; it was left in place.`,
    ];
    return { ok: true, after: current, changed: false, previous, warnings };
  }
  const nextServers = { ...servers };
  delete nextServers[MCP_SERVER_NAME];
  const next: Record<string, unknown> = { ...doc, mcpServers: nextServers };
  const empty = Object.keys(next).length === 1 && Object.keys(nextServers).length === 0;
  const after = empty ? undefined : formatJson(next, jsonStyle(current));
  return { ok: true, after, changed: true, previous, warnings: [] };
}

/** The entry with env values and headers hidden (they may hold credentials). */
export function redactEntry(entry: unknown): unknown {
  if (!isObject(entry)) return entry;
  const out: Record<string, unknown> = { ...entry };
  for (const k of ["env", "headers"]) {
    if (isObject(out[k])) out[k] = Object.fromEntries(Object.keys(out[k] as object).map((n) => [n, "…"]));
  }
  return out;
}
