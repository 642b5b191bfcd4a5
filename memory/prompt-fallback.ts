/**
 * The seed's fallback: the user side of a turn is not lost when capture cannot find the session's journal.
 * The prompt hook keeps each prompt it sees in prompt state — prepared exactly like captured text (injected
 * blocks out, redacted, filtered, truncated) and bounded in count and size. A capture that finds no journal
 * sends the kept prompts it has not sent yet as user messages, each under a key (its text and when it was
 * seen) acknowledged in capture state; a later capture that does find the journal skips the same user text
 * of a turn begun around that time (wire/plan.ts). Whenever the journal is there it is the only truth: the
 * sending (capture-fallback.ts) runs only in capture's "no journal" branch, and only for prompts seen after
 * the last journal capture. This module is pure: the prompt hook loads it for `keepPrompt` alone.
 */

import type { SessionState } from "./state.ts";
import { prepareText } from "../kimi/journal/clean.ts";

/** Prompts kept per session. */
export const MAX_FALLBACK_PROMPTS = 20;

/** Characters kept per session, over all kept prompts (the newest is kept whole up to this). */
export const MAX_FALLBACK_CHARS = 64_000;

/** The same text this soon after the kept one is the same prompt's hook fired twice. */
const REPEAT_MS = 500;

/** A kept prompt. */
export type FallbackPrompt = SessionState["fallbackPrompts"][number];

/**
 * The prompt state with `raw` kept as a fallback prompt seen at `at` (pure): prepared like captured user text;
 * nothing kept when capture would skip it; oldest dropped beyond the bounds.
 */
export function keepPrompt(
  state: SessionState,
  raw: string,
  at: number,
  options: { maxLength: number; redact: boolean },
): SessionState {
  const { text, reason } = prepareText(raw, "user", {
    maxLength: Math.min(options.maxLength, MAX_FALLBACK_CHARS),
    redact: options.redact,
  });
  const last = state.fallbackPrompts.at(-1);
  if (reason || (last && last.text === text && Math.abs(at - last.at) < REPEAT_MS)) return state;
  const kept = [...state.fallbackPrompts, { text, at }].slice(-MAX_FALLBACK_PROMPTS);
  let chars = kept.reduce((n, p) => n + p.text.length, 0);
  while (kept.length > 1 && chars > MAX_FALLBACK_CHARS) chars -= kept.shift()!.text.length;
  return { ...state, fallbackPrompts: kept };
}
