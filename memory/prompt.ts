/**
 * UserPromptSubmit: prints what recall.ts finds that the session lacks (while the breaker is open, a probe); the
 * recall query; the prompts kept for capture's fallback (ARCHITECTURE decision 12).
 */

import { sha256Hex } from "../lib/hash.ts";
import { Budget, type OvFailure } from "../openviking/client.ts";
import { causeOf } from "../openviking/advice.ts";
import { originOf } from "../openviking/config.ts";
import {
  type Breaker,
  isOpen,
  nextProbeAt,
  noteProbing,
  noteRecall,
  probe,
  readBreaker,
} from "../openviking/breaker.ts";
import type { Env } from "../lib/paths.ts";
import { commandName } from "../lib/self.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { readState, type SessionState, updateState } from "./state.ts";
import { clientFor, type HookContext, type HookResult, sessionDestination } from "./context.ts";
import { promptText } from "../kimi/payload.ts";
import { type Injection, injectionFor, type RecallResult } from "./recall.ts";
import { spawnWorker } from "../kimi/detach.ts";
import { alarmWords, readAlarm } from "./extraction.ts";
import { redact } from "../lib/redact.ts";
import { cutText, PRINT_MAX_CHARS, safe, type SafeText } from "../lib/neutralize.ts";
import { cleanInjected, prepareText } from "../kimi/journal/clean.ts";
import { CAPTURE_MAX_LENGTH, fallbackKey, seenAt } from "../kimi/journal/plan.ts";
import type { Turn } from "../kimi/journal/turns.ts";

/** Longest query sent, in characters. */
export const QUERY_MAX_CHARS = 2000;

/** The query: the raw text cut at a word (no secret split), cleaned, redacted (`prints` too), cut. */
export function recallQuery(raw: string, redactIt: boolean, prints?: ReadonlySet<string>): string {
  const cleaned = cleanInjected(cutText(raw, 32 * QUERY_MAX_CHARS, ""));
  return cutText(redactIt ? redact(cleaned, undefined, prints).trim() : cleaned, QUERY_MAX_CHARS, "");
}

/** The prints of the secrets the session's captures found (none without redaction or a session). */
export async function sessionPrints(ctx: HookContext): Promise<ReadonlySet<string>> {
  if (!ctx.config.redact || !ctx.capturePaths) return new Set();
  return new Set((await readState(ctx.capturePaths.file)).secretPrints);
}

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

/** The kept prompts `capture` has not settled (pure): neither sent nor delivered, seen after `promptsFrom`. */
export function duePrompts(kept: readonly FallbackPrompt[], capture: SessionState): FallbackPrompt[] {
  const keys = new Set(capture.capturedKeys);
  const from = capture.promptsFrom ?? capture.lastCaptureAt ?? 0;
  return kept.filter((p) => p.at > from && !keys.has(fallbackKey(p.text, p.at)) && !keys.has(journalKey(p)));
}

/**
 * The prompts among `prompts` that `turns` carry (pure): per turn, the one of its text seen nearest when it began;
 * both sides redacted with `prints` too (a prompt was kept with the prints of its time).
 */
export function carried(
  prompts: readonly FallbackPrompt[],
  turns: readonly Turn[],
  options: PrepareOptions,
): FallbackPrompt[] {
  const [left, out]: FallbackPrompt[][] = [[...prompts], []];
  const shown = (p: FallbackPrompt) =>
    options.redact && options.prints?.size ? redact(p.text, undefined, options.prints) : p.text;
  const read = new Map(left.map((p) => [p, shown(p)]));
  for (const { time, prompt } of turns) {
    if (time === undefined || !prompt) continue;
    const { text } = prepare(prompt, options);
    const near = left.filter((p) => read.get(p) === text && seenAt(time, p.at))
      .sort((a, b) => Math.abs(a.at - time) - Math.abs(b.at - time));
    if (near.length) out.push(...left.splice(left.indexOf(near[0]), 1));
  }
  return out;
}

/** The keys marking `prompts` as delivered from the journal. */
export const journalKeys = (prompts: readonly FallbackPrompt[]) => prompts.map(journalKey);

type PrepareOptions = { maxLength: number; redact: boolean; prints?: ReadonlySet<string> };

/** A prompt's text as kept (capture's preparation, bounded to the kept characters). */
function prepare(raw: string, options: PrepareOptions) {
  return prepareText(raw, "user", { ...options, maxLength: Math.min(options.maxLength, MAX_FALLBACK_CHARS) });
}

