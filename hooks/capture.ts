/**
 * Capture for Stop, StopFailure, PreCompact, SessionEnd (detached worker) and Interrupt (synchronous, 2 s
 * budget):
 * wait — outside the lock — for the newest turn to close, then under the session lock read the journal from
 * the cursor, settle an intent an earlier run left, and in bounded steps plan, record the intent, send (or
 * queue), acknowledge a contiguous prefix and move the cursor; then commit (queued behind queued writes).
 */

import { Budget, type FailureKind } from "../runtime/http.ts";
import { kimiHome } from "../runtime/paths.ts";
import { hasUnsent, replayQueue, SessionQueue } from "../runtime/pending.ts";
import { commitSession, sendMessages } from "../runtime/sessions.ts";
import {
  type Cursor,
  MAX_CAPTURED_KEYS,
  readState,
  type SessionState,
  updateState,
} from "../runtime/state.ts";
import { locateJournal } from "../wire/locate.ts";
import { acknowledge, type Plan, planCapture } from "../wire/plan.ts";
import { settledElsewhere } from "./inflight.ts";
import { cursorAt, readJournal } from "../wire/read.ts";
import { scanTurns, turnLineFilter, type TurnScan } from "../wire/turns.ts";
import { clientFor, type HookContext } from "./context.ts";
import type { HookResult } from "./dispatch.ts";
import type { HookEvent } from "./events.ts";

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
  /** Bounded steps of at most `TURNS_PER_STEP` turns this run took. */
  steps: number;
  /** Turns left for a later run (budget spent, or something could not be settled). */
  left: number;
  commit: string;
  taskId?: string;
  /** Why messages were queued, or why the capture stopped ("local": our own state or queue could not be written). */
  cause?: { kind: FailureKind | "local"; status: number; message: string };
  /** Messages of an unrecorded earlier request found queued or on the server (not sent again). */
  settledElsewhere: number;
  /** Loop events whose turn id matched no prompt: bound to the open turn, or (no open turn) not bound. */
  rebound: number;
  unbound: number;
  rewritten: boolean;
  waited: boolean;
}

/** A long backlog is planned and sent in steps of this many turns, each recorded before the next. */
export const TURNS_PER_STEP = 200;

/** The commit key of a capture: the session and the last message it covers. */
function commitKey(sessionId: string, lastKey: string | undefined): string {
  return `${sessionId}:${lastKey ?? "none"}`;
}

