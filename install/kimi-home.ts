/** What plugin mode places in its directory besides the program: the manifest and memory's files. */

import type { OsFamily } from "./placement.ts";
import { EXECUTABLE_NAME, hookEntries, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import type { TreeFile } from "./transaction.ts";
import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import { VERSION } from "../lib/version.ts";
import { COMMANDS, commandText, SKILL_NAME, skillText } from "../memory/instructions.ts";
import { systemPromptText } from "../memory/system-prompt.ts";

/** The manifest for a plugin whose executable is `bin/openviking-kimi[.exe]` under the plugin root. */
export function renderManifest(os: OsFamily) {
  const exe = os === "windows" ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;
  return {
    name: PLUGIN_ID,
    version: VERSION,
    description:
      "Long-term memory for Kimi Code CLI, backed by OpenViking: relevant memories before each prompt, " +
      "every finished turn captured, and viking:// tools over MCP.",
    keywords: ["memory", "openviking", "mcp", "hooks"],
    interface: {
      displayName: "OpenViking Memory",
      shortDescription: "Recall and capture long-term memory through OpenViking",
    },
    hooks: hookEntries(os === "windows" ? `.\\bin\\${exe}` : `./bin/${exe}`),
    mcpServers: { [MCP_SERVER_NAME]: { command: `./bin/${exe}`, args: ["mcp"] } },
    systemPromptPath: `./${SYSTEM_PROMPT_FILE}`,
    skills: "./skills",
    commands: "./commands",
  };
}

/** The manifest's text (2-space JSON, final newline), as committed at the repository root. */
export function manifestText(os: OsFamily): string {
  return `${JSON.stringify(renderManifest(os), null, 2)}\n`;
}

/** The memory files of the plugin directory, as install places them (the profile is filled in after). */
export function pluginMemoryFiles(): TreeFile[] {
  return [
    {
      path: SYSTEM_PROMPT_FILE,
      content: systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 }),
      mode: 0o600,
    },
    { path: `skills/${SKILL_NAME}/SKILL.md`, content: skillText("plugin"), mode: 0o600 },
    ...COMMANDS.map((c) => ({
      path: `commands/${c.name}.md`,
      content: commandText("plugin", c),
      mode: 0o600,
    })),
  ];
}