/** The prompt state with `raw` kept (unless capture would skip it or it repeats), the oldest dropped past the bounds. */
export function keepPrompt(
  state: SessionState,
  raw: string,
  at: number,
  options: PrepareOptions,
): SessionState {
  const { text, reason } = prepare(raw, options);
  const last = state.fallbackPrompts.at(-1);
  if (reason || (last && last.text === text && Math.abs(at - last.at) < DUPLICATE_WINDOW_MS)) return state;
  const kept = [...state.fallbackPrompts, { text, at }].slice(-MAX_FALLBACK_PROMPTS);
  let chars = kept.reduce((n, p) => n + p.text.length, 0);
  while (kept.length > 1 && chars > MAX_FALLBACK_CHARS) chars -= kept.shift()!.text.length;
  return { ...state, fallbackPrompts: kept };
}

/** What the state says of this prompt: a duplicate run, the same text's kept recall, the notices told. */
export function promptDecision(state: SessionState, prompt: { hash: string; at: number }) {
  return {
    duplicate: state.promptHash === prompt.hash && state.promptAt !== undefined &&
      Math.abs(prompt.at - state.promptAt) < DUPLICATE_WINDOW_MS,
    reuse: (state.promptHash === prompt.hash && state.recall) || undefined as RecallResult | undefined,
    told: state.pausedNotice,
    refused: state.refusedNotice,
  };
}

type Decision = ReturnType<typeof promptDecision>;
type Claim = { decision: Decision; exclude: string[]; tell: boolean; first: boolean; stateError?: string };

/** Claims this prompt under a short lock and keeps it for capture: the decision, the shown set, the notices. */
async function claimPrompt(
  ctx: HookContext,
  prompt: { hash: string; outage?: number },
  waitMs: number,
  prints: ReadonlySet<string>,
): Promise<Claim> {
  const c = ctx.config;
  const decision = { duplicate: false } as Decision;
  const none: Claim = { decision, exclude: [], tell: false, first: false };
  if (!ctx.promptPaths) return none;
  const destination = c.autoCapture ? await sessionDestination(c) : undefined;
  try {
    const claimed = await updateState(ctx.promptPaths, (s) => {
      const decision = promptDecision(s, { ...prompt, at: ctx.startedAt });
      if (decision.duplicate) return Promise.resolve({ value: { ...none, decision } });
      const options = { maxLength: CAPTURE_MAX_LENGTH, redact: c.redact, prints };
      const kept = c.autoCapture ? keepPrompt(s, promptText(ctx.input), ctx.startedAt, options) : s;
      const tell = prompt.outage !== undefined && s.pausedNotice !== prompt.outage;
      const state: SessionState = {
        ...kept,
        ...(kept !== s ? { destination } : {}), // where a later start may send what was kept
        promptHash: prompt.hash,
        promptAt: ctx.startedAt,
        recall: decision.reuse ?? null,
        ...(tell ? { pausedNotice: prompt.outage } : {}),
      };
      const value = { decision, exclude: s.injectedUris, tell, first: s.promptAt === undefined };
      return Promise.resolve({ state, value });
    }, { waitMs });
    return claimed.acquired ? claimed.value : none;
  } catch (error) {
    const stateError = (error as Error).message;
    const effect = "recall without dedupe, profile or what was shown";
    ctx.log.stage("prompt-state-unavailable", { error: stateError, effect });
    return { ...none, stateError };
  }
}

/** Remembers what was printed and the outage and key refusal told of (best effort). */
async function rememberInjected(
  ctx: HookContext,
  hash: string,
  inj: Injection,
  budget: Budget,
  told?: number,
  refused?: string,
) {
  const tells = told !== undefined || refused !== undefined;
  if (!ctx.promptPaths || (!inj.found && !inj.injected.length && !tells)) return;
  await updateState(ctx.promptPaths, (s) => {
    const next: SessionState = { ...s };
    if (told !== undefined) next.pausedNotice = told;
    if (refused !== undefined) next.refusedNotice = refused;
    if (inj.found && s.promptHash === hash) next.recall = inj.found;
    if (inj.injected.length) {
      next.injectedUris = [...new Set([...s.injectedUris, ...inj.injected.map((m) => m.uri)])];
    }
    return Promise.resolve({ state: next, value: null });
  }, { waitMs: Math.min(1000, budget.remaining()) }).catch((error: Error) => {
    ctx.log.stage("prompt-state-unavailable", { error: error.message });
  });
}

/** A line to the user: what is wrong, and the command that says `more`. */
function notice(env: Env, words: SafeText, command: string, more = "why"): string {
  return safe`openviking-kimi: ${words}; \`${commandName(env)} ${command}\` says ${more}\n`.text;
}

/** The line that says memory is paused. */
export const pausedLine = (b: Breaker, env: Env): string =>
  notice(env, safe`memory paused — OpenViking at ${b.origin} did not answer`, "status");

