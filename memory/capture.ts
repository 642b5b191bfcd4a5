/**
 * Capture for Stop, StopFailure, PreCompact, SessionEnd (detached worker) and Interrupt (synchronous, 2 s
 * budget): wait — outside the lock — for the newest turn to close, then under the session lock read the
 * journal from the cursor, settle an intent an earlier run left, and in bounded steps plan, record the intent,
 * send (or queue), acknowledge a contiguous prefix and move the cursor; then commit (queued behind queued
 * writes). Without a journal the prompts the prompt hook kept are sent instead (capture-fallback.ts).
 */

import { type Cause, causeOf } from "../openviking/advice.ts";
import { noteAnswered } from "../openviking/breaker.ts";
import type { OpenVikingClient } from "../openviking/client.ts";
import { kimiHome } from "../lib/paths.ts";
import { isHeld, newestHeld, sendMessages, type SendReport } from "../openviking/sessions.ts";
import { hasUnsent, messageKey, queuedMessageKeys, SessionQueue } from "../openviking/queue.ts";
import { replayOptions, replayQueue, type ReplayReport } from "../openviking/replay.ts";
import {
  type Cursor,
  MAX_CAPTURED_KEYS,
  readState,
  type SaveState,
  type SessionState,
  updateState,
} from "./state.ts";
import { locateJournal } from "../kimi/journal/locate.ts";
import { acknowledge, type Plan, planCapture, type PlanOptions } from "../kimi/journal/plan.ts";
import { cursorAt } from "../kimi/journal/read.ts";
import { captureFromPrompts } from "./capture-fallback.ts";
import { type CaptureMode, captureMode, commitIfDue, lockedMode, MIN_COMMIT_MS } from "./capture-mode.ts";
import { spawnReplay } from "../kimi/detach.ts";
import { clientFor, type HookContext, type HookResult } from "./context.ts";
import { settledElsewhere } from "./inflight.ts";
import { type Scan, scanJournal, waitForTurnEnd } from "./journal-scan.ts";
import { refreshFromHook } from "./system-prompt.ts";

export { captureMode, WORKER_LOCK_WAIT_MS } from "./capture-mode.ts";

/** The result of one capture, for the log. */
interface CaptureReport {
  journal?: string;
  /** Turns read after the cursor (an open one is read again by the next run). */
  scanned: number;
  /** Turns whose messages this run settled (delivered, queued or refused by OpenViking): `status` counts these. */
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
  cause?: Cause;
  /** Messages of an unrecorded earlier request found queued or on the server (not sent again). */
  settledElsewhere: number;
  /** The state was damaged: messages found on the server or queued, acknowledged instead of sent again. */
  recovered?: number;
  /** Loop events whose turn id matched no prompt: bound to the open turn, or (no open turn) not bound. */
  rebound: number;
  unbound: number;
  rewritten: boolean;
  waited: boolean;
  /** What the replay of the session's queued writes did, when there were any. */
  backlog?: ReplayReport;
}

/** A long backlog is planned and sent in steps of this many turns, each recorded before the next. */
const TURNS_PER_STEP = 200;

/** One capture under the session lock: what it works on and what it has done so far. */
interface Run {
  ctx: HookContext;
  mode: CaptureMode;
  client: OpenVikingClient;
  journal: string;
  scan: Scan;
  planOptions: PlanOptions;
  report: CaptureReport;
  save: SaveState;
  /** Indexes of the turns whose messages this run settled (the report's `turns`). */
  captured: Set<number>;
}

/** The report of a capture that has not planned anything yet. */
function emptyReport(journal: string, s: Scan, waited: boolean): CaptureReport {
  return {
    journal,
    scanned: s.turns.turns.length,
    turns: 0,
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
    rebound: s.turns.rebound,
    unbound: s.turns.unbound,
    rewritten: s.read.rewritten,
    waited,
  };
}

/**
 * The state once the first `acked` planned messages of `plan` are settled (`captured` of them new). Progress
 * recorded before the capture ends keeps `lastCapture*`: those mark finished captures.
 */
