/** The prompts the prompt hook keeps, prepared like captured user text, for a capture without a journal. */

import type { SessionState } from "./state.ts";
import { prepareText } from "../kimi/journal/clean.ts";

/** Prompts and characters kept per session (the newest whole up to the characters). */
export const MAX_FALLBACK_PROMPTS = 20;
export const MAX_FALLBACK_CHARS = 64_000;
/** The same text this soon after is the same prompt's hook fired twice. */
const REPEAT_MS = 500;

export type FallbackPrompt = SessionState["fallbackPrompts"][number];

/** The prompt state with `raw` kept (unless capture would skip it or it repeats), the oldest dropped past the bounds. */
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
