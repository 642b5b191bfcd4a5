/**
 * The last tool list OpenViking served (all of it: the proxy picks what it offers when it serves it), kept on
 * disk (0600) so a session that starts while the server is down still offers the same tools the server had.
 * One file, the list of the most recent MCP URL.
 */

import * as z from "zod/mini";
import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { type Env, mcpToolCachePath, orNoHome } from "../lib/paths.ts";
import type { ToolDefinition } from "../memory/tools.ts";

/** Schema of one tool in the cache (only what an MCP tool must have is checked; the rest is kept). */
const ToolSchema = z.looseObject({
  name: z.string().check(z.minLength(1)),
  description: z.optional(z.string()),
  inputSchema: z.looseObject({ type: z.literal("object") }),
});

/** A usable tool list: at least one tool. */
const ToolsSchema = z.array(ToolSchema).check(z.minLength(1));

/** Schema of the cache file. */
const CacheSchema = z.object({
  mcpUrl: z.string(),
  savedAt: z.string(),
  tools: ToolsSchema,
});

/** Path of the cache file; "" without a home (then nothing is cached). */
export function toolCachePath(env: Env): string {
  return orNoHome(() => mcpToolCachePath(env)) ?? "";
}

/** Validates a `tools/list` result's tools; `undefined` when they are not a usable, non-empty list. */
export function validTools(value: unknown): ToolDefinition[] | undefined {
  const parsed = ToolsSchema.safeParse(value);
  return parsed.success ? parsed.data as ToolDefinition[] : undefined;
}

/** The cached tools for `mcpUrl`; `undefined` when there are none (or the file is unreadable). */
export async function readToolCache(path: string, mcpUrl: string): Promise<ToolDefinition[] | undefined> {
  if (!path) return undefined;
  try {
    const text = await readTextIfExists(path);
    if (text === undefined) return undefined;
    const parsed = CacheSchema.safeParse(JSON.parse(text));
    if (!parsed.success || parsed.data.mcpUrl !== mcpUrl) return undefined;
    return parsed.data.tools as ToolDefinition[];
  } catch {
    return undefined;
  }
}

/** Saves `tools` for `mcpUrl` unless the file already holds exactly them; never throws. */
export async function writeToolCache(
  path: string,
  mcpUrl: string,
  tools: ToolDefinition[],
): Promise<boolean> {
  if (!path) return false;
  try {
    const current = await readToolCache(path, mcpUrl);
    if (current && JSON.stringify(current) === JSON.stringify(tools)) return false;
    const body = { mcpUrl, savedAt: new Date().toISOString(), tools };
    await writeFileAtomic(path, `${JSON.stringify(body)}\n`);
    return true;
  } catch {
    return false;
  }
}
