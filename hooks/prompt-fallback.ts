/**
 * The seed's fallback: the user side of a turn is not lost when capture cannot find the session's journal.
 * The prompt hook keeps each prompt it sees in prompt state — prepared exactly like captured text (injected
 * blocks out, redacted, filtered, truncated) and bounded in count and size. A capture that finds no journal
 * sends the kept prompts it has not sent yet as user messages, each under a key (its text and when it was
 * seen) acknowledged in capture state; a later capture that does find the journal skips the same user text
 * of a turn begun around that time (wire/plan.ts). Whenever the journal is there it is the only truth: this
 * runs only in capture's "no journal" branch, and only for prompts seen after the last journal capture.
 */

import { readState, type SessionState, updateState } from "../runtime/state.ts";
import { fallbackKey, prepareText } from "../wire/plan.ts";
import { clientFor, type HookContext } from "./context.ts";
import type { CaptureMode } from "./capture.ts";
import type { HookResult } from "./dispatch.ts";

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

/** The kept prompts still to send (pure): seen after the last journal capture, not sent by a fallback yet. */
export function duePrompts(kept: readonly FallbackPrompt[], capture: SessionState): FallbackPrompt[] {
  const sent = new Set(capture.capturedKeys);
  return kept.filter((p) => p.at > (capture.lastCaptureAt ?? 0) && !sent.has(fallbackKey(p.text, p.at)));
}

/**
 * Capture's branch for a journal that cannot be found (`reason`): sends the due kept prompts as user
 * messages under the session lock, records each as it is acknowledged, commits like capture does.
 */
export async function captureFromPrompts(
  ctx: HookContext,
  mode: CaptureMode,
  reason: string,
): Promise<HookResult> {
  const none: HookResult = { outcome: "no-journal", data: { reason, fallback: 0 } };
  if (!ctx.capturePaths || !ctx.promptPaths) return none;
  const kept = (await readState(ctx.promptPaths.file)).fallbackPrompts;
  if (!kept.length) return none;
  // Loaded here, not at the top: the prompt hook imports this module for keepPrompt alone.
  const [{ commitSession, sendMessages }, { hasUnsent }, { MIN_COMMIT_MS }] = await Promise.all([
    import("../runtime/sessions.ts"),
    import("../runtime/pending.ts"),
    import("./capture.ts"),
  ]);
  const paths = ctx.capturePaths;
  const client = clientFor(ctx);
  const res = await updateState(paths, async (state, save) => {
    const due = duePrompts(kept, state);
    if (!due.length) return { value: { sent: 0, queued: 0, commit: "none" } };
    const settled = (acked: number, captured: number): SessionState => ({
      ...state,
      capturedKeys: [...state.capturedKeys, ...due.slice(0, acked).map((p) => fallbackKey(p.text, p.at))],
      capturedSinceCommit: state.capturedSinceCommit + captured,
    });
    const queueOnly = await hasUnsent(ctx.pendingDir, ctx.ovSessionId);
    const report = await sendMessages(
      client,
      ctx.ovSessionId,
      due.map((p) => ({ role: "user" as const, content: p.text })),
      {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
        queueOnly,
        // Recorded before the next request, as capture does: a kill never makes the next run resend these.
        onAcked: async (acked) => await save(settled(acked, acked)),
      },
    );
    const next = settled(report.acked, report.sent + report.queued);
    let commit = "none";
    const c = ctx.config;
    const commitDue = next.capturedSinceCommit > 0 &&
      (mode.commitAlways || next.capturedSinceCommit >= c.commitTurnThreshold);
    if (commitDue && mode.budget.remaining() >= MIN_COMMIT_MS) {
      await save(next);
      const last = due[report.acked - 1];
      const outcome = await commitSession(client, ctx.ovSessionId, {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
        key: `${ctx.ovSessionId}:${last ? fallbackKey(last.text, last.at) : "none"}`,
        queueOnly: queueOnly || report.queued > 0,
      });
      commit = outcome.kind;
      if (outcome.kind !== "failed") next.capturedSinceCommit = 0;
    }
    return { state: next, value: { sent: report.sent, queued: report.queued, commit } };
  }, { waitMs: mode.lockWaitMs });
  if (!res.acquired) return { outcome: "lock-timeout", data: { reason } };
  return {
    outcome: "no-journal",
    data: { reason, fallback: res.value.sent + res.value.queued, ...res.value },
  };
}
