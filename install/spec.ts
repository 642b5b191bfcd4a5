/** What openviking-kimi registers in Kimi Code (names, hook entries) and how to tell whose a registration is. */

import * as z from "zod/mini";
import { HOOKS } from "../kimi/hooks.ts";
import { isRecord } from "../lib/parsed.ts";

/** Plugin id (OpenViking's own Kimi plugin has it too, so the two are never enabled side by side). */
export const PLUGIN_ID = "openviking-memory";
/** Key of our server in `mcp.json` and in the manifest's `mcpServers`. */
export const MCP_SERVER_NAME = "openviking";
export const BLOCK_BEGIN = "# >>> openviking kimicode integration";
export const BLOCK_END = "# <<< openviking kimicode integration";
export const EXECUTABLE_NAME = "openviking-kimi";
/** Why not, in words that say what to do. */
export type Refusal = { ok: false; error: string };
/** `T`, or why not. */
export type Result<T> = ({ ok: true } & T) | Refusal;
/** A planned text of one file (`after` undefined: the file goes, or stays absent) and whether it changes. */
export type Edit<T = unknown> = Result<{ after: string | undefined; changed: boolean } & T>;
/** A planned edit of one of Kimi's files, and what to warn of. */
export type EditPlan = Edit<{ warnings: string[] }>;

/** The keys Kimi accepts in a `[[hooks]]` entry; one more key makes Kimi drop every hook. */
export const ALLOWED_HOOK_KEYS: readonly string[] = ["event", "matcher", "command", "timeout"];

/** A `[[hooks]]` entry or manifest hook, exactly the keys Kimi allows. */
export interface HookEntry {
  event: string;
  matcher?: string;
  command: string;
  timeout: number;
}

/** The hook entries running `<prefix> hook <event>`. */
export function hookEntries(prefix: string): HookEntry[] {
  return HOOKS.map((h) => ({
    event: h.event,
    ...("matcher" in h ? { matcher: h.matcher } : {}),
    command: `${prefix} hook ${h.cli}`,
    timeout: h.timeout,
  }));
}

const OUR_HOOK = new RegExp(
  `openviking-kimi(?:\\.exe|\\.cmd)?['"]?\\s+hook\\s+(?:${HOOKS.map((h) => h.cli).join("|")})\\s*$`,
);

/** Whether a hook command is ours: `… openviking-kimi[.exe|.cmd] hook <event>`. */
export function isOurHookCommand(command: string): boolean {
  return OUR_HOOK.test(command);
}

/** Whether a hook command belongs to OpenViking's own (Node) Kimi plugin. */
export function isUpstreamHookCommand(command: string): boolean {
  return /kimicode-hook\.mjs|uri-guard\.mjs|agent-integrations[\\/]kimicode[\\/]scripts[\\/]hook\.mjs/.test(
    command,
  );
}

/** The stdio server entry config mode writes to `mcp.json`. */
export interface McpEntry {
  command: string;
  args: string[];
}

/** Who wrote an `mcpServers.openviking` entry. */
export type McpOwner = "ours" | "upstream" | "foreign" | "absent";

const EntrySchema = z.looseObject({
  command: z.optional(z.string()),
  args: z.optional(z.array(z.string())),
  env: z.optional(z.record(z.string(), z.unknown())),
});

/** Ours (`openviking-kimi mcp`), OpenViking's Node proxy, someone else's, or none. */
export function classifyMcpEntry(entry: unknown): McpOwner {
  if (entry === undefined) return "absent";
  const parsed = EntrySchema.safeParse(entry);
  if (!parsed.success) return "foreign";
  const { command = "", args = [], env = {} } = parsed.data;
  if (args.some((a) => /mcp-proxy\.mjs$/.test(a)) || "OPENVIKING_INTEGRATION_ID" in env) return "upstream";
  const base = command.split(/[\\/]/).pop() ?? "";
  if (/^openviking-kimi(\.exe|\.cmd)?$/.test(base) && args.length === 1 && args[0] === "mcp") return "ours";
  return "foreign";
}

/** Who a plugin manifest belongs to: us (`bin/openviking-kimi hook …`), OpenViking's Node plugin, or other. */
export function classifyManifest(manifest: unknown): "ours" | "upstream" | "other" {
  if (!isRecord(manifest) || !Array.isArray(manifest.hooks)) return "other";
  const commands = manifest.hooks.flatMap((h) =>
    isRecord(h) && typeof h.command === "string" ? [h.command] : []
  );
  if (commands.some((c) => /bin[\\/]openviking-kimi(\.exe)?\s+hook\s/.test(c))) return "ours";
  if (commands.some((c) => /\.mjs\b/.test(c))) return "upstream";
  return manifest.name === PLUGIN_ID ? "upstream" : "other";
}