/** The line that says the server refused the key, or its model fails. */
const refusedLine = (f: OvFailure, baseUrl: string, env: Env) =>
  notice(
    env,
    safe`memory off — OpenViking at ${originOf(baseUrl)} ${
      f.kind === "model" ? "cannot search: its model fails" : "refused the key"
    } (HTTP ${f.status})`,
    "doctor",
    "how to fix it",
  );

/** The line that says commits make no memory ("" without the alarm). */
async function alarmLine(ctx: HookContext): Promise<string> {
  const a = await readAlarm(ctx.sharedStateDir, ctx.config.baseUrl);
  if (!a) return "";
  const what = alarmWords(a).kind === "failed"
    ? `the last ${a.failed} extractions failed`
    : `the last ${a.commits} commits made none`;
  return notice(ctx.env, safe`OpenViking makes no memory (${what})`, "doctor");
}

/** The UserPromptSubmit handler; in a detached worker (a paused prompt's), the probe of the server. */
export async function userPromptSubmit(ctx: HookContext): Promise<HookResult> {
  const c = ctx.config;
  if (ctx.isWorker) {
    return { outcome: "probe", data: { answered: await probe(clientFor(ctx), ctx.sharedStateDir) } };
  }
  if (!c.autoRecall && !c.autoCapture) return { outcome: "recall-off" };
  const budget = new Budget(c.promptBudgetMs - (Date.now() - ctx.startedAt));
  const prints = await sessionPrints(ctx);
  const query = recallQuery(promptText(ctx.input), c.redact, prints);
  const hash = await sha256Hex(query);
  const breaker = c.autoRecall ? await readBreaker(ctx.sharedStateDir, c.baseUrl) : undefined;
  const paused = breaker && isOpen(breaker) ? breaker : undefined;
  const lockWait = Math.min(2000, Math.floor(budget.remaining() / 4));
  const claim = await claimPrompt(ctx, { hash, outage: paused?.since }, lockWait, prints);
  const { decision } = claim;
  if (decision.duplicate) return { outcome: "duplicate" };
  const alarm = claim.first ? await alarmLine(ctx) : "";
  if (!c.autoRecall) return { outcome: "recall-off", ...(alarm ? { stdout: alarm } : {}) };
  if (paused) {
    // Nothing asked; the session told once; a detached probe when due.
    const due = ctx.sharedStateDir && Date.now() >= nextProbeAt(paused);
    if (due) await noteProbing(ctx.sharedStateDir, paused);
    const probing = due ? await spawnWorker("user-prompt-submit", ctx.raw) : false;
    const stdout = (claim.tell ? pausedLine(paused, ctx.env) : "") + alarm;
    const data = { recall: "paused", injected: [], suppressed: [], printedChars: stdout.length, probing };
    return { stdout, outcome: "paused", query, data };
  }
  const peer = await resolvePeer(ctx.cwd, c);
  const inj = await injectionFor(clientFor(ctx, peer.peerId), c, {
    query,
    sessionId: ctx.ovSessionId || undefined,
    injected: claim.exclude,
    reuse: decision.reuse,
    budget,
    stateDir: ctx.sharedStateDir,
  });
  const asked = inj.recall !== "reused" && inj.recall !== "skipped";
  const after = await noteRecall(ctx.sharedStateDir, c.baseUrl, breaker, { asked, failure: inj.failure });
  // Told once per outage.
  const told = after && isOpen(after) && after.since !== decision.told ? after.since : undefined;
  // A refused key or a failing model: told once a session, again when the refusal or the key changes.
  const refusal = ["auth", "model"].includes(inj.failure?.kind ?? "") ? inj.failure : undefined;
  const tag = refusal &&
    `${refusal.kind === "model" ? "model " : ""}${refusal.status} ${await sessionDestination(c)}`;
  const refused = tag !== decision.refused ? tag : undefined;
  const lines = (told === undefined ? "" : pausedLine(after!, ctx.env)) +
    (refused === undefined ? "" : refusedLine(refusal!, c.baseUrl, ctx.env));
  const withLine = inj.stdout + lines + alarm;
  if (!claim.stateError) await rememberInjected(ctx, hash, inj, budget, told, refused);
  const stdout = withLine.length <= PRINT_MAX_CHARS ? withLine : inj.stdout;
  // The prompt that opened the breaker shows the paused line: the ledger says so, as for the later ones.
  const pausedOnly = !inj.stdout && told !== undefined && stdout !== "";
  return {
    stdout,
    outcome: inj.stdout ? "injected" : pausedOnly ? "paused" : "nothing",
    query,
    data: {
      recall: pausedOnly ? "paused" : inj.recall,
      injected: inj.injected,
      suppressed: inj.suppressed,
      printedChars: stdout.length,
      peer: peer.source,
      ...(claim.stateError ? { state: "unavailable" } : {}),
      ...(inj.failure ? { failure: causeOf(inj.failure) } : {}),
    },
  };
}
