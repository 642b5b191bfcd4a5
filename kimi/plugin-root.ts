/** Which install mode a hook runs in (`KIMI_PLUGIN_ROOT` set: plugin), and what follows: tool names, prompt path. */

import { type Env, isAbsolutePath, joinPath } from "../lib/paths.ts";

/** The plugin's system-prompt file, relative to the plugin root (the manifest's `systemPromptPath`). */
export const SYSTEM_PROMPT_FILE = "system-prompt.md";

/** MCP tool name prefix in config mode (`mcp.json` server "openviking"). */
export const CONFIG_TOOL_PREFIX = "mcp__openviking__";

/** MCP tool name prefix in plugin mode: Kimi names a plugin's server `plugin-<plugin id>_<server>`. */
export const PLUGIN_TOOL_PREFIX = "mcp__plugin-openviking-memory_openviking__";

/** The plugin root Kimi gave this hook, or undefined in config mode (or when it is not an absolute path). */
export function pluginRoot(env: Env): string | undefined {
  const root = env.KIMI_PLUGIN_ROOT?.trim();
  return root && isAbsolutePath(root) ? root : undefined;
}

/** The system-prompt file of the plugin this hook runs from, or undefined in config mode. */
export function systemPromptFile(env: Env): string | undefined {
  const root = pluginRoot(env);
  return root && joinPath(root, SYSTEM_PROMPT_FILE);
}
