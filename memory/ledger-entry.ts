/**
 * What a hook run writes to the local ledger (runtime/ledger.ts), made from what its handler reported: a
 * prompt's recall, a capture, a queue replay. Runs after the hook's output is written, so the prompt never
 * waits for it. The prompt's snippet is cut from the redacted query, so no key and no `<private>` text is kept.
 */

import * as z from "zod/mini";
import type { Config } from "../openviking/config.ts";
import {
  appendLedger,
  type LedgerEntry,
  type LedgerLimits,
  MAX_LISTED,
  pruneLedger,
  REPLAY_FILE,
  snippet,
} from "./ledger.ts";
import { asRecord, isRecord } from "../lib/parsed.ts";
import { removeAbandonedTemps, writeFileAtomic } from "../lib/fs.ts";
import { type Env, hookStateDir, joinPath, ledgerDir, orNoHome } from "../lib/paths.ts";
import { safeId } from "../lib/paths.ts";
import type { HookContext, HookResult } from "./context.ts";
import { promptText } from "../kimi/payload.ts";
import { recallQuery } from "./query.ts";

const num = z.catch(z.number(), 0);
const text = z.catch(z.optional(z.string()), undefined);
const Cause = z.catch(
  z.optional(
    z.object({
      kind: z.string(),
      status: z.catch(z.number(), 0),
      message: z.catch(z.string(), ""),
      location: z.catch(z.optional(z.string()), undefined),
    }),
  ),
  undefined,
);

/** The prompt handler's report (fields it may leave out read as empty). */
const PromptData = z.object({
  recall: z.catch(z.string(), "skipped"),
  injected: z.catch(
    z.array(z.object({ uri: z.string(), score: z.optional(z.number()), chars: z.catch(z.number(), 0) })),
    [],
  ),
  suppressed: z.catch(z.array(z.string()), []),
  profile: text,
  printedChars: z.optional(z.number()),
  failure: Cause,
});

/** A capture's report. */
const CaptureData = z.object({
  turns: num,
  sent: num,
  queued: num,
  rejected: num,
  commit: z.catch(z.string(), "none"),
  taskId: text,
  cause: Cause,
});

/** A replay's report. */
const ReplayData = z.object({
  replayed: num,
  messages: num,
  rejected: num,
  deferred: num,
  commitTasks: z.catch(z.array(z.object({ sessionId: z.string(), taskId: z.string() })), []),
  delivered: z.catch(z.array(z.object({ sessionId: z.string(), messages: z.number() })), []),
  cause: Cause,
});

/** The replay entry of a replay's report, or undefined when it sent and met nothing (pure). */
export function replayEntryOf(
  report: unknown,
  timing: { startedAt: number; now: number },
): LedgerEntry | undefined {
  const d = ReplayData.parse(isRecord(report) ? { ...report, cause: plainCause(report.cause) } : {});
  if (!d.replayed && !d.rejected && !d.cause) return undefined; // an empty queue is not news
  const { cause, ...counts } = d;
  return {
    kind: "replay",
    at: timing.startedAt,
    ms: timing.now - timing.startedAt,
    ...counts,
    ...(cause ? { cause } : {}),
  };
}

/** A failure as the ledger keeps it: `{kind, status, message}`, also from a client failure (`error.message`). */
function plainCause(cause: unknown): unknown {
  if (!isRecord(cause) || typeof cause.message === "string") return cause;
  const message = asRecord(cause.error).message;
  return { kind: cause.kind, status: cause.status, message: typeof message === "string" ? message : "" };
}

/** The ledger entry of one hook run, or undefined when it did nothing worth recording (pure). */
export function ledgerEntryOf(
  ctx: Pick<HookContext, "event" | "input" | "config" | "isWorker">,
  result: HookResult,
  timing: { startedAt: number; now: number },
): LedgerEntry | undefined {
  const base = { at: timing.startedAt, ms: timing.now - timing.startedAt };
  const data = result.data ?? {};
  if (ctx.event === "user-prompt-submit") {
    // A duplicate run, recall switched off and a paused prompt's probe of the server are no prompts of the user.
    if (["duplicate", "recall-off", "probe"].includes(result.outcome)) return undefined;
    const d = PromptData.parse(data);
    const more = Math.max(0, d.injected.length - MAX_LISTED) + Math.max(0, d.suppressed.length - MAX_LISTED);
    return {
      kind: "prompt",
      ...base,
      prompt: snippet(recallQuery(promptText(ctx.input), ctx.config.redact)),
      path: d.recall,
      injected: d.injected.slice(0, MAX_LISTED),
      suppressed: d.suppressed.slice(0, MAX_LISTED),
      ...(more ? { more } : {}),
      ...(d.profile ? { profile: d.profile } : {}),
      printedChars: d.printedChars ?? (result.stdout ?? "").length,
      ...(d.failure ? { failure: d.failure } : {}),
    };
  }
  if (ctx.event === "session-start") {
    return result.outcome === "replayed" ? replayEntryOf(data, timing) : undefined;
  }
  // A capture from the kept prompts (no journal) is one too, when it settled any.
  const fromPrompts = result.outcome === "no-journal" && Number(data.fallback) > 0;
  if (result.outcome !== "captured" && !fromPrompts) return undefined;
  const { cause, ...counts } = CaptureData.parse(data);
  return { kind: "capture", ...base, event: ctx.event, ...counts, ...(cause ? { cause } : {}) };
}