async function stateAfter(
  run: Run,
  state: SessionState,
  plan: Plan,
  acked: number,
  captured: number,
): Promise<SessionState> {
  const { turns, read } = run.scan;
  const ack = acknowledge(plan, acked, state.ackedBelow, turns.turns, turns.nextIndex);
  return {
    ...state,
    capturedKeys: [...state.capturedKeys, ...ack.keys].slice(-MAX_CAPTURED_KEYS),
    ackedBelow: ack.ackedBelow,
    capturedSinceCommit: state.capturedSinceCommit + captured,
    lastAckedKey: ack.keys.at(-1) ?? state.lastAckedKey,
    inflight: undefined,
    cursor: {
      path: run.journal,
      ...(await cursorAt(run.journal, ack.resumeAt ? ack.resumeAt.startOffset : read.endOffset)),
      nextIndex: ack.resumeAt ? ack.resumeAt.index : turns.nextIndex,
    },
    protocolVersion: turns.protocolVersion ?? state.protocolVersion,
  };
}

/** A run that stopped without recording its last request's outcome: settles what it may have delivered. */
async function settleInflight(run: Run, state: SessionState): Promise<SessionState> {
  if (!state.inflight?.keys.length) return state;
  const inflight = new Set(state.inflight.keys);
  const all = planCapture(run.scan.turns.turns, new Set(state.capturedKeys), state.ackedBelow, {
    ...run.planOptions,
    maxTurns: undefined,
  });
  const candidates = all.toSend.filter((x) => inflight.has(x.key));
  const found = await settledElsewhere(run.client, {
    pendingDir: run.ctx.pendingDir,
    sessionId: run.ctx.ovSessionId,
    budget: run.mode.budget,
  }, candidates);
  run.report.settledElsewhere = found.keys.size;
  run.ctx.log.stage("inflight-settled", { keys: inflight.size, found: found.keys.size, asked: found.asked });
  return {
    ...state,
    inflight: undefined,
    capturedKeys: [...state.capturedKeys, ...found.keys].slice(-MAX_CAPTURED_KEYS),
  };
}

/**
 * A capture state found damaged (state.ts set it aside): OpenViking says what the session holds — its newest
 * message, live or archived — and the planned messages up to the journal's copy of it, with those queued after
 * them, are acknowledged instead of sent again. Undefined while the server cannot say: nothing is sent then.
 */
async function recoverState(run: Run, state: SessionState): Promise<SessionState | undefined> {
  const { ctx } = run;
  const plan = planCapture(run.scan.turns.turns, new Set(state.capturedKeys), state.ackedBelow, {
    ...run.planOptions,
    maxTurns: undefined,
  });
  const newest = await newestHeld(run.client, ctx.ovSessionId, run.mode.budget);
  if (newest === undefined) return undefined;
  const queued = await queuedMessageKeys(ctx.pendingDir, ctx.ovSessionId);
  let held = newest ? plan.toSend.findLastIndex((c) => isHeld([newest], c.payload)) + 1 : 0;
  while (
    held < plan.toSend.length && queued.has(await messageKey(ctx.ovSessionId, plan.toSend[held].payload))
  ) {
    held++;
  }
  run.report.recovered = held;
  ctx.log.stage("state-recovered", { aside: state.recover?.aside, held, planned: plan.toSend.length });
  return { ...(await stateAfter(run, state, plan, held, 0)), recover: undefined };
}

/**
 * Replays the session's queued writes first, so the server sees turns in order, then opens the queue once for
 * this run's appends (a long backlog queued in many steps never re-reads what this run queued). `backlog`: some
 * still wait, so new writes queue behind them.
 */
async function replayBacklog(run: Run): Promise<{ backlog: boolean; queue?: SessionQueue }> {
  const { ctx } = run;
  if (await hasUnsent(ctx.pendingDir, ctx.ovSessionId)) {
    // Reported, so the ledger records this replay (status: the queued commit it delivered).
    run.report.backlog = await replayQueue(
      ctx.pendingDir,
      run.client,
      replayOptions(ctx.config, { budget: run.mode.budget, sessionId: ctx.ovSessionId }),
    );
  }
  const queue = await SessionQueue.open(ctx.pendingDir, ctx.ovSessionId).catch(() => undefined);
  return { backlog: queue ? queue.waiting : await hasUnsent(ctx.pendingDir, ctx.ovSessionId), queue };
}

/** Adds what one send did to the report; the first failure (or refusal) names the cause. */
function noteSent(report: CaptureReport, sent: SendReport): void {
  report.sent += sent.sent;
  report.queued += sent.queued;
  report.rejected += sent.rejected;
  report.acked += sent.acked;
  if (sent.cause && !report.cause) report.cause = causeOf(sent.cause);
  if (sent.rejections.length && !report.cause) {
    const r = sent.rejections[0];
    report.cause = { kind: "rejected", status: r.status, message: r.message };
  }
  if (sent.stoppedBy) report.cause = { kind: "local", status: 0, message: sent.stoppedBy.message };
}

