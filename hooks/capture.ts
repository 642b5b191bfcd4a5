/**
 * Capture for Stop, StopFailure, PreCompact, SessionEnd (detached worker) and Interrupt (synchronous, 2 s
 * budget):
 * wait — outside the lock — for the newest turn to close, then under the session lock read the journal from
 * the cursor, plan, send (or queue), acknowledge a contiguous prefix, move the cursor, and commit.
 */

import { Budget } from "../runtime/http.ts";
import { kimiHome } from "../runtime/paths.ts";
import { hasUnsent, replayPending } from "../runtime/pending.ts";
import { commitSession, sendMessages } from "../runtime/sessions.ts";
import { type Cursor, readState, type SessionState, updateState, writeState } from "../runtime/state.ts";
import { locateJournal } from "../wire/locate.ts";
import { acknowledge, planCapture } from "../wire/plan.ts";
import { cursorAt, readJournal } from "../wire/read.ts";
import { scanTurns, turnLineFilter, type TurnScan } from "../wire/turns.ts";
import { clientFor, type HookContext } from "./context.ts";
import type { HookResult } from "./dispatch.ts";
import type { HookEvent } from "./input.ts";

/** How one capture behaves, by event. */
export interface CaptureMode {
  /** Wait up to this long (before locking) for the newest turn's end. */
  waitMs: number;
  /** Take open turns too, after the wait. */
  force: boolean;
  /** How long to wait for the session lock. */
  lockWaitMs: number;
  budget: Budget;
  /** Commit whenever anything is pending commit, regardless of the threshold. */
  commitAlways: boolean;
}

/** A detached worker waits this long for the lock: no host timeout applies to it. */
export const WORKER_LOCK_WAIT_MS = 120_000;

/** Time a worker gives its network work, independent of the host. */
export const WORKER_BUDGET_MS = 60_000;

/** Below this much remaining budget an interrupt capture skips its commit. */
export const MIN_COMMIT_MS = 250;

/** The capture mode of an event run (in the worker, or synchronously). */
export function captureMode(
  event: HookEvent,
  config: { captureWaitMs: number; interruptBudgetMs: number },
  startedAt: number,
): CaptureMode {
  if (event === "interrupt") {
    const total = config.interruptBudgetMs;
    const budget = new Budget(total - (Date.now() - startedAt));
    return {
      waitMs: Math.min(config.captureWaitMs, Math.floor(total * 0.4)),
      force: true,
      lockWaitMs: Math.floor(total * 0.3),
      budget,
      commitAlways: true,
    };
  }
  const base = { lockWaitMs: WORKER_LOCK_WAIT_MS, budget: new Budget(WORKER_BUDGET_MS) };
  if (event === "stop") return { ...base, waitMs: config.captureWaitMs, force: false, commitAlways: false };
  if (event === "session-end") {
    return { ...base, waitMs: Math.min(config.captureWaitMs, 3000), force: true, commitAlways: true };
  }
  if (event === "stop-failure") {
    // A failed turn fires StopFailure, never Stop: its prompt (and any text of steps before the failure) goes
    // now. The v2 engine still writes the turn's `turn.ended`; a legacy failed turn never closes: forced.
    return { ...base, waitMs: Math.min(config.captureWaitMs, 3000), force: true, commitAlways: false };
  }
  return { ...base, waitMs: 0, force: false, commitAlways: true }; // pre-compact
}

/** Reads the journal after `cursor` and scans its turns (no lock, no writes). */
async function scan(
  path: string,
  cursor: Cursor | undefined,
): Promise<{ turns: TurnScan; read: Awaited<ReturnType<typeof readJournal>> }> {
  const usable = cursor && cursor.path === path ? cursor : undefined;
  const read = await readJournal(path, usable, turnLineFilter);
  const first = usable && !read.rewritten ? usable.nextIndex : 0;
  return { turns: scanTurns(read.lines, first), read };
}

/** Waits (bounded) until the newest main-agent turn after the cursor is closed. */
async function waitForTurnEnd(path: string, cursor: Cursor | undefined, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { turns } = await scan(path, cursor).catch(() => ({ turns: undefined }));
    const newest = turns?.turns.at(-1);
    if (!newest || newest.closed) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, Math.min(100, Math.max(1, deadline - Date.now()))));
  }
}

/** The result of one capture, for logs and tests. */
export interface CaptureReport {
  journal?: string;
  turns: number;
  planned: number;
  sent: number;
  queued: number;
  rejected: number;
  acked: number;
  skipped: number;
  commit: string;
  rewritten: boolean;
  waited: boolean;
}

