/**
 * The prompts the prompt hook keeps, prepared like captured user text: a journal capture settles the ones its
 * turns carry; the rest (no journal, a turn that never reached it or never ended) are sent by the fallback.
 */

import type { SessionState } from "./state.ts";
import { prepareText } from "../kimi/journal/clean.ts";
import { fallbackKey, seenAt } from "../kimi/journal/plan.ts";
import type { Turn } from "../kimi/journal/turns.ts";

/** Prompts and characters kept per session (the newest whole up to the characters). */
export const MAX_FALLBACK_PROMPTS = 20;
export const MAX_FALLBACK_CHARS = 64_000;
/** The same text this soon after is the same prompt's hook fired twice (not kept again, no second recall). */
export const DUPLICATE_WINDOW_MS = 500;

export type FallbackPrompt = SessionState["fallbackPrompts"][number];

/** A kept prompt still unsettled this long after it was seen is sent by the next capture or session start. */
export const SETTLE_MS = 60_000;

/** The key of a kept prompt a journal capture delivered (not a fallback send: the plan never reads it). */
const journalKey = (p: FallbackPrompt) => `j${fallbackKey(p.text, p.at)}`;

/**
 * The kept prompts `capture` has not settled (pure): neither sent by the fallback nor delivered from the
 * journal, and seen after `promptsFrom` (before it, the last capture of a state older than these keys).
 */
export function duePrompts(kept: readonly FallbackPrompt[], capture: SessionState): FallbackPrompt[] {
  const keys = new Set(capture.capturedKeys);
  const from = capture.promptsFrom ?? capture.lastCaptureAt ?? 0;
  return kept.filter((p) => p.at > from && !keys.has(fallbackKey(p.text, p.at)) && !keys.has(journalKey(p)));
}

/** The prompts among `prompts` that `turns` carry (pure): per turn, the one of its text seen nearest when it began. */
export function carried(
  prompts: readonly FallbackPrompt[],
  turns: readonly Turn[],
  options: { maxLength: number; redact: boolean },
): FallbackPrompt[] {
  const left = [...prompts];
  const out: FallbackPrompt[] = [];
  for (const { time, prompt } of turns) {
    if (time === undefined || !prompt) continue;
    const { text } = prepare(prompt, options);
    const near = left.filter((p) => p.text === text && seenAt(time, p.at))
      .sort((a, b) => Math.abs(a.at - time) - Math.abs(b.at - time));
    if (near.length) out.push(...left.splice(left.indexOf(near[0]), 1));
  }
  return out;
}

/** The keys marking `prompts` as delivered from the journal. */
export const journalKeys = (prompts: readonly FallbackPrompt[]) => prompts.map(journalKey);

/** A prompt's text as kept (capture's preparation, bounded to the kept characters). */
function prepare(raw: string, options: { maxLength: number; redact: boolean }) {
  return prepareText(raw, "user", { ...options, maxLength: Math.min(options.maxLength, MAX_FALLBACK_CHARS) });
}

/** The prompt state with `raw` kept (unless capture would skip it or it repeats), the oldest dropped past the bounds. */
export function keepPrompt(
  state: SessionState,
  raw: string,
  at: number,
  options: { maxLength: number; redact: boolean },
): SessionState {
  const { text, reason } = prepare(raw, options);
  const last = state.fallbackPrompts.at(-1);
  if (reason || (last && last.text === text && Math.abs(at - last.at) < DUPLICATE_WINDOW_MS)) return state;
  const kept = [...state.fallbackPrompts, { text, at }].slice(-MAX_FALLBACK_PROMPTS);
  let chars = kept.reduce((n, p) => n + p.text.length, 0);
  while (kept.length > 1 && chars > MAX_FALLBACK_CHARS) chars -= kept.shift()!.text.length;
  return { ...state, fallbackPrompts: kept };
}
