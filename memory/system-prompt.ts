/**
 * The plugin's system prompt (`system-prompt.md` in the plugin directory, the manifest's `systemPromptPath`):
 * the standing instructions on the memory tools, then the user's profile. Kimi reads it when it loads
 * plugins (start, `/reload`, `/plugins reload`) and freezes it into each new session's system prompt, so the
 * profile never passes through the terminal or the transcript. Install writes it; hooks refresh it in a
 * detached worker (after SessionStart, and after a commit at most every 10 minutes), never on the prompt's
 * path; uninstall removes it. Ours alone: 0600, written atomically, at most 32 KB (Kimi ignores a larger
 * file), the profile redacted like captured text and passed through the printed-text gate.
 */

import type { Config } from "../openviking/config.ts";
import { Budget, clientOptions, createClient } from "../openviking/client.ts";
import { writeFileAtomic } from "../lib/fs.ts";
import { safe } from "../lib/neutralize.ts";
import { fetchProfile, isEmptyProfile, type ProfileParts, renderProfile } from "./profile.ts";
import { redact } from "../lib/redact.ts";
import type { HookContext } from "./context.ts";
import { memoryInstructions, SYSTEM_PROMPT_TITLE } from "./instructions.ts";
import { systemPromptFile } from "../kimi/plugin-root.ts";

/** Kimi's limit for a plugin's system-prompt file (a larger one is ignored whole). */
const SYSTEM_PROMPT_MAX_BYTES = 32 * 1024;

/** How often a commit may refresh the file (SessionStart always does). */
const REFRESH_INTERVAL_MS = 10 * 60_000;

/** How long a refresh may wait for the server. */
const REFRESH_BUDGET_MS = 5000;

/** What the system prompt says of the profile: its block, or why there is none. */
export type ProfileSection =
  | { kind: "profile"; parts: ProfileParts }
  | { kind: "none" }
  | { kind: "unknown" }
  | { kind: "off" };

/** `text` cut at a line end so that its UTF-8 form has at most `max` bytes (pure). */
function fitBytes(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  const head = new TextDecoder().decode(bytes.subarray(0, max)).replace(/\uFFFD$/, "");
  const end = head.lastIndexOf("\n");
  return end > 0 ? head.slice(0, end) : head;
}

/** The profile's parts with credentials and `<private>` spans taken out, as captured text is. */
function redacted(parts: ProfileParts): ProfileParts {
  const leaf = (l: ProfileParts["preferences"][number]) => ({
    path: redact(l.path),
    abstract: redact(l.abstract),
  });
  return {
    space: parts.space,
    profile: redact(parts.profile),
    preferences: parts.preferences.map(leaf),
    entities: parts.entities.map(leaf),
  };
}

/** The whole file: the instructions, then the profile section, within Kimi's 32 KB (pure). */
export function systemPromptText(
  section: ProfileSection,
  settings: { redact: boolean; profileTokenBudget: number },
  now = new Date(),
): string {
  const head = `${memoryInstructions("plugin")}\n\n## The user's profile\n\n`;
  let body: string;
  if (section.kind === "profile") {
    const parts = settings.redact ? redacted(section.parts) : section.parts;
    const rendered = renderProfile(parts, settings.profileTokenBudget) ?? safe`(empty)`;
    body = `From OpenViking, ${now.toISOString().slice(0, 16).replace("T", " ")} UTC:\n\n${rendered.text}`;
  } else if (section.kind === "none") {
    body = "OpenViking has no profile of this user yet; it grows from finished turns.";
  } else if (section.kind === "off") {
    body = "Not given: recall is switched off for openviking-kimi (OPENVIKING_AUTO_RECALL). Search memory " +
      "when the user's preferences matter.";
  } else {
    body = "Not loaded yet: openviking-kimi fills it in from OpenViking at the next session start. Search " +
      "memory when the user's preferences matter.";
  }
  return fitBytes(`${head}${body}\n`, SYSTEM_PROMPT_MAX_BYTES - 1).trimEnd() + "\n";
}

/** What a refresh did. */
export type RefreshOutcome = "written" | "fresh" | "missing" | "not-ours" | "unreachable" | "failed";

/**
 * Rewrites the system-prompt file `file` with the current profile. Only a file that exists and is ours is
 * touched (uninstall took it away, or another plugin's is there: left alone); unless `force`, one written
 * less than {@link REFRESH_INTERVAL_MS} ago is left as it is; when the server does not answer, the file
 * keeps the profile it has. Never throws.
 */
export async function refreshPromptFile(
  file: string,
  c: Config,
  opts: { force: boolean; now?: Date; budgetMs?: number },
): Promise<RefreshOutcome> {
  const now = opts.now ?? new Date();
  try {
    const info = await Deno.lstat(file).catch(() => undefined);
    if (!info) return "missing";
    if (!info.isFile) return "not-ours";
    const current = await Deno.readTextFile(file);
    if (!current.startsWith(SYSTEM_PROMPT_TITLE)) return "not-ours";
    if (!opts.force && info.mtime && now.getTime() - info.mtime.getTime() < REFRESH_INTERVAL_MS) {
      return "fresh";
    }
    let section: ProfileSection = { kind: "off" };
    if (c.enabled && c.autoRecall) {
      const client = createClient(clientOptions(c, ""));
      const parts = await fetchProfile(client, new Budget(opts.budgetMs ?? REFRESH_BUDGET_MS));
      if (!parts) return "unreachable";
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

/** What a hook run inside Kimi's wait (no detached worker) may still spend on a refresh: Kimi waits 10 s. */
const INLINE_LIMIT_MS = 8000;

/**
 * Refreshes the system prompt of the plugin this hook runs from (nothing in config mode); logs what it did.
 * A detached worker has its own time; a run Kimi waits for (detaching off) only what is left of its timeout.
 */
export async function refreshFromHook(ctx: HookContext, force: boolean): Promise<void> {
  const file = systemPromptFile(ctx.env);
  if (!file) return;
  const budgetMs = ctx.isWorker
    ? REFRESH_BUDGET_MS
    : Math.min(REFRESH_BUDGET_MS, INLINE_LIMIT_MS - (Date.now() - ctx.startedAt));
  const outcome = budgetMs < 500 ? "no-time" : await refreshPromptFile(file, ctx.config, { force, budgetMs });
  ctx.log.stage("system-prompt", { outcome, file });
}
