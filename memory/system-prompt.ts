/**
 * The plugin's texts, from the repository's own files: `system-prompt.md` (the instructions, then the profile:
 * redacted, gated; 0600, ≤ 32 KB, refreshed here), the memory skill and the slash commands.
 */

import placedPrompt from "../system-prompt.md" with { type: "text" };
import skill from "../skills/openviking-memory/SKILL.md" with { type: "text" };
import forget from "../commands/forget.md" with { type: "text" };
import recall from "../commands/recall.md" with { type: "text" };
import remember from "../commands/remember.md" with { type: "text" };
import type { Config } from "../openviking/config.ts";
import { Budget, createClient } from "../openviking/client.ts";
import { writeFileAtomic } from "../lib/fs.ts";
import { fetchProfile, isEmptyProfile, type ProfileParts, redactedProfile } from "./profile.ts";
import { renderProfile } from "./digest.ts";
import type { HookContext } from "./context.ts";
import { type Env, isAbsolutePath, joinPath } from "../lib/paths.ts";

/** The plugin's system-prompt file, relative to the plugin root (the manifest's `systemPromptPath`). */
export const SYSTEM_PROMPT_FILE = "system-prompt.md";

/** The skill's name (its directory under `skills/`). */
export const SKILL_NAME = "openviking-memory";

/** The line that marks a skill file as ours (an older config-mode install's too). */
export const OWNED_MARK = "<!-- written by openviking-kimi; `openviking-kimi uninstall` removes it -->";

/** First line of the plugin's system prompt (and its mark). */
export const SYSTEM_PROMPT_TITLE = placedPrompt.slice(0, placedPrompt.indexOf("\n"));

const PROFILE_HEADING = "\n\n## The user's profile\n\n";

/** The standing instructions: the system prompt before the profile. */
const INSTRUCTIONS = placedPrompt.slice(0, placedPrompt.indexOf(PROFILE_HEADING));

/** The plugin's memory files as install places them: path under the plugin root, then text. */
export const PLUGIN_TEXTS: readonly (readonly [string, string])[] = [
  [SYSTEM_PROMPT_FILE, placedPrompt],
  [`skills/${SKILL_NAME}/SKILL.md`, skill],
  ["commands/forget.md", forget],
  ["commands/recall.md", recall],
  ["commands/remember.md", remember],
];

/** How often a commit may refresh the file, and how long a refresh may wait. */
const [REFRESH_INTERVAL_MS, REFRESH_BUDGET_MS] = [10 * 60_000, 5000];
/** The profile section's size in model tokens. */
const PROFILE_TOKEN_BUDGET = 6000;

type ProfileSection = { kind: "profile"; parts: ProfileParts } | { kind: "none" | "off" };

const SECTION_TEXT = {
  none: "OpenViking has no profile of this user yet; it grows from finished turns.",
  off:
    "Not given: recall is switched off for openviking-kimi (OPENVIKING_AUTO_RECALL). Search memory when the " +
    "user's preferences matter.",
};

/** The whole file: the instructions, then the profile section, cut at a line within Kimi's 32 KB. */
function systemPromptText(
  section: ProfileSection,
  settings: { redact: boolean },
  now = new Date(),
): string {
  const parts = section.kind === "profile" &&
    (settings.redact ? redactedProfile(section.parts) : section.parts);
  const body = parts
    ? `From OpenViking, ${now.toISOString().slice(0, 16).replace("T", " ")} UTC:\n\n${
      renderProfile(parts, PROFILE_TOKEN_BUDGET)?.text ?? "(empty)"
    }`
    : SECTION_TEXT[section.kind as keyof typeof SECTION_TEXT];
  let text = `${INSTRUCTIONS}${PROFILE_HEADING}${body}`;
  const bytes = new TextEncoder().encode(text);
  if (bytes.length >= 32 * 1024 - 1) {
    text = new TextDecoder().decode(bytes.subarray(0, 32 * 1024 - 1)).replace(/\uFFFD$/, "");
    if (text.lastIndexOf("\n") > 0) text = text.slice(0, text.lastIndexOf("\n"));
  }
  return `${text.trimEnd()}\n`;
}

/** What a refresh did. */
export type RefreshOutcome = "written" | "fresh" | "missing" | "not-ours" | "unreachable" | "failed";

/** Rewrites `file` (when there and ours; unless `force`, not when fresh) with the current profile. Never throws. */
export async function refreshPromptFile(
  file: string,
  c: Config,
  opts: { force: boolean; now?: Date; budgetMs?: number },
): Promise<RefreshOutcome> {
  const now = opts.now ?? new Date();
  try {
    const info = await Deno.lstat(file).catch(() => undefined);
    if (!info) return "missing";
    const current = info.isFile ? await Deno.readTextFile(file) : "";
    if (!current.startsWith(SYSTEM_PROMPT_TITLE)) return "not-ours";
    if (!opts.force && info.mtime && now.getTime() - info.mtime.getTime() < REFRESH_INTERVAL_MS) {
      return "fresh";
    }
    let section: ProfileSection = { kind: "off" };
    if (c.enabled && c.autoRecall) {
      const budget = new Budget(opts.budgetMs ?? REFRESH_BUDGET_MS);
      const parts = await fetchProfile(createClient(c, ""), budget);
      if ("ok" in parts) return "unreachable";
      section = isEmptyProfile(parts) ? { kind: "none" } : { kind: "profile", parts };
    }
    const text = systemPromptText(section, c, now);
    if (text !== current) await writeFileAtomic(file, text, { mode: 0o600, privateDir: false });
    else await Deno.utime(file, now, now);
    return "written";
  } catch {
    return "failed";
  }
}

/** The system-prompt file under `KIMI_PLUGIN_ROOT`, if Kimi gave this hook an absolute plugin root. */
function systemPromptFile(env: Env): string | undefined {
  const root = env.KIMI_PLUGIN_ROOT?.trim();
  return root && isAbsolutePath(root) ? joinPath(root, SYSTEM_PROMPT_FILE) : undefined;
}

/** Refreshes the system prompt of the plugin this hook runs from (none in an old config-mode home); logs it. */
export async function refreshFromHook(ctx: HookContext, force: boolean): Promise<void> {
  const file = systemPromptFile(ctx.env);
  if (!file) return;
  const budgetMs = Math.min(REFRESH_BUDGET_MS, ctx.isWorker ? Infinity : 8000 - (Date.now() - ctx.startedAt));
  const outcome = budgetMs < 500 ? "no-time" : await refreshPromptFile(file, ctx.config, { force, budgetMs });
  ctx.log.stage("system-prompt", { outcome, file });
}