/** Captures new whole turns of the session's journal and commits; the state changes only under the lock. */
export async function captureSession(ctx: HookContext, mode: CaptureMode): Promise<HookResult> {
  if (!ctx.capturePaths || !ctx.ovSessionId) return { outcome: "no-session-id" };
  const paths = ctx.capturePaths;
  const c = ctx.config;
  const before = await readState(paths.file);
  let journal = before.cursor?.path;
  if (!journal || !(await Deno.stat(journal).then((i) => i.isFile, () => false))) {
    const found = await locateJournal(kimiHome(ctx.env), ctx.hostSessionId);
    if (!found.ok) return { outcome: "no-journal", data: { reason: found.reason } };
    journal = found.path;
  }
  const journalPath = journal;
  // A forced capture ends the turns that had begun when it started, never one the resumed session began while
  // this capture waited (for the turn end, the lock or the server): that one is captured whole later.
  const forceLimit = mode.force ? await Deno.stat(journalPath).then((i) => i.size, () => 0) : 0;
  const waited = mode.waitMs > 0 ? await waitForTurnEnd(journalPath, before.cursor, mode.waitMs) : true;
  const client = clientFor(ctx);
  const res = await updateState(paths, async (state) => {
    const { turns, read } = await scan(journalPath, state.cursor);
    const report: CaptureReport = {
      journal: journalPath,
      turns: turns.turns.length,
      planned: 0,
      sent: 0,
      queued: 0,
      rejected: 0,
      acked: 0,
      skipped: 0,
      commit: "none",
      rewritten: read.rewritten,
      waited,
    };
    // Earlier writes of this session still queued go first, so the server sees turns in order.
    let queueOnly = false;
    if (await hasUnsent(ctx.pendingDir, ctx.ovSessionId)) {
      await replayPending(ctx.pendingDir, client, {
        limit: c.pendingReplayLimit,
        maxRetries: c.pendingMaxRetries,
        ttlDays: c.pendingTtlDays,
        budget: mode.budget,
        sessionId: ctx.ovSessionId,
      });
      queueOnly = await hasUnsent(ctx.pendingDir, ctx.ovSessionId);
    }
    const newest = turns.turns.at(-1);
    const plan = planCapture(turns.turns, new Set(state.capturedKeys), state.ackedBelow, {
      maxLength: c.captureMaxLength,
      redact: c.redact,
      includeOpen: mode.force && !(newest && !newest.closed && newest.startOffset >= forceLimit),
    });
    report.planned = plan.toSend.length;
    report.skipped = plan.skipped.length;
    // The state once the first `acked` planned messages are settled (`captured` of them new). Progress
    // recorded before the capture ends keeps the previous `lastCapture*`: those mark finished captures.
    const stateAfter = async (acked: number, captured: number, done: boolean): Promise<SessionState> => {
      const ack = acknowledge(plan, acked, state.ackedBelow, turns.turns, turns.nextIndex);
      return {
        ...state,
        capturedKeys: [...state.capturedKeys, ...ack.keys],
        ackedBelow: ack.ackedBelow,
        capturedSinceCommit: state.capturedSinceCommit + captured,
        cursor: {
          path: journalPath,
          ...(await cursorAt(journalPath, ack.resumeAt ? ack.resumeAt.startOffset : read.endOffset)),
          nextIndex: ack.resumeAt ? ack.resumeAt.index : turns.nextIndex,
        },
        lastCaptureAt: done ? Date.now() : state.lastCaptureAt,
        lastCaptureEvent: done ? ctx.event : state.lastCaptureEvent,
        protocolVersion: turns.protocolVersion ?? state.protocolVersion,
      };
    };
    const sent = plan.toSend.length
      ? await sendMessages(client, ctx.ovSessionId, plan.toSend.map((x) => x.payload), {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
        queueOnly,
        // Recorded before the next request: a kill later on never makes the next capture send these again.
        onAcked: async (acked) => await writeState(paths.file, await stateAfter(acked, acked, false)),
      })
      : { acked: 0, sent: 0, queued: 0, rejected: 0 };
    Object.assign(report, {
      sent: sent.sent,
      queued: sent.queued,
      rejected: sent.rejected,
      acked: sent.acked,
    });
    const next = await stateAfter(sent.acked, sent.sent + sent.queued, true);

    const due = next.capturedSinceCommit > 0 &&
      (mode.commitAlways || next.capturedSinceCommit >= c.commitTurnThreshold);
    if (due && mode.budget.remaining() >= MIN_COMMIT_MS) {
      // What was sent or queued is recorded before the commit request, for the same reason.
      await writeState(paths.file, await stateAfter(sent.acked, sent.sent + sent.queued, false));
      const outcome = await commitSession(client, ctx.ovSessionId, {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
      });
      report.commit = outcome.kind;
      if (outcome.kind !== "failed") next.capturedSinceCommit = 0;
    } else if (due) report.commit = "skipped-budget";
    return { state: next, value: report };
  }, { waitMs: mode.lockWaitMs });
  if (!res.acquired) return { outcome: "lock-timeout", data: { journal: journalPath } };
  return { outcome: "captured", data: { ...res.value } };
}

/**
 * Hook handler for stop, stop-failure, pre-compact, session-end and interrupt. It runs in the detached worker (the parent
 * only forwarded stdin, see detach.ts) or synchronously: for interrupt, or when detaching is switched off.
 */
export async function captureHook(ctx: HookContext): Promise<HookResult> {
  if (!ctx.config.autoCapture) return { outcome: "capture-off" };
  if (ctx.event === "pre-compact" && ctx.promptPaths) {
    // The compacted context loses earlier injections: let the profile and memories be injected again.
    await updateState(
      ctx.promptPaths,
      (s) => Promise.resolve({ state: { ...s, profileInjected: false, injectedUris: [] }, value: null }),
      {
        waitMs: 1000,
      },
    );
  }
  return await captureSession(ctx, captureMode(ctx.event, ctx.config, ctx.startedAt));
}
