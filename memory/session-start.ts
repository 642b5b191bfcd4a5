/** SessionStart: ignores a repeat, resets a new session's injections, then (detached) replays, commits and refreshes. */

import { causeOf } from "../openviking/advice.ts";
import { probeIfDue } from "../openviking/breaker.ts";
import { Budget } from "../openviking/client.ts";
import { replayQueue } from "../openviking/queue.ts";
import { updateState } from "./state.ts";
import { clientFor, clientUnlessSilent, type HookContext, type HookResult } from "./context.ts";
import { spawnWorker } from "../kimi/detach.ts";
import { pruneLedger } from "./ledger.ts";
import { refreshFromHook } from "./system-prompt.ts";
import { checkExtraction } from "./extraction.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { pruneStates } from "./state.ts";
import { hookStateDir, joinPath, ledgerDir, orNoHome } from "../lib/paths.ts";
import { removeAbandonedTemps, writeFileAtomic } from "../lib/fs.ts";

const REPEAT_WINDOW_MS = 2000;
const [SWEEP_EVERY_MS, SWEEP_STAMP] = [86_400_000, "kimicode-housekeeping.json"];

/** Once a day, the home's sweep (ARCHITECTURE decision 15): what went, or undefined (not due). */
async function houseKeeping(ctx: HookContext, now = Date.now()) {
  const stamp = ctx.sharedStateDir ? joinPath(ctx.sharedStateDir, SWEEP_STAMP) : "";
  const last = stamp ? (await Deno.stat(stamp).catch(() => undefined))?.mtime?.getTime() : undefined;
  if (last !== undefined && now >= last && now - last < SWEEP_EVERY_MS) return undefined;
  if (stamp) await writeFileAtomic(stamp, `${JSON.stringify({ at: now })}\n`).catch(() => {});
  const [states, ledger] = [orNoHome(() => hookStateDir(ctx.env)), orNoHome(() => ledgerDir(ctx.env))];
  let temps = 0; // a queue's own go as it opens or replays (openviking/queue.ts)
  for (const dir of [ctx.sharedStateDir, states, ledger]) temps += dir ? await removeAbandonedTemps(dir) : 0;
  const pruned = states ? await pruneStates(states, now).catch(() => 0) : 0;
  if (ledger) await pruneLedger(ledger, undefined, now).catch(() => 0);
  return { staleTempsRemoved: temps, ...(pruned ? { statesPruned: pruned } : {}) };
}

/** All a session start's worker may spend on the queue, its probe and the extraction check (ms). */
export const REPLAY_BUDGET_MS = 10_000;

async function replayQueues(ctx: HookContext): Promise<HookResult> {
  const budget = new Budget(REPLAY_BUDGET_MS);
  await probeIfDue(clientFor(ctx), ctx.sharedStateDir, Date.now(), budget);
  const options = { budget, waitUnsure: ctx.isWorker };
  const client = await clientUnlessSilent(ctx, budget);
  const report = await replayQueue(ctx.pendingDir, client, options);
  // Prompts of sessions that died before a Stop, and sessions that ended without SessionEnd: delivered now.
  const leftPrompts = await (await import("./capture.ts")).sendLeftPrompts(ctx, budget);
  const leftCommitted = await (await import("./idle-commit.ts")).commitLeftSessions(ctx, budget);
  const swept = await houseKeeping(ctx);
  const here = { session: ctx.ovSessionId, peer: (await resolvePeer(ctx.cwd, ctx.config)).peerId };
  const alarm = await checkExtraction(client, ctx.sharedStateDir, here, budget);
  await refreshFromHook(ctx, true);
  return {
    outcome: "replayed",
    data: {
      ...report,
      cause: report.cause ? causeOf(report.cause) : undefined,
      leftCommitted,
      leftPrompts,
      extractionAlarm: alarm === null ? "not-asked" : alarm !== undefined,
      ...swept,
    },
  };
}

/** The SessionStart handler. */
export async function sessionStart(ctx: HookContext): Promise<HookResult> {
  if (ctx.isWorker) return await replayQueues(ctx);
  if (ctx.promptPaths) {
    const res = await updateState(ctx.promptPaths, (s) => {
      const since = ctx.startedAt - (s.lastSessionStartAt ?? -Infinity);
      if (since >= 0 && since < REPEAT_WINDOW_MS) return Promise.resolve({ value: "repeat" });
      const reset = ctx.input.source !== "resume" && { injectedUris: [] };
      return Promise.resolve({ state: { ...s, lastSessionStartAt: ctx.startedAt, ...reset }, value: "ok" });
    }, { waitMs: 2000 }).catch((error: Error) => {
      ctx.log.stage("prompt-state-unavailable", {
        error: error.message,
        effect: "the queue is replayed anyway",
      });
      return { acquired: false as const };
    });
    if (res.acquired && res.value === "repeat") return { outcome: "repeat-ignored" };
  }
  if (ctx.config.writePathAsync && await spawnWorker("session-start", ctx.raw)) {
    return { outcome: "detached" };
  }
  return await replayQueues(ctx);
}
