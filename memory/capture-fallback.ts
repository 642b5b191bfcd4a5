/**
 * Capture's branch for a session whose journal cannot be found: the prompts the prompt hook kept
 * (prompt-fallback.ts) are the user side of the turn, sent as user messages under the session lock, each
 * acknowledged under its fallback key as it settles, and committed like a journal capture.
 */

import { hasUnsent } from "../openviking/queue.ts";
import { sendMessages } from "../openviking/sessions.ts";
import { readState, type SessionState, updateState } from "./state.ts";
import { fallbackKey } from "../kimi/journal/plan.ts";
import { type CaptureMode, commitIfDue, lockedMode } from "./capture-mode.ts";
import { clientFor, type HookContext, type HookResult } from "./context.ts";
import type { FallbackPrompt } from "./prompt-fallback.ts";

/** The kept prompts still to send (pure): seen after the last journal capture, not sent by a fallback yet. */
export function duePrompts(kept: readonly FallbackPrompt[], capture: SessionState): FallbackPrompt[] {
  const sent = new Set(capture.capturedKeys);
  return kept.filter((p) => p.at > (capture.lastCaptureAt ?? 0) && !sent.has(fallbackKey(p.text, p.at)));
}

/**
 * Sends the due kept prompts of a session whose journal cannot be found (`reason`) as user messages under
 * the session lock, records each as it is acknowledged, commits like capture does.
 */
export async function captureFromPrompts(
  ctx: HookContext,
  waiting: CaptureMode,
  reason: string,
): Promise<HookResult> {
  const none: HookResult = { outcome: "no-journal", data: { reason, fallback: 0 } };
  if (!ctx.capturePaths || !ctx.promptPaths) return none;
  const kept = (await readState(ctx.promptPaths.file)).fallbackPrompts;
  if (!kept.length) return none;
  const client = clientFor(ctx);
  const sid = ctx.ovSessionId;
  const res = await updateState(ctx.capturePaths, async (state, save) => {
    const mode = lockedMode(waiting); // a worker's budget starts now, after its wait for the lock
    const due = duePrompts(kept, state);
    if (!due.length) return { value: { turns: 0, sent: 0, queued: 0, rejected: 0, commit: "none" } };
    const settled = (acked: number, captured: number): SessionState => ({
      ...state,
      capturedKeys: [...state.capturedKeys, ...due.slice(0, acked).map((p) => fallbackKey(p.text, p.at))],
      capturedSinceCommit: state.capturedSinceCommit + captured,
    });
    const queueOnly = await hasUnsent(ctx.pendingDir, sid);
    const report = await sendMessages(
      client,
      sid,
      due.map((p) => ({ role: "user" as const, content: p.text })),
      {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
        queueOnly,
        // Recorded before the next request, as capture does: a kill never makes the next run resend these.
        onAcked: async (acked) => await save(settled(acked, acked)),
      },
    );
    const last = due[report.acked - 1];
    const done = await commitIfDue(
      settled(report.acked, report.acked),
      mode,
      ctx.config.commitTurnThreshold,
      save,
      {
        client,
        sessionId: sid,
        pendingDir: ctx.pendingDir,
        key: `${sid}:${last ? fallbackKey(last.text, last.at) : "none"}`,
        queueOnly: queueOnly || report.queued > 0,
      },
    );
    // Each kept prompt is a turn of its own (its answer is not known without the journal).
    const { sent, queued, rejected } = report;
    const value = { turns: report.acked, sent, queued, rejected, commit: done.commit };
    return { state: done.state, value };
  }, { waitMs: waiting.lockWaitMs, durable: true });
  if (!res.acquired) return { outcome: "lock-timeout", data: { reason } };
  return {
    outcome: "no-journal",
    // Settled: sent, queued, or refused and kept (counted as refused, never as delivered).
    data: { reason, fallback: res.value.turns, ...res.value },
  };
}
