/** PreToolUse guard for Read|Glob|Grep: denies a viking URI anywhere in the input, however spelled. */

import type { MemoryTool } from "./tools.ts";
import type { HookContext, HookResult } from "./context.ts";

/** Kimi names a plugin's MCP tools `mcp__plugin-<plugin id>_<server>__<tool>`. */
const PLUGIN_TOOL_PREFIX = "mcp__plugin-openviking-memory_openviking__";

/** In decoded text: the scheme, not ending a longer word (`openviking:`), a slash or more, a path to a control. */
const VIKING_URI = /(?<![\p{L}\p{N}_+.-])viking:\/+([^\s"'`<>)\p{Cc}\p{Cf}]*)/iu;

/** `text` with percent-encoding, JSON escapes (nested), compatibility forms and backslashes undone. */
function decoded(text: string): string {
  let s = text;
  for (let i = 0; i < 4; i++) {
    const next = s.replace(/%([0-7][0-9a-f])/gi, (_, hex) => String.fromCharCode(parseInt(hex, 16)))
      .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)))
      .replace(/\\([\\/"])/g, "$1");
    if (next === s) break;
    s = next;
  }
  return s.normalize("NFKC").replace(/\\/g, "/");
}

function vikingUriIn(text: string): string {
  const hit = VIKING_URI.exec(decoded(text));
  return hit ? `viking://${hit[1]}` : "";
}

const PREFERRED_KEYS = "filePath file_path filepath path uri target_uri targetUri pattern".split(" ");

/** The first viking URI in a tool input (preferred keys first, then any nested string), or "". */
export function findVikingUri(input: unknown, depth = 0): string {
  if (typeof input === "string") return vikingUriIn(input);
  if (!input || typeof input !== "object" || depth > 6) return "";
  const rec = input as Record<string, unknown>;
  const preferred = Array.isArray(input) ? [] : PREFERRED_KEYS.filter((k) => typeof rec[k] === "string");
  for (const v of [...preferred.map((k) => rec[k]), ...Object.values(rec)]) {
    const hit = findVikingUri(v, depth + 1);
    if (hit) return hit;
  }
  return "";
}

/** The deny reason for file tool `fileTool` called with a viking:// URI, naming memory's tool as Kimi does. */
export function guardMessage(fileTool: string, uri: string): string {
  const tool = fileTool.toLowerCase();
  const [name, args]: [MemoryTool, string] = tool === "glob"
    ? ["glob", `(pattern="**/*.md", uri="${uri}")`]
    : tool === "grep"
    ? ["grep", `(uri="${uri}", pattern="<text>")`]
    : ["read", `(uris="${uri}")`];
  return [
    "viking:// URIs are OpenViking virtual paths, not local filesystem paths.",
    `Use the OpenViking MCP tool ${PLUGIN_TOOL_PREFIX}${name} instead.`,
    `Example: ${PLUGIN_TOOL_PREFIX}${name}${args}`,
  ].join("\n");
}

/** The handler: deny JSON on stdout when the input names a viking:// URI, nothing otherwise. */
export function preToolUse(ctx: HookContext): Promise<HookResult> {
  const uri = findVikingUri(ctx.input.tool_input);
  if (!uri) return Promise.resolve({ outcome: "allow" });
  const reason = guardMessage(ctx.input.tool_name ?? "Read", uri);
  const output = { hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: reason } };
  return Promise.resolve({
    stdout: `${JSON.stringify(output)}\n`,
    outcome: "deny",
    data: { tool: ctx.input.tool_name, uri },
  });
}
