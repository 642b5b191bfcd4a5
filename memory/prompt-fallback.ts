/**
 * The prompts the prompt hook keeps for a capture that cannot find the session's journal (capture.ts sends
 * them): prepared exactly like captured user text, bounded in count and size. Pure, so the prompt hook loads
 * only this and kimi/journal/clean.ts for it.
 */

import type { SessionState } from "./state.ts";
import { prepareText } from "../kimi/journal/clean.ts";

/** Prompts kept per session. */
export const MAX_FALLBACK_PROMPTS = 20;

/** Characters kept per session over all its kept prompts (the newest is kept whole up to this). */
export const MAX_FALLBACK_CHARS = 64_000;

/** The same text this soon after the kept one is the same prompt's hook fired twice. */
const REPEAT_MS = 500;

/** A kept prompt. */
export type FallbackPrompt = SessionState["fallbackPrompts"][number];

/**
 * The prompt state with `raw`, seen at `at`, kept — unless capture would skip its text or it repeats the last
 * one; the oldest dropped beyond the bounds.
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
