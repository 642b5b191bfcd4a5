/**
 * UserPromptSubmit: recall (and, once per session, the profile) printed as plain text, which Kimi Code
 * appends to the model context. Duplicate hook runs print nothing; the same prompt again reuses its stored
 * block. The whole hook stays inside its budget (default 17 s, under the host's 20 s) and never blocks.
 */

import { sha256Hex } from "../runtime/hash.ts";
import { Budget } from "../runtime/http.ts";
import { peerOptions, resolvePeer } from "../runtime/peer.ts";
import { safe, type SafeText } from "../runtime/neutralize.ts";
import { type Block, blockText, printBlocks } from "../runtime/printed.ts";
import { buildProfile } from "../runtime/profile.ts";
import { recallForPrompt, type RecallResult, storedRecallBlock } from "../runtime/recall.ts";
import { type SessionState, updateState } from "../runtime/state.ts";
import { clientFor, type HookContext, type HookResult } from "./context.ts";
import { promptText } from "./input.ts";
import { recallQuery } from "./prompt-query.ts";
import { keepPrompt } from "./prompt-fallback.ts";

/** The same text within this window is the same prompt's hook fired twice. */
export const DUPLICATE_WINDOW_MS = 500;

/** Wraps the profile block as the documented session-start context. */
function profileContext(profile: SafeText): Block {
  return {
    open: safe`<openviking-context source="session-start">`,
    body: profile,
    close: safe`</openviking-context>`,
  };
}

/** Decides, from the stored prompt state, whether this run is a duplicate and what can be reused (pure). */
export function promptDecision(
  state: SessionState,
  prompt: { hash: string; eventId: string; at: number },
): { duplicate: boolean; reuse?: string; needProfile: boolean } {
  const duplicate = prompt.eventId
    ? state.promptEventId === prompt.eventId
    : state.promptHash === prompt.hash && state.promptAt !== undefined &&
      Math.abs(prompt.at - state.promptAt) < DUPLICATE_WINDOW_MS;
  const reuse = state.promptHash === prompt.hash && typeof state.recallBlock === "string"
    ? state.recallBlock
    : undefined;
  return { duplicate, reuse, needProfile: !state.profileInjected };
}

/** What the claim found: the decision, the URIs the session already has, and why the state was not usable. */
interface Claim {
  decision: ReturnType<typeof promptDecision>;
  exclude: string[];
  stateError: string;
}

/**
 * Phase 1: claims this prompt (short lock, no network inside) and keeps it for capture's fallback. Best
 * effort: recall needs no state, so a state that cannot be kept (read-only home, a file in the way) only
 * costs dedupe and the profile.
 */
async function claimPrompt(
  ctx: HookContext,
  prompt: { hash: string; eventId: string },
  lockWait: number,
): Promise<Claim> {
  const c = ctx.config;
  const claim: Claim = { decision: { duplicate: false, needProfile: false }, exclude: [], stateError: "" };
  if (!ctx.promptPaths) return claim;
  const fallbackOptions = { maxLength: c.captureMaxLength, redact: c.redact };
  try {
    const claimed = await updateState(ctx.promptPaths, (s) => {
      const d = promptDecision(s, { ...prompt, at: ctx.startedAt });
      if (d.duplicate) return Promise.resolve({ value: { d, exclude: [] as string[] } });
      const kept = c.autoCapture ? keepPrompt(s, promptText(ctx.input), ctx.startedAt, fallbackOptions) : s;
      const next: SessionState = {
        ...kept,
        promptHash: prompt.hash,
        promptEventId: prompt.eventId || undefined,
        promptAt: ctx.startedAt,
        recallBlock: d.reuse ?? null,
      };
      return Promise.resolve({ state: next, value: { d, exclude: s.injectedUris } });
    }, { waitMs: lockWait });
    if (claimed.acquired) [claim.decision, claim.exclude] = [claimed.value.d, claimed.value.exclude];
  } catch (error) {
    claim.stateError = (error as Error).message;
    ctx.log.stage("prompt-state-unavailable", {
      error: claim.stateError,
      effect: "recall without dedupe or profile",
    });
  }
  return claim;
}

/** Phase 3: remembers what was injected (best effort, like the claim). */
async function rememberInjected(
  ctx: HookContext,
  hash: string,
  injected: { recall?: RecallResult; profile: SafeText | null },
  budget: Budget,
): Promise<void> {
  const { recall, profile } = injected;
  if (!ctx.promptPaths || !(recall || profile)) return;
  await updateState(ctx.promptPaths, (s) => {
    const next: SessionState = { ...s, profileInjected: s.profileInjected || Boolean(profile) };
    if (recall && s.promptHash === hash) next.recallBlock = recall.block ? blockText(recall.block) : "";
    if (recall?.uris.length) next.injectedUris = [...new Set([...s.injectedUris, ...recall.uris])];
    return Promise.resolve({ state: next, value: null });
  }, { waitMs: Math.min(1000, budget.remaining()) }).catch((error: Error) => {
    ctx.log.stage("prompt-state-unavailable", { error: error.message });
  });
}

/** The UserPromptSubmit handler. */
export async function userPromptSubmit(ctx: HookContext): Promise<HookResult> {
  const c = ctx.config;
  // With capture on, the claim below still keeps the prompt for capture's fallback (prompt-fallback.ts).
  if (!c.autoRecall && !c.autoCapture) return { outcome: "recall-off" };
  const budget = new Budget(c.promptBudgetMs - (Date.now() - ctx.startedAt));
  // The query leaves the machine too: bounded, injected blocks out, the same redaction as captured text.
  const prompt = recallQuery(promptText(ctx.input), c.redact);
  const eventId = ctx.input.prompt_id ?? ctx.input.request_id ?? ctx.input.message_id ?? "";
  const hash = await sha256Hex(prompt);
  const lockWait = Math.min(2000, Math.floor(budget.remaining() / 4));
  const { decision, exclude, stateError } = await claimPrompt(ctx, { hash, eventId }, lockWait);
  if (decision.duplicate) return { outcome: "duplicate" };
  if (!c.autoRecall) return { outcome: "recall-off" };

  // Phase 2: recall and profile in parallel, inside the budget.
  const peer = await resolvePeer(ctx.cwd, peerOptions(c));
  const client = clientFor(ctx, peer.peerId);
  const wantRecall = decision.reuse === undefined && prompt.length >= c.minQueryLength;
  const [recall, profile] = await Promise.all([
    wantRecall
      ? recallForPrompt(client, c, {
        query: prompt,
        sessionId: ctx.ovSessionId || undefined,
        excludeUris: exclude,
        budget,
        stateDir: ctx.sharedStateDir,
      })
      : Promise.resolve(undefined),
    decision.needProfile ? buildProfile(client, c.profileTokenBudget, budget) : Promise.resolve(null),
  ]);
  const recallBlock = decision.reuse !== undefined ? storedRecallBlock(decision.reuse) : recall?.block;
  if (!stateError) await rememberInjected(ctx, hash, { recall, profile }, budget);

  const blocks = [profile ? profileContext(profile) : undefined, recallBlock].filter((b) => b !== undefined);
  return {
    stdout: printBlocks(blocks),
    outcome: blocks.length ? "injected" : "nothing",
    data: {
      recall: decision.reuse !== undefined ? "reused" : recall?.source ?? "skipped",
      profile: profile ? "injected" : decision.needProfile ? "unavailable" : "already",
      peer: peer.source,
      ...(stateError ? { state: "unavailable" } : {}),
    },
  };
}