/** Sends (or queues) one step's planned messages, recording the intent before and the progress after each request. */
async function sendStep(
  run: Run,
  base: SessionState,
  plan: Plan,
  queue: { queueOnly: boolean; queue?: SessionQueue },
): Promise<SendReport> {
  return await sendMessages(run.client, run.ctx.ovSessionId, plan.toSend.map((x) => x.payload), {
    budget: run.mode.budget,
    pendingDir: run.ctx.pendingDir,
    ...queue,
    // The intent is on disk before the request: if its outcome cannot be recorded, the next run asks. It
    // builds on what earlier requests of this step had acknowledged (`from`), never on the step's start.
    beforeRequest: async (from, to) =>
      await run.save({
        ...(from > 0 ? await stateAfter(run, base, plan, from, from) : base),
        inflight: { keys: plan.toSend.slice(from, to).map((x) => x.key), at: Date.now() },
      }),
    // Recorded before the next request: a kill later on never makes the next capture send these again.
    onAcked: async (acked) => await run.save(await stateAfter(run, base, plan, acked, acked)),
  });
}

/**
 * Bounded steps: plans up to TURNS_PER_STEP turns, sends or queues them, records, and goes on while time is
 * left. `stopped` when something could not be settled (the rest waits for a later run).
 */
async function sendSteps(
  run: Run,
  start: SessionState,
  queueOnly: boolean,
  queue: SessionQueue | undefined,
): Promise<{ state: SessionState; stopped: boolean; queueOnly: boolean }> {
  let state = start;
  for (;;) {
    const plan = planCapture(
      run.scan.turns.turns,
      new Set(state.capturedKeys),
      state.ackedBelow,
      run.planOptions,
    );
    if (!plan.turns.length) return { state, stopped: false, queueOnly };
    run.report.steps++;
    run.report.planned += plan.toSend.length;
    run.report.skipped += plan.skipped.length;
    const sent = await sendStep(run, state, plan, { queueOnly, queue });
    noteSent(run.report, sent);
    for (const c of plan.toSend.slice(0, sent.acked)) run.captured.add(c.turnIndex);
    run.report.turns = run.captured.size;
    if (sent.stoppedBy) return { state, stopped: true, queueOnly };
    if (sent.queued > 0) queueOnly = true; // what follows queues behind it
    // Refused messages count too: their commit is kept with them, so `replay --rejected` commits what it sends.
    state = await stateAfter(run, state, plan, sent.acked, sent.acked);
    if (sent.acked < plan.toSend.length) return { state, stopped: true, queueOnly };
    if (plan.turns.length < TURNS_PER_STEP) return { state, stopped: false, queueOnly };
    if (run.mode.budget.remaining() < MIN_COMMIT_MS) return { state, stopped: false, queueOnly };
    await run.save(state); // this step is recorded before the next begins
  }
}

/** The whole capture under the lock: settle, replay the backlog, send in steps, commit, record. */
async function captureLocked(run: Run, start: SessionState): Promise<SessionState> {
  const { ctx, mode, report } = run;
  const recovered = start.recover ? await recoverState(run, start) : start;
  if (!recovered) {
    report.cause = {
      kind: "local",
      status: 0,
      message:
        `the capture state was damaged (kept at ${start.recover?.aside}) and OpenViking could not say ` +
        "what the session already holds: nothing is sent until it can",
    };
    return start;
  }
  const settled = await settleInflight(run, recovered);
  const { backlog, queue } = await replayBacklog(run);
  const sent = await sendSteps(run, settled, backlog, queue);
  let state = sent.state;
  report.left =
    run.scan.turns.turns.filter((t) =>
      t.index >= state.ackedBelow && (t.closed || run.planOptions.includeOpen)
    ).length;
  if (!sent.stopped) {
    const done = await commitIfDue(state, mode, ctx.config.commitTurnThreshold, run.save, {
      client: run.client,
      sessionId: ctx.ovSessionId,
      pendingDir: ctx.pendingDir,
      key: `${ctx.ovSessionId}:${state.lastAckedKey ?? "none"}`,
      queueOnly: sent.queueOnly,
      queue,
    });
    [state, report.commit] = [done.state, done.commit];
    if (done.taskId) report.taskId = done.taskId;
  }
  const at = Date.now();
  return {
    ...state,
    lastCaptureAt: at,
    lastCaptureEvent: ctx.event,
    lastCapture: {
      at,
      event: ctx.event,
      sent: report.sent,
      queued: report.queued,
      rejected: report.rejected,
      cause: report.cause,
      commit: report.commit,
      taskId: report.taskId,
    },
  };
}

