/**
 * Capture (Stop, StopFailure, PreCompact, SessionEnd in a worker; Interrupt within its budget): waits for the
 * turn end, then under the session lock sends the journal's new turns in recorded steps and commits.
 */

import { type Cause, causeOf } from "../openviking/advice.ts";
import { Budget, type OpenVikingClient } from "../openviking/client.ts";
import { dirName, joinPath, kimiHome } from "../lib/paths.ts";
import { MAX_PRINTS, redact } from "../lib/redact.ts";
import {
  destinationFor,
  hasUnsent,
  heldMessages,
  isHeld,
  messageKey,
  queuedMessageKeys,
  replayQueue,
  type ReplayReport,
  sendMessages,
  type SendReport,
  SessionQueue,
} from "../openviking/queue.ts";
import type { COMMIT_POLICIES } from "../openviking/config.ts";
import {
  capturingFor,
  commitCaptured,
  type Cursor,
  MIN_COMMIT_MS,
  readState,
  type SaveState,
  type SessionState,
  updateState,
} from "./state.ts";
import type { HookEvent } from "../kimi/hooks.ts";
import { locateJournal } from "../kimi/journal/locate.ts";
import {
  acknowledge,
  type Candidate,
  CAPTURE_MAX_LENGTH,
  captureKey,
  fallbackKey,
  type Plan,
  planCapture,
  type PlanOptions,
} from "../kimi/journal/plan.ts";
import { cursorAt, scanJournal } from "../kimi/journal/turns.ts";
import { spawnReplay, spawnWorker } from "../kimi/detach.ts";
import {
  clientUnlessSilent,
  type HookContext,
  type HookResult,
  otherSession,
  SESSION_PREFIX,
  sessionDestination,
} from "./context.ts";
import { carried, duePrompts, type FallbackPrompt, journalKeys, SETTLE_MS } from "./prompt.ts";
import { refreshFromHook } from "./system-prompt.ts";
import { recordRun } from "./ledger.ts";

/** How one capture behaves: its wait for the turn end, whether it takes open turns, its lock wait and budget. */
export interface CaptureMode {
  waitMs: number;
  force: boolean;
  lockWaitMs: number;
  /** An interrupt's runs from the hook's start; a worker's is `budgetAtLockMs` from when it holds the lock. */
  budget: Budget;
  budgetAtLockMs?: number;
}

export type CommitPolicy = typeof COMMIT_POLICIES[number];

export const WORKER_LOCK_WAIT_MS = 120_000;
const WORKER_BUDGET_MS = 60_000;
/** All an Interrupt's synchronous capture may take (ms): Kimi waits for it. */
const INTERRUPT_BUDGET_MS = 2000;

/** The capture mode of an event run (in the worker, or synchronously). */
export function captureMode(
  event: HookEvent,
  config: { captureWaitMs: number },
  startedAt: number,
  worker = false,
): CaptureMode {
  if (event === "interrupt" && !worker) {
    const total = INTERRUPT_BUDGET_MS;
    const waitMs = Math.min(config.captureWaitMs, Math.floor(total * 0.4));
    const budget = new Budget(total - (Date.now() - startedAt));
    return { waitMs, force: true, lockWaitMs: Math.floor(total * 0.3), budget };
  }
  const budget = new Budget(WORKER_BUDGET_MS);
  const base = { lockWaitMs: WORKER_LOCK_WAIT_MS, budget, budgetAtLockMs: WORKER_BUDGET_MS };
  if (event === "stop") return { ...base, waitMs: config.captureWaitMs, force: false };
  if (event === "pre-compact") return { ...base, waitMs: 0, force: false };
  // SessionEnd, StopFailure (a legacy failed turn never closes), and an interrupt's worker.
  return { ...base, waitMs: Math.min(config.captureWaitMs, 3000), force: true };
}

/** The mode once the lock is held: a worker's budget starts now. */
export function lockedMode(mode: CaptureMode): CaptureMode {
  return mode.budgetAtLockMs === undefined ? mode : { ...mode, budget: new Budget(mode.budgetAtLockMs) };
}

