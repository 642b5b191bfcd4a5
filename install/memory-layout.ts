/**
 * Where the memory files sit in the plugin directory, and the manifest fields that point Kimi at them (paths
 * must start with `./` and stay inside the plugin root). Pure data, read by the manifest (plugin.ts) and by
 * what places the files (memory-files.ts).
 */

import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import { SKILL_NAME } from "../memory/instructions.ts";

/** The skill's file, relative to the plugin root. */
export const PLUGIN_SKILL_FILE = `skills/${SKILL_NAME}/SKILL.md`;

/** The directory of the plugin's commands, relative to the plugin root. */
export const PLUGIN_COMMANDS_DIR = "commands";

/** The manifest fields of the memory files: the system prompt, the skills directory, the commands directory. */
export function memoryManifestFields(): { systemPromptPath: string; skills: string; commands: string } {
  return {
    systemPromptPath: `./${SYSTEM_PROMPT_FILE}`,
    skills: "./skills",
    commands: `./${PLUGIN_COMMANDS_DIR}`,
  };
}