/** The session's journal: where the cursor points if it is still there, else located under Kimi's home. */
async function findJournal(
  ctx: HookContext,
  cursor: Cursor | undefined,
): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  const path = cursor?.path;
  if (path && (await Deno.stat(path).then((i) => i.isFile, () => false))) return { ok: true, path };
  return await locateJournal(kimiHome(ctx.env), ctx.hostSessionId);
}

/** Captures new whole turns of the session's journal and commits; the state changes only under the lock. */
export async function captureSession(ctx: HookContext, mode: CaptureMode): Promise<HookResult> {
  if (!ctx.capturePaths || !ctx.ovSessionId) return { outcome: "no-session-id" };
  const before = await readState(ctx.capturePaths.file);
  const found = await findJournal(ctx, before.cursor);
  // No journal: the prompts the prompt hook kept are the user side of the turn (see prompt-fallback.ts).
  if (!found.ok) return await captureFromPrompts(ctx, mode, found.reason);
  const journal = found.path;
  // A forced capture ends the turns that had begun when it started, never one the resumed session began while
  // this capture waited (for the turn end, the lock or the server): that one is captured whole later.
  const forceLimit = mode.force ? await Deno.stat(journal).then((i) => i.size, () => 0) : 0;
  const expectTurn = ctx.event === "stop" || ctx.event === "stop-failure";
  const waited = mode.waitMs > 0
    ? await waitForTurnEnd(journal, before.cursor, mode.waitMs, expectTurn)
    : true;
  const client = clientFor(ctx);
  const res = await updateState(ctx.capturePaths, async (start, save) => {
    const s = await scanJournal(journal, start.cursor);
    const newest = s.turns.turns.at(-1);
    const planOptions: PlanOptions = {
      maxLength: ctx.config.captureMaxLength,
      redact: ctx.config.redact,
      includeOpen: mode.force && !(newest && !newest.closed && newest.startOffset >= forceLimit),
      maxTurns: TURNS_PER_STEP,
    };
    const report = emptyReport(journal, s, waited);
    const run: Run = {
      ctx,
      mode: lockedMode(mode), // a worker's budget starts now, after its waits
      client,
      journal,
      scan: s,
      planOptions,
      report,
      save,
      captured: new Set(),
    };
    return { state: await captureLocked(run, start), value: report };
  }, { waitMs: mode.lockWaitMs, durable: true });
  if (!res.acquired) return { outcome: "lock-timeout", data: { journal } };
  return { outcome: "captured", data: { ...res.value } };
}

/**
 * Hook handler for stop, stop-failure, pre-compact, session-end and interrupt. It runs in the detached worker
 * (the parent only forwarded stdin, see detach.ts) or synchronously: for interrupt, or when detaching is off.
 */
export async function captureHook(ctx: HookContext): Promise<HookResult> {
  if (ctx.event === "pre-compact" && ctx.promptPaths) {
    // The compacted context loses earlier injections: let the profile and memories be injected again — with
    // capture switched off too (recall still runs).
    const reset = { profileInjected: false, injectedUris: [], compacted: true };
    await updateState(ctx.promptPaths, (s) => Promise.resolve({ state: { ...s, ...reset }, value: null }), {
      waitMs: 1000,
    });
  }
  if (!ctx.config.autoCapture) return { outcome: "capture-off" };
  const result = await captureSession(ctx, captureMode(ctx.event, ctx.config, ctx.startedAt));
  // The server took what was sent since this run began: a paused recall may ask it again.
  if (Number(result.data?.sent) > 0 || result.data?.commit === "committed") {
    await noteAnswered(ctx.sharedStateDir, ctx.config.baseUrl, ctx.startedAt);
  }
  // A commit may have taught OpenViking more of the user: refresh the plugin's system prompt (detached only).
  if (ctx.isWorker && result.data?.commit === "committed") await refreshFromHook(ctx, false);
  // An interrupt (always synchronous) that had to queue: a detached replay delivers it now — after a SIGINT in
  // print mode no later hook comes. Not when the user switched detached writes off.
  const queued = Number(result.data?.queued) > 0 || result.data?.commit === "queued";
  if (ctx.event === "interrupt" && !ctx.isWorker && ctx.config.writePathAsync && queued) {
    if (await spawnReplay()) result.data = { ...result.data, replay: "detached" };
  }
  return result;
}
