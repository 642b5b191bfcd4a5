/**
 * Replaying our queue (queue.ts): sessions oldest first, each in sequence order under a kernel lock in its
 * directory, bounded in entries and time; then the shared queue. A claim found under the lock is one whose
 * replay died: taken over as unsure (the session is asked what it holds first). Refused or expired writes move
 * to the rejected place, which `replay --rejected` replays the same way.
 */

import { removeAbandonedTemps, writeFileAtomic } from "../lib/fs.ts";
import type { Budget, OpenVikingClient, OvFailure } from "./client.ts";
import { withLock } from "../lib/lock.ts";
import { joinPath } from "../lib/paths.ts";
import {
  answerCountsFrom,
  CommitResultSchema,
  deliverMessages,
  isHeld,
  liveMessages,
  mayHaveArrived,
} from "./sessions.ts";
import {
  entryName,
  keepRejected,
  type KeptWrite,
  type QueueEntry,
  type QueueFile,
  queueFiles,
  readEntry,
  REJECTED_SUBDIR,
  replayShared,
  sessionDirs,
  sessionPath,
  type SharedReplayReport,
  UNREADABLE,
} from "./queue.ts";

/** The lock a replay of a session holds, in the session's queue directory. */
const QUEUE_LOCK = "replay.lock";

/** Writes what is left of a claimed entry into its claim: durably, a replay killed later starts from there. */
async function keep<E extends QueueEntry>(claimPath: string, entry: E): Promise<E> {
  await writeFileAtomic(claimPath, `${JSON.stringify(entry)}\n`, { privateDir: false, durable: true });
  return entry;
}

/** Limits of one replay run. */
export interface ReplayOptions {
  /** At most this many entries are sent per run. */
  limit: number;
  /** Entries older than this move to the rejected place. */
  ttlDays: number;
  budget: Budget;
  /** Only this OpenViking session. */
  sessionId?: string;
  now?: number;
  /** Replay the rejected place (`replay --rejected`, no age limit) instead of the queue. */
  rejected?: boolean;
  /** Wait (inside the budget) for an unsure entry the server may still be storing, rather than leave it. */
  waitUnsure?: boolean;
}

/** What a replay run did. */
export interface ReplayReport {
  /** Entries delivered (all their messages sent or rejected, or the commit accepted). */
  replayed: number;
  /** Messages sent (of replayed or partly replayed entries). */
  messages: number;
  /** Messages of unsure entries the session already held: not sent again. */
  held: number;
  /** Messages (or commits) OpenViking rejected: kept in the rejected place. */
  rejected: number;
  /** Entries queued past the age limit (TTL): moved to the rejected place. */
  expired: number;
  /** Entries left for a later run (limit, budget, a failure, or a session busy elsewhere). */
  deferred: number;
  /** The commits replayed and the task OpenViking started for each. */
  commitTasks: { sessionId: string; taskId: string }[];
  /** The failure that stopped the run (or a session), if any. */
  cause?: OvFailure;
  /** A write whose reply was lost waits until then (the server may still be storing it), and its session's later ones with it. */
  waitUntil?: number;
  /** Messages sent per session (for `status`: they count as delivered, no longer as queued). */
  delivered: { sessionId: string; messages: number }[];
}

/** A failure that says the server as a whole cannot be used now (every session would fail the same way). */
function stopsEverything(res: OvFailure): boolean {
  return res.kind === "unreachable" || res.kind === "auth" || res.kind === "redirect" ||
    res.kind === "not-openviking" || res.kind === "missing-route";
}

/** The write an entry holds, as the rejected place keeps it. */
const writeOf = (entry: QueueEntry): KeptWrite =>
  entry.kind === "commit" ? { commit: entry.key } : { messages: entry.messages.map((m) => m.payload) };

/**
 * Replays one claimed entry; returns the failure that stopped it, if any (progress is kept in the claim). A
 * write OpenViking refuses is kept in the rejected place first; if that fails, this throws.
 */