/** Under the balanced policy a Stop commits once the session holds this many uncommitted tokens. */
export const BALANCED_PENDING_TOKENS = 8000;

const REMEMBER = /\bremember\b|\bdon'?t forget\b|\bmemori[sz]e\b/i;

/** Whether a user message asks for something to be remembered (pure). */
export function asksToRemember(messages: readonly { role: string; content: string }[]): boolean {
  return messages.some((m) => m.role === "user" && REMEMBER.test(m.content));
}

/** What a commit decision knows: captured `since` the last commit, `sent` now, the server's token count, an ask. */
export type CommitFacts = { since: number; sent: number; pendingTokens?: number; remember: boolean };

/** Whether a capture commits now under `policy` (pure; the rule is ARCHITECTURE decision 13's). */
export function commitDue(policy: CommitPolicy, event: HookEvent, facts: CommitFacts): boolean {
  if (!facts.since) return false;
  if (policy === "every-turn" || event !== "stop") return true;
  if (policy === "session-end") return false;
  if (facts.remember) return true;
  return facts.sent > 0 && (facts.pendingTokens ?? Infinity) >= BALANCED_PENDING_TOKENS;
}

async function commitIfDue(
  { ctx, client, mode, save }: Locked,
  start: SessionState,
  facts: Omit<CommitFacts, "since">,
  queue?: SessionQueue,
): Promise<{ state: SessionState; commit: string; taskId?: string }> {
  const state = { ...start, ovSession: ctx.ovSessionId };
  const since = state.capturedSinceCommit;
  if (!commitDue(ctx.config.commitPolicy, ctx.event, { ...facts, since })) return { state, commit: "none" };
  await save(state); // a kill during the commit never resends it
  const options = { budget: mode.budget, pendingDir: ctx.pendingDir, queue };
  const done = await commitCaptured(client, ctx.ovSessionId, state, state.destination!, options);
  const taskId = done.outcome.kind === "committed" ? done.outcome.taskId : undefined;
  return { state: done.state, commit: done.outcome.kind, taskId };
}

type Scan = Awaited<ReturnType<typeof scanJournal>>;

const scanFrom = (path: string, cursor?: Cursor) =>
  scanJournal(path, cursor?.path === path ? cursor : undefined);

const POLL_MS = 100;

/** Waits (bounded) until the newest turn after the cursor is closed (`expectTurn`: and there); scans on change only. */
export async function waitForTurnEnd(
  path: string,
  cursor: Cursor | undefined,
  waitMs: number,
  expectTurn: boolean,
  scan: (path: string, cursor: Cursor | undefined) => Promise<Scan> = scanFrom,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let scanned: string | undefined;
  for (;;) {
    const info = await Deno.stat(path).catch(() => undefined);
    const stamp = info ? `${info.size}:${info.mtime?.getTime()}` : "gone";
    if (stamp !== scanned) {
      scanned = stamp;
      const { turns } = await scan(path, cursor).catch(() => ({ turns: undefined }));
      const newest = turns?.turns.at(-1);
      if (newest ? newest.closed : !expectTurn) return true;
    }
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, deadline - Date.now()))));
  }
}

/** Turns planned and sent per step, each step recorded before the next. */
const TURNS_PER_STEP = 200;

type Locked = {
  ctx: HookContext;
  mode: CaptureMode;
  client: OpenVikingClient;
  save: SaveState;
  report: CaptureReport;
};

type Run = Locked & { journal: string; scan: Scan; planOptions: PlanOptions } & {
  captured: Set<number>;
  kept: FallbackPrompt[];
};

function emptyReport(read?: { journal: string; s: Scan; waited: boolean }) {
  const { journal, s, waited } = read ?? {};
  return {
    ...{ turns: 0, planned: 0, sent: 0, queued: 0, rejected: 0, acked: 0, skipped: 0, steps: 0, left: 0 },
    ...{ fallback: 0, remember: false, commit: "none", settledElsewhere: 0 },
    ...(s && { journal, scanned: s.turns.turns.length, waited, rebound: s.turns.rebound }),
    ...(s && { unbound: s.turns.unbound, rewritten: s.read.rewritten }),
  };
}
type CaptureReport = ReturnType<typeof emptyReport> & {
  pendingTokens?: number;
  taskId?: string;
  cause?: Cause;
  recovered?: number;
  backlog?: ReplayReport;
};

