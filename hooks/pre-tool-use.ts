/**
 * PreToolUse guard for Read|Glob|Grep: a `viking://` URI anywhere in the tool input is not a local path,
 * so the call is denied with a reason that names the MCP tool to use instead and an example.
 */

import type { HookContext, HookResult } from "./context.ts";
import { mcpToolPrefix, pluginRoot } from "./plugin-root.ts";

const VIKING_URI = /\bviking:\/\/[^\s"'`<>)]*/i;
const PREFERRED_KEYS = [
  "filePath",
  "file_path",
  "filepath",
  "path",
  "uri",
  "target_uri",
  "targetUri",
  "pattern",
];

/** The first `viking://` URI in a tool input (preferred keys first, then any nested string), or "". */
export function findVikingUri(input: unknown, depth = 0): string {
  if (typeof input === "string") return VIKING_URI.exec(input)?.[0] ?? "";
  if (!input || typeof input !== "object" || depth > 6) return "";
  if (!Array.isArray(input)) {
    const rec = input as Record<string, unknown>;
    for (const k of PREFERRED_KEYS) {
      if (typeof rec[k] === "string") {
        const hit = VIKING_URI.exec(rec[k] as string)?.[0];
        if (hit) return hit;
      }
    }
  }
  for (const v of Object.values(input as Record<string, unknown>)) {
    const hit = findVikingUri(v, depth + 1);
    if (hit) return hit;
  }
  return "";
}

/** The deny reason for a file tool called with a viking:// URI. */
export function guardMessage(toolName: string, uri: string, prefix: string): string {
  const tool = toolName.toLowerCase();
  const [name, example] = tool === "glob"
    ? ["glob", `glob(pattern="**/*.md", uri="${uri}")`]
    : tool === "grep"
    ? ["grep", `grep(uri="${uri}", pattern="<text>")`]
    : ["read", `read(uris="${uri}")`];
  return [
    "viking:// URIs are OpenViking virtual paths, not local filesystem paths.",
    `Use the OpenViking MCP tool ${prefix}${name} instead.`,
    `Example: ${prefix}${example}`,
  ].join("\n");
}

/** The handler: deny JSON on stdout when the input names a viking:// URI, nothing otherwise. */
export function preToolUse(ctx: HookContext): Promise<HookResult> {
  const uri = findVikingUri(ctx.input.tool_input);
  if (!uri) return Promise.resolve({ outcome: "allow" });
  const reason = guardMessage(ctx.input.tool_name ?? "Read", uri, mcpToolPrefix(pluginRoot(ctx.env)));
  const stdout = JSON.stringify({
    hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: reason },
  });
  return Promise.resolve({
    stdout: `${stdout}\n`,
    outcome: "deny",
    data: { tool: ctx.input.tool_name, uri },
  });
}