async function replayEntry(
  run: ReplayRun,
  claimPath: string,
  entry: QueueEntry,
): Promise<OvFailure | undefined> {
  const { client, report, pendingDir } = run;
  const budget = run.options.budget;
  if (entry.kind === "commit") {
    const res = await client.request("POST", `${sessionPath(entry.sessionId)}/commit`, CommitResultSchema, {
      body: {},
      budget,
      peerId: null,
    });
    if (res.ok) {
      if (res.result.taskId) {
        report.commitTasks.push({ sessionId: entry.sessionId, taskId: res.result.taskId });
      }
      return undefined;
    }
    if (res.kind === "rejected") {
      const why = { status: res.status, message: res.error.message };
      await keepRejected(pendingDir, entry.sessionId, writeOf(entry), why, entry.createdAt);
      report.rejected++;
      return undefined;
    }
    return res;
  }
  let sure = entry;
  if (entry.unsure) {
    // Its last request may have arrived: what the session holds is not sent again. When the server cannot
    // say, everything is sent (a duplicate is better than a loss); the entry stays unsure until delivered.
    const held = await liveMessages(client, entry.sessionId, budget);
    if (held) {
      const { unsure: _, ...rest } = entry;
      const messages = entry.messages.filter((m) => !isHeld(held, m.payload));
      report.held += entry.messages.length - messages.length;
      if (!messages.length) return undefined;
      sure = await keep(claimPath, { ...rest, messages });
    }
  }
  const messages = sure.messages;
  const d = await deliverMessages(client, entry.sessionId, messages.map((m) => m.payload), {
    budget,
    onRejected: (payload, r) =>
      keepRejected(pendingDir, entry.sessionId, { messages: [payload] }, r, entry.createdAt),
    // Progress is kept in the claim: a replay killed later never sends these again.
    onSettled: async (settled) => {
      if (settled < messages.length) await keep(claimPath, { ...sure, messages: messages.slice(settled) });
    },
  });
  report.messages += d.sent;
  report.rejected += d.rejections.length;
  const mine = report.delivered.find((x) => x.sessionId === entry.sessionId);
  if (mine) mine.messages += d.sent;
  else if (d.sent) report.delivered.push({ sessionId: entry.sessionId, messages: d.sent });
  return d.stop;
}

/** The queue directories to replay (one session's, or every one there is), oldest first write first. */
async function queuedSessions(pendingDir: string, options: ReplayOptions, now: number): Promise<string[]> {
  const sessions: { dir: string; first: number }[] = [];
  for (
    const dir of await sessionDirs(
      pendingDir,
      options.sessionId,
      options.rejected ? REJECTED_SUBDIR : undefined,
    )
  ) {
    if (!(await Deno.stat(dir).then((i) => i.isDirectory, () => false))) continue;
    const [head] = await queueFiles(dir);
    const first = head?.claimedBy === undefined && head
      ? (await readEntry(joinPath(dir, head.name)))?.createdAt ?? now
      : now;
    sessions.push({ dir, first });
  }
  return sessions.sort((a, b) => a.first - b.first).map((s) => s.dir);
}

/** One replay run: its bounds, what it has sent, whether it must stop, and its report. */
interface ReplayRun {
  client: OpenVikingClient;
  pendingDir: string;
  options: ReplayOptions;
  now: number;
  sent: number;
  stopAll: boolean;
  report: ReplayReport;
}

/**
 * Replays one file of a session's queue, under the session's lock: "next" when the session may go on (sent,
 * rejected, expired, or put aside as unreadable), "stop" when its later writes must wait (a failure, the run's
 * bounds). A claim there is one whose replay died: it is taken over, unsure.
 */
async function replayFile(run: ReplayRun, dir: string, f: QueueFile): Promise<"next" | "stop"> {
  const { options, report } = run;
  if (run.sent >= options.limit || options.budget.remaining() < 100) {
    run.stopAll = true;
    return "stop";
  }
  const path = joinPath(dir, entryName(f.seq, f.tag));
  const claim = joinPath(dir, entryName(f.seq, f.tag, Deno.pid));
  if (!(await Deno.rename(joinPath(dir, f.name), claim).then(() => true, () => false))) return "stop";
  let entry = await readEntry(claim);
  if (!entry) {
    // Not ours to understand (torn by hand, or a newer format): keep it aside rather than block the session.
    await Deno.rename(claim, `${path}${UNREADABLE}`).catch(() => {});
    return "next";
  }
  const expired = !options.rejected && run.now - entry.createdAt > options.ttlDays * 86_400_000;
  let stop: OvFailure | "local" | "wait" | undefined;
  if (expired) {
    const why = { status: 0, message: `waited in the queue longer than ${options.ttlDays} days` };
    stop = await keepRejected(run.pendingDir, entry.sessionId, writeOf(entry), why, entry.createdAt)
      .then(() => undefined, () => "local" as const);
  } else {
    const timeout = run.client.options.timeoutMs;
    // A dead replay's last request may still be being stored.
    if (f.claimedBy !== undefined && !entry.unsure) {
      entry = await keep(claim, { ...entry, unsure: run.now + timeout });
    }
    const wait = (typeof entry.unsure === "number" ? entry.unsure : 0) - run.now;
    const waits = wait > 0 && options.waitUnsure && wait < options.budget.remaining() - 1000;
    if (waits) await new Promise((r) => setTimeout(r, wait));
    if (wait > 0 && !waits) {
      stop = "wait";
      report.waitUntil = Math.min(report.waitUntil ?? run.now + wait, run.now + wait);
    } else {
      run.sent++;
      stop = await replayEntry(run, claim, entry).catch(() => "local" as const);
    }
  }
  if (!stop) {
    await Deno.remove(claim).catch(() => {});
    if (expired) report.expired++;
    else report.replayed++;
    return "next";
  }
  // Back in its place, named after what is left of it (progress inside it is kept).
  let left = await readEntry(claim) ?? entry;
  if (stop !== "local" && stop !== "wait" && mayHaveArrived(stop)) {
    left = await keep(claim, { ...left, unsure: answerCountsFrom(stop, run.client.options.timeoutMs) });
  }
  await Deno.rename(claim, joinPath(dir, entryName(f.seq, left))).catch(() => {});
  if (stop === "wait") return "stop"; // the session's later writes wait behind it; other sessions go on
  if (stop !== "local") report.cause = stop;
  // "local": the rejected place could not keep a write (a full disk), so nothing more is settled now.
  if (stop === "local" || stopsEverything(stop)) run.stopAll = true;
  return "stop";
}