const keptOptions = (run: Run, state: SessionState) => ({
  ...run.planOptions,
  prints: new Set(state.secretPrints),
});

/** The state once the first `acked` planned messages of `plan` are settled (`captured` of them new). */
async function stateAfter(run: Run, state: SessionState, plan: Plan, acked: number, captured = acked) {
  const { turns, read } = run.scan;
  const ack = acknowledge(plan, acked, state.ackedBelow, turns.turns, turns.nextIndex);
  const delivered = plan.turns.filter((t) =>
    t.index < ack.ackedBelow || ack.keys.includes(captureKey(t.index, "user"))
  );
  const prompts = journalKeys(carried(duePrompts(run.kept, state), delivered, keptOptions(run, state)));
  return {
    ...state,
    capturedKeys: [...state.capturedKeys, ...ack.keys, ...prompts],
    secretPrints: [...new Set([...state.secretPrints, ...plan.learned])].slice(-MAX_PRINTS),
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

/** What the journal after the cursor still plans: one step's turns, or all of them (`whole`). */
function planFrom(run: Run, state: SessionState, whole = false): Plan {
  const options = { ...run.planOptions, prints: state.secretPrints, ...whole ? { maxTurns: undefined } : {} };
  return planCapture(run.scan.turns.turns, new Set(state.capturedKeys), state.ackedBelow, options);
}

/** Settles an unrecorded request's intent (ARCHITECTURE decisions 7, 45): found queued or held, acknowledged. */
async function settleInflight(run: Run, state: SessionState): Promise<SessionState> {
  if (!state.inflight?.keys.length) return state;
  const { ctx } = run;
  const inflight = new Set(state.inflight.keys);
  const candidates = planFrom(run, state, true).toSend.filter((x) => inflight.has(x.key));
  const found = new Set<string>();
  const queued = await queuedMessageKeys(ctx.pendingDir, ctx.ovSessionId);
  const rest: Candidate[] = [];
  for (const c of candidates) {
    if (queued.has(await messageKey(ctx.ovSessionId, c.payload))) found.add(c.key);
    else rest.push(c);
  }
  const askFrom = state.inflight.askFrom ?? 0;
  const early = rest.length > 0 && Date.now() < askFrom;
  if (early) {
    const queue = await openQueue(run);
    const stored = await queue?.messages(rest.map((c) => c.payload), { unsure: askFrom });
    for (const c of rest.slice(0, stored ?? 0)) found.add(c.key);
  }
  const said = rest.length && !early ? await heldMessages(run.client, ctx.ovSessionId, run.mode.budget) : [];
  const held = Array.isArray(said) ? said : undefined;
  for (const c of rest) if (held && isHeld(held, c.payload)) found.add(c.key);
  const asked = !rest.length ? "queue" : early ? "later" : held ? "server" : "unknown";
  run.report.settledElsewhere = found.size;
  ctx.log.stage("inflight-settled", { keys: inflight.size, found: found.size, asked });
  // The run that recorded the intent never counted its messages: those settled here count now, for the commit.
  const capturedKeys = [...state.capturedKeys, ...found];
  return {
    ...state,
    inflight: undefined,
    capturedKeys,
    capturedSinceCommit: state.capturedSinceCommit + found.size,
  };
}

/** A damaged state: acknowledged up to the server's newest message and what is queued after; undefined: unknown. */
async function recoverState(run: Run, state: SessionState): Promise<SessionState | undefined> {
  const { ctx } = run;
  const plan = planFrom(run, state, true);
  const heldNow = await heldMessages(run.client, ctx.ovSessionId, run.mode.budget);
  if (!Array.isArray(heldNow)) return undefined;
  const newest = heldNow.at(-1);
  const queued = await queuedMessageKeys(ctx.pendingDir, ctx.ovSessionId);
  let held = newest ? plan.toSend.findLastIndex((c) => isHeld([newest], c.payload)) + 1 : 0;
  const isQueued = async (c?: Candidate) => c && queued.has(await messageKey(ctx.ovSessionId, c.payload));
  while (await isQueued(plan.toSend[held])) held++;
  run.report.recovered = held;
  ctx.log.stage("state-recovered", { aside: state.recover?.aside, held, planned: plan.toSend.length });
  return { ...(await stateAfter(run, state, plan, held, 0)), recover: undefined };
}

const openQueue = async (run: Run) =>
  await SessionQueue.open(run.ctx.pendingDir, run.ctx.ovSessionId, await destinationFor(run.client.options))
    .catch(() => undefined);

/** How a run's messages go: the session's queue opened, and only to it (`queueOnly`) while some of it waits. */
type Sending = { queueOnly: boolean; queue?: SessionQueue };

/** Replays the session's queue first (turns stay in order), then opens it for this run. */
async function replayBacklog(run: Run): Promise<Sending> {
  const { ctx } = run;
  if (await hasUnsent(ctx.pendingDir, ctx.ovSessionId)) {
    const [budget, sessionId] = [run.mode.budget, ctx.ovSessionId];
    const bounds = { budget, sessionId, waitUnsure: ctx.isWorker };
    run.report.backlog = await replayQueue(ctx.pendingDir, run.client, bounds);
  }
  const queue = await openQueue(run);
  return { queueOnly: queue ? queue.waiting : await hasUnsent(ctx.pendingDir, ctx.ovSessionId), queue };
}

function noteSent(report: CaptureReport, sent: SendReport): void {
  report.sent += sent.sent;
  report.queued += sent.queued;
  report.rejected += sent.rejections.length;
  report.acked += sent.acked;
  if (sent.pendingTokens !== undefined) report.pendingTokens = sent.pendingTokens;
  if (sent.cause && !report.cause) report.cause = causeOf(sent.cause);
  if (sent.rejections.length && !report.cause) {
    const r = sent.rejections[0];
    report.cause = { kind: "rejected", status: r.status, message: r.message };
  }
  if (sent.stoppedBy) report.cause = { kind: "local", status: 0, message: sent.stoppedBy.message };
}

type Sent = SendReport & { recorded?: SessionState };

/** Sends one step, recording the intent before and the progress after each request; `recorded`: the last saved. */
async function sendStep(run: Run, base: SessionState, plan: Plan, sending: Sending): Promise<Sent> {
  let recorded: SessionState | undefined;
  const save = async (state: SessionState) => {
    await run.save(state);
    recorded = state; // only once saved: a failed save goes on from what is on disk
  };
  const sent = await sendMessages(run.client, run.ctx.ovSessionId, plan.toSend.map((x) => x.payload), {
    budget: run.mode.budget,
    pendingDir: run.ctx.pendingDir,
    ...sending,
    beforeRequest: async (from, to, askFrom) =>
      await save({
        ...(from > 0 ? await stateAfter(run, base, plan, from) : base),
        inflight: {
          keys: plan.toSend.slice(from, to).map((x) => x.key),
          at: Date.now(),
          askFrom: askFrom ?? Date.now() + 2 * run.client.options.timeoutMs,
        },
      }),
    onAcked: async (acked) => await save(await stateAfter(run, base, plan, acked)),
  });
  return { ...sent, recorded };
}

type Stepped = { state: SessionState; stopped: boolean };

/** Plans, sends and records steps while time is left (queue only once one queued); `stopped`: something unsettled. */
async function sendSteps(run: Run, start: SessionState, sending: Sending): Promise<Stepped> {
  let state = start;
  for (;;) {
    const plan = planFrom(run, state);
    if (!plan.turns.length) return { state, stopped: false };
    run.report.steps++;
    run.report.planned += plan.toSend.length;
    run.report.skipped += plan.skipped.length;
    run.report.remember ||= asksToRemember(plan.toSend.map((c) => c.payload));
    const sent = await sendStep(run, state, plan, sending);
    noteSent(run.report, sent);
    for (const c of plan.toSend.slice(0, sent.acked)) run.captured.add(c.turnIndex);
    run.report.turns = run.captured.size;
    // A save failed: go on from what is on disk, so a smaller write that still fits (`ulimit -f`) never erases
    // the intent of a request that went out (its messages would be sent again).
    if (sent.stoppedBy) return { state: sent.recorded ?? state, stopped: true };
    if (sent.queued > 0) sending.queueOnly = true;
    state = await stateAfter(run, state, plan, sent.acked);
    if (sent.acked < plan.toSend.length) return { state, stopped: true };
    if (plan.turns.length < TURNS_PER_STEP || run.mode.budget.remaining() < MIN_COMMIT_MS) {
      return { state, stopped: false };
    }
    await run.save(state);
  }
}

async function captureLocked(run: Run, start: SessionState): Promise<SessionState> {
  const { ctx, report } = run;
  const recovered = start.recover ? await recoverState(run, start) : start;
  if (!recovered) {
    const aside = start.recover?.aside;
    const why = aside ? `was damaged (kept at ${aside})` : "named another file as the session's journal";
    const message = `the capture state ${why} and OpenViking could not say what the session already holds: ` +
      "nothing is sent until it can";
    report.cause = { kind: "local", status: 0, message };
    return start;
  }
  const settled = await settleInflight(run, recovered);
  const sending = await replayBacklog(run);
  const steps = await sendSteps(run, settled, sending);
  let state = steps.state;
  const left = run.scan.turns.turns.filter((t) => t.index >= state.ackedBelow);
  report.left = left.filter((t) => t.closed || run.planOptions.includeOpen).length;
  // Kept prompts the journal still lacks `SETTLE_MS` after they were seen: their turns never reached it.
  const unsettled = steps.stopped ? [] : duePrompts(run.kept, state);
  const held = carried(unsettled, run.scan.turns.turns, keptOptions(run, state));
  const due = unsettled.filter((p) => !held.includes(p) && Date.now() - p.at >= SETTLE_MS);
  state = await sendKeptAndCommit(run, state, due, sending, steps.stopped);
  const [at, event, { sent, queued, rejected, cause, commit, taskId }] = [Date.now(), ctx.event, report];
  const lastCapture = { at, event, sent, queued, rejected, cause, commit, taskId };
  return { ...state, lastCaptureAt: at, lastCapture };
}

/** The state for `journal`: a cursor naming another file goes with its acknowledgements (recovered as if damaged). */
function ownCursor(state: SessionState, journal: string): SessionState {
  if (!state.cursor || state.cursor.path === journal) return state;
  const recover = state.recover ?? { at: Date.now() };
  return { ...state, capturedKeys: [], ackedBelow: 0, cursor: undefined, inflight: undefined, recover };
}

/** The state at a capture's start: `promptsFrom` set once; others' uncommitted captures owed to them. */
async function settling(s: SessionState, ctx: HookContext): Promise<SessionState> {
  const here = capturingFor(s, await sessionDestination(ctx.config), await destinationFor(ctx.config));
  return { ...here, promptsFrom: s.promptsFrom ?? s.lastCaptureAt ?? 0 };
}

/** The kept prompts of `ctx`'s session (read without its lock: the prompt hook only adds to them). */
async function keptPrompts(ctx: HookContext): Promise<FallbackPrompt[]> {
  return ctx.promptPaths ? (await readState(ctx.promptPaths.file)).fallbackPrompts : [];
}

/** Captures the journal's new turns and commits, under the lock. */
export async function captureSession(ctx: HookContext, mode: CaptureMode): Promise<HookResult> {
  if (!ctx.capturePaths || !ctx.ovSessionId) return { outcome: "no-session-id" };
  const before = await readState(ctx.capturePaths.file);
  const found = await locateJournal(kimiHome(ctx.env), ctx.hostSessionId);
  if (!found.ok) return await captureFromPrompts(ctx, mode, found.reason);
  const journal = found.path;
  // A forced capture never takes a turn begun while it waited: that one is captured whole later.
  const forceLimit = mode.force ? await Deno.stat(journal).then((i) => i.size, () => 0) : 0;
  const expectTurn = ctx.event === "stop" || ctx.event === "stop-failure";
  const waited = mode.waitMs <= 0 || await waitForTurnEnd(journal, before.cursor, mode.waitMs, expectTurn);
  const client = await clientUnlessSilent(ctx, mode.budget);
  const res = await updateState(ctx.capturePaths, async (loaded, save) => {
    const start = ownCursor(await settling(loaded, ctx), journal);
    const scan = await scanFrom(journal, start.cursor);
    const newest = scan.turns.turns.at(-1);
    const planOptions: PlanOptions = {
      maxLength: CAPTURE_MAX_LENGTH,
      redact: ctx.config.redact,
      includeOpen: mode.force && !(newest && !newest.closed && newest.startOffset >= forceLimit),
      maxTurns: TURNS_PER_STEP,
    };
    const [report, kept] = [emptyReport({ journal, s: scan, waited }), await keptPrompts(ctx)];
    const locked = { ctx, client, save, report, mode: lockedMode(mode) };
    const run: Run = { ...locked, journal, scan, planOptions, kept, captured: new Set() };
    return { state: await captureLocked(run, start), value: report };
  }, { waitMs: mode.lockWaitMs, durable: true });
  if (!res.acquired) return { outcome: "lock-timeout", data: { journal } };
  return { outcome: "captured", data: { ...res.value } };
}

/** The handler of stop, stop-failure, pre-compact, session-end and interrupt. */
export async function captureHook(ctx: HookContext): Promise<HookResult> {
  if (ctx.event === "pre-compact" && ctx.promptPaths) {
    // The compacted context lost the injections: inject them again (with capture off too).
    const reopen = (s: SessionState) => Promise.resolve({ state: { ...s, injectedUris: [] }, value: null });
    await updateState(ctx.promptPaths, reopen, { waitMs: 1000 });
  }
  if (!ctx.config.autoCapture) return { outcome: "capture-off" };
  const result = await captureSession(ctx, captureMode(ctx.event, ctx.config, ctx.startedAt, ctx.isWorker));
  if (ctx.isWorker && result.data?.commit === "committed") await refreshFromHook(ctx, false);
  // An interrupt in print mode may be the last hook (after a SIGINT none comes): a detached replay delivers
  // what it queued; one that could not have the session lock in its budget leaves a worker waiting for it.
  if (ctx.event === "interrupt" && !ctx.isWorker && ctx.config.writePathAsync) {
    const queued = Number(result.data?.queued) > 0 || result.data?.commit === "queued";
    if (queued && await spawnReplay()) result.data = { ...result.data, replay: "detached" };
    if (result.outcome === "lock-timeout" && await spawnWorker("interrupt", ctx.raw)) {
      result.data = { ...result.data, worker: "detached" };
    }
  }
  // A Stop that left captures uncommitted: the detached worker watches the home's idle sessions.
  if (ctx.isWorker && ctx.event === "stop" && ctx.config.commitPolicy !== "every-turn") {
    result.after = async () => await (await import("./idle-commit.ts")).watchIdleSessions(ctx);
  }
  return result;
}

/** Sends `due` kept prompts as user messages (keys recorded as they settle), then commits unless `stopped`. */
async function sendKeptAndCommit(
  locked: Locked,
  start: SessionState,
  due: FallbackPrompt[],
  sending: Sending,
  stopped = false,
): Promise<SessionState> {
  const { ctx, client, mode, save, report } = locked;
  const settled = (acked: number): SessionState => {
    const keys = due.slice(0, acked).map((p) => fallbackKey(p.text, p.at));
    const lastAckedKey = keys.at(-1) ?? start.lastAckedKey;
    const capturedSinceCommit = start.capturedSinceCommit + acked;
    return { ...start, capturedKeys: [...start.capturedKeys, ...keys], capturedSinceCommit, lastAckedKey };
  };
  let state = start;
  if (due.length) {
    const prints = new Set(ctx.config.redact ? start.secretPrints : []); // kept before a capture learned them
    const messages = due.map((p) => ({ role: "user" as const, content: redact(p.text, undefined, prints) }));
    const sent = await sendMessages(client, ctx.ovSessionId, messages, {
      ...{ budget: mode.budget, pendingDir: ctx.pendingDir, ...sending },
      onAcked: async (acked) => await save(settled(acked)),
    });
    noteSent(report, sent);
    [report.fallback, state, stopped] = [sent.acked, settled(sent.acked), stopped || sent.acked < due.length];
    report.remember ||= asksToRemember(messages);
  }
  if (stopped) return state;
  const done = await commitIfDue(locked, state, report, sending.queue);
  report.commit = done.commit;
  if (done.taskId) report.taskId = done.taskId;
  return done.state;
}

/** Sends the due kept prompts (seen `minAgeMs` ago) of a session without a journal (`reason`), then commits. */
async function captureFromPrompts(
  ctx: HookContext,
  waiting: CaptureMode,
  reason: string,
  minAgeMs = 0,
): Promise<HookResult> {
  const kept = ctx.capturePaths ? await keptPrompts(ctx) : [];
  if (!ctx.capturePaths || !kept.length) return { outcome: "no-journal", data: { reason, fallback: 0 } };
  const client = await clientUnlessSilent(ctx, waiting.budget);
  const res = await updateState(ctx.capturePaths, async (loaded, save) => {
    const [state, report] = [await settling(loaded, ctx), emptyReport()];
    const due = duePrompts(kept, state).filter((p) => Date.now() - p.at >= minAgeMs);
    if (!due.length) return { value: report };
    const queueOnly = await hasUnsent(ctx.pendingDir, ctx.ovSessionId);
    const locked = { ctx, client, mode: lockedMode(waiting), save, report };
    const after = await sendKeptAndCommit(locked, state, due, { queueOnly });
    return { state: after, value: { ...report, turns: report.fallback } };
  }, { waitMs: waiting.lockWaitMs, durable: true });
  if (!res.acquired) return { outcome: "lock-timeout", data: { reason } };
  return { outcome: "no-journal", data: { reason, ...res.value } };
}

/** A session start's send of the prompts other sessions of its destination left (ARCHITECTURE 12); how many. */
export async function sendLeftPrompts(ctx: HookContext, budget: Budget): Promise<number> {
  if (!ctx.promptPaths || !ctx.config.autoCapture) return 0;
  const dir = dirName(ctx.promptPaths.file);
  const mtime = (file: string) => Deno.lstat(file).then((i) => i.mtime?.getTime() ?? 0, () => undefined);
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const destination = await sessionDestination(ctx.config);
  const idleMs = Math.max(SETTLE_MS, ctx.config.idleCommitSeconds * 1000);
  let delivered = 0;
  for (const name of names.filter((n) => n.endsWith(".prompt.json"))) {
    const [base, promptFile] = [name.slice(0, -".prompt.json".length), joinPath(dir, name)];
    const file = joinPath(dir, `${base}.json`);
    if (promptFile === ctx.promptPaths.file) continue;
    if (budget.remaining() < MIN_COMMIT_MS) break;
    const [asked, captured] = [await mtime(promptFile), await mtime(file)];
    if (asked === undefined || (captured !== undefined && captured >= asked + idleMs)) continue;
    // Where the session's captures went, else where its prompts were asked: only there (unknown: not here).
    const went = (await readState(file)).destination ?? (await readState(promptFile)).destination;
    if (went !== destination) continue;
    const other = otherSession(ctx, file, `${SESSION_PREFIX}${base}`);
    const [mode, startedAt] = [{ waitMs: 0, force: false, lockWaitMs: 0, budget }, Date.now()];
    const res = await captureFromPrompts(other, mode, "left", idleMs).catch(() => undefined);
    delivered += Number(res?.data?.turns ?? 0);
    // In that session's ledger, as its capture: `status` and `memories show` count what it delivered.
    if (res) await recordRun(other, res, startedAt); // otherSession's host id is the state's name (`base`)
    // Nothing due and nothing that may become due: its capture state's time says it was looked at.
    const young = (await keptPrompts(other)).some((p) => Date.now() - p.at < idleMs);
    if (captured !== undefined && res?.outcome === "no-journal" && !res.data?.turns && !young) {
      const now = new Date();
      await Deno.utime(file, now, now).catch(() => {});
    }
  }
  return delivered;
}
