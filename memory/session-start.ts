/**
 * SessionStart: ignores a repeat within 2 s, resets the profile flag of a new (not resumed) session, and
 * replays the pending queue and (plugin mode) refreshes the plugin's system prompt with the current profile —
 * in a detached worker, so session creation never waits on the network; that worker also asks what the newest
 * commits made (memory/extraction.ts). Prints nothing.
 */

import { probeIfDue } from "../openviking/breaker.ts";
import { Budget } from "../openviking/client.ts";
import { replayAll, replayOptions } from "../openviking/replay.ts";
import { updateState } from "./state.ts";
import { clientFor, type HookContext, type HookResult } from "./context.ts";
import { spawnWorker } from "../kimi/detach.ts";
import { houseKeeping } from "./ledger.ts";
import { refreshFromHook } from "./system-prompt.ts";
import { checkExtraction } from "./extraction.ts";
import { resolvePeer } from "../openviking/peer.ts";

/** A SessionStart this close to the previous one is the same start fired twice. */
const REPEAT_WINDOW_MS = 2000;

/** Replays the pending queues within the configured bounds, then refreshes the plugin's system prompt. */
async function replayQueues(ctx: HookContext): Promise<HookResult> {
  // A paused recall's server, probed when due: a new session's first prompt may then ask it at once.
  await probeIfDue(clientFor(ctx), ctx.sharedStateDir);
  const options = replayOptions(ctx.config, {
    budget: new Budget(ctx.config.replayBudgetMs),
    waitUnsure: ctx.isWorker,
  });
  const report = await replayAll(ctx.pendingDir, clientFor(ctx), options);
  // Sessions that ended without SessionEnd, their last turns still uncommitted: committed now.
  // It reads every session's state, so only where a Stop may leave turns uncommitted (not every-turn, whose
  // failed commits wait in the queue): a session start's cost does not grow with the history otherwise.
  const leftCommitted = ctx.config.commitPolicy === "every-turn"
    ? 0
    : await (await import("./idle-commit.ts")).commitLeftSessions(ctx, options.budget);
  // Temp files of writes killed mid-way (a session's queue was swept by the replay above), the ledger's bounds.
  const temps = await houseKeeping(ctx);
  // What the newest commits made: the alarm for the next session's first prompt (which asks no server for it),
  // and the memories of each workspace for the strict scope.
  const here = { session: ctx.ovSessionId, peer: (await resolvePeer(ctx.cwd, ctx.config)).peerId };
  const alarm = await checkExtraction(clientFor(ctx), ctx.sharedStateDir, here);
  const cause = report.cause ? { kind: report.cause.kind, status: report.cause.status } : undefined;
  // For the next Kimi start or /reload: this session's system prompt was frozen when Kimi created it.
  await refreshFromHook(ctx, true);
  return {
    outcome: "replayed",
    data: {
      ...report,
      cause,
      leftCommitted,
      extractionAlarm: alarm === null ? "not-asked" : alarm !== undefined,
      ...(temps === undefined ? {} : { staleTempsRemoved: temps }),
    },
  };
}

/** The SessionStart handler. */
export async function sessionStart(ctx: HookContext): Promise<HookResult> {
  if (ctx.isWorker) return await replayQueues(ctx);
  if (ctx.promptPaths) {
    // Best effort: a state that cannot be written only costs the repeat window and the profile reset.
    const res = await updateState(ctx.promptPaths, (s) => {
      const last = s.lastSessionStartAt;
      if (last !== undefined && ctx.startedAt >= last && ctx.startedAt - last < REPEAT_WINDOW_MS) {
        return Promise.resolve({ value: "repeat" });
      }
      const resumed = ctx.input.source === "resume";
      // A resumed session still has the profile in its context; a new one needs it again.
      return Promise.resolve({
        state: {
          ...s,
          lastSessionStartAt: ctx.startedAt,
          ...(resumed ? {} : { profileInjected: false, injectedUris: [], compacted: false }),
        },
        value: "ok",
      });
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
