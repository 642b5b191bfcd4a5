/** The plugin root Kimi gives a hook (`KIMI_PLUGIN_ROOT`), its system-prompt file, and Kimi's names of our tools. */

import { type Env, isAbsolutePath, joinPath } from "../lib/paths.ts";

/** The plugin's system-prompt file, relative to the plugin root (the manifest's `systemPromptPath`). */
export const SYSTEM_PROMPT_FILE = "system-prompt.md";

/** Our MCP tools' name prefix: Kimi names a plugin's server `plugin-<plugin id>_<server>`. */
export const PLUGIN_TOOL_PREFIX = "mcp__plugin-openviking-memory_openviking__";

/** The plugin root Kimi gave this hook, or undefined (an older config-mode home, or not an absolute path). */
export function pluginRoot(env: Env): string | undefined {
  const root = env.KIMI_PLUGIN_ROOT?.trim();
  return root && isAbsolutePath(root) ? root : undefined;
}

/** The system-prompt file of the plugin this hook runs from, or undefined without a plugin root. */
export function systemPromptFile(env: Env): string | undefined {
  const root = pluginRoot(env);
  return root && joinPath(root, SYSTEM_PROMPT_FILE);
}