/**
 * Replays one session's queue under its lock; a session another replay holds is left to a later run. An
 * emptied queue directory goes.
 */
async function replaySession(run: ReplayRun, dir: string): Promise<void> {
  const done = await withLock(joinPath(dir, QUEUE_LOCK), async () => {
    await removeAbandonedTemps(dir); // what a write killed mid-way left (else the directory is never empty)
    const files = await queueFiles(dir);
    let i = 0;
    while (i < files.length && !run.stopAll && await replayFile(run, dir, files[i]) === "next") i++;
    run.report.deferred += files.length - i;
    return i === files.length;
  }, { waitMs: 0 });
  if (!done.acquired) run.report.deferred += (await queueFiles(dir)).length;
  else if (done.value) await Deno.remove(dir).catch(() => {}); // a capture that queued meanwhile keeps it
}

/** Replays our queue: sessions oldest first, each in sequence order, bounded in entries and time. */
export async function replayQueue(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const zero = { replayed: 0, messages: 0, held: 0, rejected: 0, expired: 0, deferred: 0 };
  const report: ReplayReport = { ...zero, commitTasks: [], delivered: [] };
  const now = options.now ?? Date.now();
  const run: ReplayRun = { client, pendingDir, options, now, sent: 0, stopAll: false, report };
  for (const dir of await queuedSessions(pendingDir, options, now)) await replaySession(run, dir);
  return report;
}

/** Limits of a replay of both queues (ours, then the shared one). */
export interface ReplayAllOptions extends ReplayOptions {
  /** Shared-queue entries whose retries (spent by other plugins) reached this are dropped. */
  maxRetries: number;
}

/** What a replay of both queues did. */
export interface ReplayAllReport extends ReplayReport {
  shared: SharedReplayReport;
}

/**
 * Replays our queue, then (unless limited to one session) what other plugins left in the shared queue, within
 * one entry limit and one budget.
 */
export async function replayAll(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayAllOptions,
): Promise<ReplayAllReport> {
  const ours = await replayQueue(pendingDir, client, options);
  const shared: SharedReplayReport = { replayed: 0, dropped: 0, deferred: 0 };
  const stopped = ours.cause !== undefined && stopsEverything(ours.cause);
  if (options.sessionId === undefined && !stopped) {
    Object.assign(
      shared,
      await replayShared(pendingDir, client, {
        ...options,
        limit: Math.max(0, options.limit - ours.replayed),
      }),
    );
  }
  return { ...ours, cause: ours.cause ?? shared.cause, shared };
}

/** The bounds of a replay from the config: its entry limit (unless given), retries, age, and `run`'s budget. */
export function replayOptions(
  config: { pendingReplayLimit: number; pendingMaxRetries: number; pendingTtlDays: number },
  run: { budget: Budget; limit?: number; sessionId?: string; waitUnsure?: boolean },
): ReplayAllOptions {
  return {
    waitUnsure: run.waitUnsure,
    limit: run.limit ?? config.pendingReplayLimit,
    maxRetries: config.pendingMaxRetries,
    ttlDays: config.pendingTtlDays,
    budget: run.budget,
    ...(run.sessionId !== undefined ? { sessionId: run.sessionId } : {}),
  };
}