/** Captures new whole turns of the session's journal and commits; the state changes only under the lock. */
export async function captureSession(ctx: HookContext, mode: CaptureMode): Promise<HookResult> {
  if (!ctx.capturePaths || !ctx.ovSessionId) return { outcome: "no-session-id" };
  const paths = ctx.capturePaths;
  const c = ctx.config;
  const sid = ctx.ovSessionId;
  const before = await readState(paths.file);
  let journal = before.cursor?.path;
  if (!journal || !(await Deno.stat(journal).then((i) => i.isFile, () => false))) {
    const found = await locateJournal(kimiHome(ctx.env), ctx.hostSessionId);
    // No journal: the prompts the prompt hook kept are the user side of the turn (see prompt-fallback.ts).
    if (!found.ok) {
      return await (await import("./prompt-fallback.ts")).captureFromPrompts(ctx, mode, found.reason);
    }
    journal = found.path;
  }
  const journalPath = journal;
  // A forced capture ends the turns that had begun when it started, never one the resumed session began while
  // this capture waited (for the turn end, the lock or the server): that one is captured whole later.
  const forceLimit = mode.force ? await Deno.stat(journalPath).then((i) => i.size, () => 0) : 0;
  const waited = mode.waitMs > 0 ? await waitForTurnEnd(journalPath, before.cursor, mode.waitMs) : true;
  const client = clientFor(ctx);
  const res = await updateState(paths, async (start, save) => {
    const { turns, read } = await scan(journalPath, start.cursor);
    const report: CaptureReport = {
      journal: journalPath,
      turns: turns.turns.length,
      planned: 0,
      sent: 0,
      queued: 0,
      rejected: 0,
      acked: 0,
      skipped: 0,
      steps: 0,
      left: 0,
      commit: "none",
      settledElsewhere: 0,
      rebound: turns.rebound,
      unbound: turns.unbound,
      rewritten: read.rewritten,
      waited,
    };
    const newest = turns.turns.at(-1);
    const planOptions = {
      maxLength: c.captureMaxLength,
      redact: c.redact,
      includeOpen: mode.force && !(newest && !newest.closed && newest.startOffset >= forceLimit),
      maxTurns: TURNS_PER_STEP,
    };
    // The state once the first `acked` planned messages of `plan` are settled (`captured` of them new).
    // Progress recorded before the capture ends keeps `lastCapture*`: those mark finished captures.
    const stateAfter = async (
      state: SessionState,
      plan: Plan,
      acked: number,
      captured: number,
    ): Promise<SessionState> => {
      const ack = acknowledge(plan, acked, state.ackedBelow, turns.turns, turns.nextIndex);
      return {
        ...state,
        capturedKeys: [...state.capturedKeys, ...ack.keys].slice(-MAX_CAPTURED_KEYS),
        ackedBelow: ack.ackedBelow,
        capturedSinceCommit: state.capturedSinceCommit + captured,
        lastAckedKey: ack.keys.at(-1) ?? state.lastAckedKey,
        inflight: undefined,
        cursor: {
          path: journalPath,
          ...(await cursorAt(journalPath, ack.resumeAt ? ack.resumeAt.startOffset : read.endOffset)),
          nextIndex: ack.resumeAt ? ack.resumeAt.index : turns.nextIndex,
        },
        protocolVersion: turns.protocolVersion ?? state.protocolVersion,
      };
    };
    let state = start;

    // A run that stopped without recording its last request's outcome: settle what it may have delivered.
    if (state.inflight?.keys.length) {
      const inflight = new Set(state.inflight.keys);
      const all = planCapture(turns.turns, new Set(state.capturedKeys), state.ackedBelow, {
        ...planOptions,
        maxTurns: undefined,
      });
      const candidates = all.toSend.filter((x) => inflight.has(x.key));
      const found = await settledElsewhere(client, {
        pendingDir: ctx.pendingDir,
        sessionId: sid,
        budget: mode.budget,
      }, candidates);
      report.settledElsewhere = found.keys.size;
      state = {
        ...state,
        inflight: undefined,
        capturedKeys: [...state.capturedKeys, ...found.keys].slice(-MAX_CAPTURED_KEYS),
      };
      ctx.log.stage("inflight-settled", { keys: inflight.size, found: found.keys.size, asked: found.asked });
    }

    // Earlier writes of this session still queued go first, so the server sees turns in order.
    let queueOnly = false;
    if (await hasUnsent(ctx.pendingDir, sid)) {
      await replayQueue(ctx.pendingDir, client, {
        limit: c.pendingReplayLimit,
        ttlDays: c.pendingTtlDays,
        budget: mode.budget,
        sessionId: sid,
      });
      queueOnly = await hasUnsent(ctx.pendingDir, sid);
    }
    // Opened once: a long backlog queued in many steps never re-reads what this run queued.
    const queue = await SessionQueue.open(ctx.pendingDir, sid).catch(() => undefined);

    // Bounded steps: plan up to TURNS_PER_STEP turns, send or queue them, record, and go on while time is left.
    let stopped = false;
    for (;;) {
      const plan = planCapture(turns.turns, new Set(state.capturedKeys), state.ackedBelow, planOptions);
      if (!plan.turns.length) break;
      report.steps++;
      report.planned += plan.toSend.length;
      report.skipped += plan.skipped.length;
      const base = state;
      const sent = plan.toSend.length
        ? await sendMessages(client, sid, plan.toSend.map((x) => x.payload), {
          budget: mode.budget,
          pendingDir: ctx.pendingDir,
          queueOnly,
          queue,
          // The intent is on disk before the request: if its outcome cannot be recorded, the next run asks.
          beforeRequest: async (from, to) =>
            await save({
              ...base,
              inflight: { keys: plan.toSend.slice(from, to).map((x) => x.key), at: Date.now() },
            }),
          // Recorded before the next request: a kill later on never makes the next capture send these again.
          onAcked: async (acked) => await save(await stateAfter(base, plan, acked, acked)),
        })
        : { acked: 0, sent: 0, queued: 0, rejected: 0, rejections: [], usedBatch: false };
      report.sent += sent.sent;
      report.queued += sent.queued;
      report.rejected += sent.rejected;
      report.acked += sent.acked;
      if (sent.cause && !report.cause) {
        report.cause = {
          kind: sent.cause.kind,
          status: sent.cause.status,
          message: sent.cause.error.message,
        };
      }
      if (sent.rejections.length && !report.cause) {
        const r = sent.rejections[0];
        report.cause = { kind: "rejected", status: r.status, message: r.message };
      }
      if (sent.stoppedBy) {
        report.cause = { kind: "local", status: 0, message: sent.stoppedBy.message };
        stopped = true;
        break;
      }
      if (sent.queued > 0) queueOnly = true; // what follows queues behind it
      state = await stateAfter(base, plan, sent.acked, sent.sent + sent.queued);
      if (sent.acked < plan.toSend.length) {
        stopped = true;
        break;
      }
      if (plan.turns.length < TURNS_PER_STEP) break;
      if (mode.budget.remaining() < MIN_COMMIT_MS) break;
      await save(state); // this step is recorded before the next begins
    }
    report.left = turns.turns.filter((t) =>
      t.index >= state.ackedBelow && (t.closed || planOptions.includeOpen)
    )
      .length;

    const due = !stopped && state.capturedSinceCommit > 0 &&
      (mode.commitAlways || state.capturedSinceCommit >= c.commitTurnThreshold);
    if (due && mode.budget.remaining() >= MIN_COMMIT_MS) {
      // What was sent or queued is recorded before the commit request, for the same reason.
      await save(state);
      const outcome = await commitSession(client, sid, {
        budget: mode.budget,
        pendingDir: ctx.pendingDir,
        key: commitKey(sid, state.lastAckedKey),
        queueOnly,
        queue,
      });
      report.commit = outcome.kind;
      if (outcome.kind === "committed") report.taskId = outcome.taskId;
      if (outcome.kind !== "failed") state = { ...state, capturedSinceCommit: 0 };
    } else if (due) report.commit = "skipped-budget";
    const next: SessionState = {
      ...state,
      lastCaptureAt: Date.now(),
      lastCaptureEvent: ctx.event,
      lastCapture: {
        at: Date.now(),
        event: ctx.event,
        sent: report.sent,
        queued: report.queued,
        rejected: report.rejected,
        cause: report.cause,
        commit: report.commit,
        taskId: report.taskId,
      },
    };
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
