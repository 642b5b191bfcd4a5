/** The last whole tool list OpenViking served, kept on disk (0600) for a session that starts while it is down. */

import * as z from "zod/mini";
import { readJson, writeFileAtomic } from "../lib/fs.ts";
import { type Env, mcpToolCachePath, orNoHome } from "../lib/paths.ts";
import type { ToolDefinition } from "../memory/tools.ts";
import { mapStrings, TOO_DEEP } from "./gate.ts";

/** A usable tool list: at least one tool with a name and an object schema (the rest is kept). */
const ToolsSchema = z.array(z.looseObject({
  name: z.string().check(z.minLength(1)),
  description: z.optional(z.string()),
  inputSchema: z.looseObject({ type: z.literal("object") }),
})).check(z.minLength(1));

const CacheSchema = z.object({ mcpUrl: z.string(), savedAt: z.string(), tools: ToolsSchema });

/** Path of the cache file; "" without a home (then nothing is cached). */
export const toolCachePath = (env: Env): string => orNoHome(() => mcpToolCachePath(env)) ?? "";

/** A `tools/list` result's tools when they are a usable, non-empty list. */
export const validTools = (value: unknown) =>
  ToolsSchema.safeParse(value).data as ToolDefinition[] | undefined;

/** The cached tools for `mcpUrl`; `undefined` when there are none (or the file is unreadable or too deep). */
export async function readToolCache(path: string, mcpUrl: string): Promise<ToolDefinition[] | undefined> {
  const parsed = CacheSchema.safeParse(path ? await readJson(path) : undefined);
  const tools = parsed.success && parsed.data.mcpUrl === mcpUrl ? parsed.data.tools : undefined;
  return mapStrings(tools, { value: (v) => v }) === TOO_DEEP
    ? undefined
    : tools as ToolDefinition[] | undefined;
}

/** Saves `tools` for `mcpUrl` unless the file already holds exactly them; true when written, never throws. */
export async function writeToolCache(
  path: string,
  mcpUrl: string,
  tools: ToolDefinition[],
): Promise<boolean> {
  if (!path || JSON.stringify(await readToolCache(path, mcpUrl)) === JSON.stringify(tools)) return false;
  const body = { mcpUrl, savedAt: new Date().toISOString(), tools };
  return await writeFileAtomic(path, `${JSON.stringify(body)}\n`).then(() => true, () => false);
}
