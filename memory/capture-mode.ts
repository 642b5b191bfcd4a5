/**
 * How a capture runs, by event — how long it waits for the turn's end and for the lock, whether it takes open
 * turns, its time budget — and the one rule for when it commits. Shared by the journal capture (capture.ts)
 * and the prompt fallback's (capture-fallback.ts).
 */

import { Budget, type OpenVikingClient } from "../openviking/client.ts";
import type { SessionQueue } from "../openviking/queue.ts";
import { commitSession } from "../openviking/sessions.ts";
import type { SaveState, SessionState } from "./state.ts";
import type { HookEvent } from "../kimi/hooks.ts";

/** How one capture behaves, by event. */
export interface CaptureMode {
  /** Wait up to this long (before locking) for the newest turn's end. */
  waitMs: number;
  /** Take open turns too, after the wait. */
  force: boolean;
  /** How long to wait for the session lock. */
  lockWaitMs: number;
  /** Time for network work. An interrupt's runs from the hook's start (the host's clock); see `budgetAtLockMs`. */
  budget: Budget;
  /** A worker's budget is this long from when it holds the lock: its waits for the turn and the lock are not network time. */
  budgetAtLockMs?: number;
  /** Commit whenever anything is pending commit, regardless of the threshold. */
  commitAlways: boolean;
}

/** A detached worker waits this long for the lock: no host timeout applies to it. */
export const WORKER_LOCK_WAIT_MS = 120_000;

/** Time a worker gives its network work, independent of the host. */
const WORKER_BUDGET_MS = 60_000;

/** Below this much remaining budget a capture sends no more requests: its commit is queued instead. */
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
  const base = {
    lockWaitMs: WORKER_LOCK_WAIT_MS,
    budget: new Budget(WORKER_BUDGET_MS),
    budgetAtLockMs: WORKER_BUDGET_MS,
  };
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

/** The mode a capture works in once it holds the lock: a worker's budget starts now (see `budgetAtLockMs`). */
export function lockedMode(mode: CaptureMode): CaptureMode {
  return mode.budgetAtLockMs === undefined ? mode : { ...mode, budget: new Budget(mode.budgetAtLockMs) };
}

/** What a commit needs: where to send or queue it, and what names it. */
export interface CommitRequest {
  client: OpenVikingClient;
  sessionId: string;
  pendingDir: string;
  /** Names this commit (the session and the last message it covers), so queued commits never merge. */
  key: string;
  /** Earlier writes of the session are queued: the commit queues behind them. */
  queueOnly: boolean;
  queue?: SessionQueue;
}

/** What commitIfDue did: the commit's outcome ("none", or the commit's kind: committed, queued, …). */
export interface CommitDone {
  state: SessionState;
  commit: string;
  taskId?: string;
}

/**
 * Commits when something is pending commit and the mode or the threshold asks for it, inside the budget.
 * What was sent or queued is recorded first (`save`), so a kill during the commit never resends it; a commit
 * that went through or was queued resets the count.
 */
export async function commitIfDue(
  state: SessionState,
  mode: CaptureMode,
  threshold: number,
  save: SaveState,
  request: CommitRequest,
): Promise<CommitDone> {
  const due = state.capturedSinceCommit > 0 && (mode.commitAlways || state.capturedSinceCommit >= threshold);
  if (!due) return { state, commit: "none" };
  await save(state);
  // No time left for a request (an interrupt on a loaded machine): the commit waits in the queue, a local write.
  const short = mode.budget.remaining() < MIN_COMMIT_MS;
  const outcome = await commitSession(request.client, request.sessionId, {
    budget: mode.budget,
    pendingDir: request.pendingDir,
    key: request.key,
    queueOnly: request.queueOnly || short,
    queue: request.queue,
  });
  return {
    state: outcome.kind === "failed" ? state : { ...state, capturedSinceCommit: 0 },
    commit: outcome.kind,
    taskId: outcome.kind === "committed" ? outcome.taskId : undefined,
  };
}