/** The ledger's bounds from the config. */
export function ledgerLimits(config: Pick<Config, "ledgerMaxBytes" | "ledgerMaxAgeDays">): LedgerLimits {
  return { maxTotalBytes: config.ledgerMaxBytes, maxAgeDays: config.ledgerMaxAgeDays };
}

/**
 * Appends a replay's entry to the replay ledger, unless it sent and met nothing: `openviking-kimi replay` (also
 * the one an interrupt starts detached) and a capture's replay of its backlog. Never throws: false when it could not.
 */
export async function recordReplay(
  env: Env,
  limits: LedgerLimits,
  report: unknown,
  startedAt: number,
): Promise<boolean> {
  const entry = replayEntryOf(report, { startedAt, now: Date.now() });
  if (!entry) return true;
  try {
    const dir = orNoHome(() => ledgerDir(env));
    return dir !== undefined && await appendLedger(dir, REPLAY_FILE, entry, limits);
  } catch {
    return false;
  }
}

/** Session start's sweep of the whole home runs at most this often. */
const HOUSEKEEPING_EVERY_MS = 86_400_000;

/** The stamp (in the shared state directory) of the last sweep of the whole home. */
const HOUSEKEEPING_STAMP = "kimicode-housekeeping.json";

/**
 * What a session start does with the whole home — remove temp files that killed writes left in the queue and in
 * the hook state, cut the ledger to its bounds — costs in proportion to the history, and runs beside the
 * session's first prompt: at most once a day (the stamp says when it last ran). Returns the temp files removed,
 * or undefined when it was not due. Never throws.
 */
export async function houseKeeping(ctx: HookContext, now = Date.now()): Promise<number | undefined> {
  const stamp = ctx.sharedStateDir ? joinPath(ctx.sharedStateDir, HOUSEKEEPING_STAMP) : "";
  const last = stamp ? (await Deno.stat(stamp).catch(() => undefined))?.mtime?.getTime() : undefined;
  if (last !== undefined && now >= last && now - last < HOUSEKEEPING_EVERY_MS) return undefined;
  if (stamp) await writeFileAtomic(stamp, `${JSON.stringify({ at: now })}\n`).catch(() => {});
  const temps = (await removeAbandonedTemps(ctx.pendingDir)) +
    (await removeAbandonedTemps(hookStateDir(ctx.env)));
  const dir = orNoHome(() => ledgerDir(ctx.env));
  if (dir) await pruneLedger(dir, ledgerLimits(ctx.config), now).catch(() => 0);
  return temps;
}

/**
 * Appends the run's entry to its session's ledger (a replay to the replay ledger, and so a capture's replay of
 * its backlog). Never throws, never blocks the hook for long: the ledger is a record, not a dependency.
 */
export async function recordRun(ctx: HookContext, result: HookResult, startedAt: number): Promise<void> {
  const entry = ledgerEntryOf(ctx, result, { startedAt, now: Date.now() });
  const dir = orNoHome(() => ledgerDir(ctx.env));
  if (!dir) return;
  const limits = ledgerLimits(ctx.config);
  try {
    const name = entry?.kind === "replay"
      ? REPLAY_FILE
      : ctx.hostSessionId && await safeId(ctx.hostSessionId);
    // A capture first replays what its session had queued: recorded before the capture, as it happened.
    if (result.data?.backlog) {
      await recordReplay(ctx.env, limits, result.data.backlog, startedAt);
    }
    if (entry && name) await appendLedger(dir, name, entry, limits);
  } catch (error) {
    ctx.log.stage("ledger-unwritable", { error: (error as Error).message });
  }
}
