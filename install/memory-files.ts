/**
 * What install adds so the model knows about memory without the terminal showing it (hooks/instructions.ts
 * has the texts):
 *
 * - plugin mode: the manifest's `systemPromptPath`, `skills` and `commands`, and their files in the plugin
 *   directory — `system-prompt.md` (0600: it will hold the profile; refreshed right after install and then
 *   by the hooks), `skills/openviking-memory/SKILL.md`, `commands/{remember,forget,recall}.md`;
 * - config mode (no manifest): the skill in Kimi's user skills directory,
 *   `$KIMI_CODE_HOME/skills/openviking-memory/SKILL.md`, marked as ours.
 *
 * Uninstall takes out exactly these: the config-mode skill (only when it carries our mark) and, in plugin
 * mode, the system-prompt file (the plugin directory itself stays unless --purge).
 */

import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { loadConfig } from "../openviking/config.ts";
import { dirName, joinPath } from "../lib/paths.ts";
import {
  COMMANDS,
  commandText,
  OWNED_MARK,
  SKILL_NAME,
  skillText,
  SYSTEM_PROMPT_TITLE,
} from "../memory/instructions.ts";
import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import { refreshPromptFile, systemPromptText } from "../memory/system-prompt.ts";
import { PLUGIN_ID } from "./spec.ts";
import { PLUGIN_COMMANDS_DIR, PLUGIN_SKILL_FILE } from "./memory-layout.ts";
import type { KimiState } from "./detect.ts";
import type { PluginFile } from "./plugin.ts";
import { type Context, makeDirs, type Plan, removalStep, type Step } from "./transaction.ts";

/** The memory files of the plugin directory, as install places them (the profile is filled in after). */
export function pluginMemoryFiles(): PluginFile[] {
  return [
    {
      path: SYSTEM_PROMPT_FILE,
      content: systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 }),
      mode: 0o600,
    },
    { path: PLUGIN_SKILL_FILE, content: skillText("plugin"), mode: 0o600 },
    ...COMMANDS.map((c) => ({
      path: `${PLUGIN_COMMANDS_DIR}/${c.name}.md`,
      content: commandText("plugin", c),
      mode: 0o600,
    })),
  ];
}

/** Where config mode puts the memory skill: Kimi's user skills directory. */
function configSkillPath(state: KimiState): string {
  return joinPath(state.paths.home, "skills", SKILL_NAME, "SKILL.md");
}

/** Whether a SKILL.md text is the one openviking-kimi wrote. */
function isOurs(text: string | undefined): boolean {
  return text !== undefined && text.includes(OWNED_MARK);
}

/** Writes a file of ours (no backup: nobody else's bytes are in it); the undo puts back what was there. */
function ownedFileStep(path: string, before: string | undefined, after: string, what: string): Step {
  return {
    describe: `${before === undefined ? "create" : "update"} ${path} (${what})`,
    run: async () => {
      const dirs = await makeDirs(dirName(path));
      try {
        await writeFileAtomic(path, after, { mode: 0o600, privateDir: false });
      } catch (error) {
        await dirs().catch(() => {});
        throw error;
      }
      return {
        message: `${what}: ${path}`,
        changed: path,
        undo: async () => {
          if (before === undefined) await Deno.remove(path);
          else await writeFileAtomic(path, before, { mode: 0o600, privateDir: false });
          await dirs();
        },
      };
    },
  };
}

/** Plans config mode's skill: written (or brought up to date) when absent or ours; a skill of the user's is left. */
export async function planConfigSkill(state: KimiState, plan: Plan): Promise<void> {
  const path = configSkillPath(state);
  const before = await readTextIfExists(path).catch(() => undefined);
  const after = skillText("config");
  if (before === after) return;
  if (before !== undefined && !isOurs(before)) {
    plan.notes.push(
      `Note: ${path} is a skill of your own; left as it is (the memory skill is not installed).`,
    );
    return;
  }
  plan.changes.push({ path, before, after, backup: "bak", displayOnly: true });
  plan.steps.push(ownedFileStep(path, before, after, "memory skill installed"));
}

/** Plans taking config mode's skill out (ours only), its directory with it, and `skills/` when that is left empty. */
export async function planConfigSkillRemoval(state: KimiState, plan: Plan): Promise<void> {
  const path = configSkillPath(state);
  if (!isOurs(await readTextIfExists(path).catch(() => undefined))) return;
  const dir = dirName(path);
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  const target = entries.length === 1 ? dir : path;
  plan.steps.push(
    removalStep(target, `delete ${target} (the memory skill)`, `memory skill removed: ${target}`),
  );
  const skills = dirName(dir);
  plan.steps.push({
    describe: `delete ${skills} when it is left empty`,
    run: () => Promise.resolve({ commit: () => Deno.remove(skills).catch(() => {}) }),
  });
}

/** Plans removing the plugin's system prompt (it holds the user's profile); the plugin directory stays. */
export async function planSystemPromptRemoval(state: KimiState, plan: Plan): Promise<void> {
  const root = state.plugin?.owner === "ours"
    ? state.plugin.root
    : joinPath(state.paths.managedDir, PLUGIN_ID);
  const file = joinPath(root, SYSTEM_PROMPT_FILE);
  const text = await readTextIfExists(file).catch(() => undefined);
  if (text === undefined || !text.startsWith(SYSTEM_PROMPT_TITLE)) return;
  plan.steps.push(
    removalStep(
      file,
      `delete ${file} (the profile in the plugin's system prompt)`,
      `system prompt removed: ${file}`,
    ),
  );
}

/**
 * After a plugin-mode install: fills the new system prompt with the user's profile, if OpenViking answered
 * (`answers`; then within a few seconds, else the next session start does). Best effort, says what happened.
 */
export async function refreshInstalledPrompt(ctx: Context, root: string, answers: boolean): Promise<void> {
  const file = joinPath(root, SYSTEM_PROMPT_FILE);
  const { config } = await loadConfig(ctx.env);
  const outcome = answers
    ? await refreshPromptFile(file, config, { force: true, now: ctx.now, budgetMs: 3000 })
    : "unreachable";
  const why = outcome === "unreachable" ? "OpenViking did not answer" : `refresh: ${outcome}`;
  ctx.out.info(
    outcome === "written"
      ? `  ✓ the user's profile is in the plugin's system prompt: ${file}`
      : `Note: the plugin's system prompt has no profile yet (${why}); the next Kimi session start fills it in.`,
  );
}
