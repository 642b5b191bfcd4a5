/** Replaying our queue (each session in order under its lock) and the rejected place. */

import { removeAbandonedTemps, writeFileAtomic } from "../lib/fs.ts";
import type { Budget, OpenVikingClient, OvFailure } from "./client.ts";
import { withLock } from "../lib/lock.ts";
import { joinPath } from "../lib/paths.ts";
import { deliverMessages, heldMessages, isHeld, postCommit, unsureFrom } from "./sessions.ts";
import {
  countOf,
  type Destination,
  destinationOf,
  entryName,
  goesTo,
  keepRejected,
  type KeptWrite,
  type QueueEntry,
  type QueueFile,
  queueFiles,
  readEntry,
  REJECTED_SUBDIR,
  sessionDirs,
  UNREADABLE,
} from "./queue.ts";

const QUEUE_LOCK = "replay.lock";

/** Writes what is left of a claimed entry into its claim, durably. */
async function keep<E extends QueueEntry>(claimPath: string, entry: E): Promise<E> {
  await writeFileAtomic(claimPath, `${JSON.stringify(entry)}\n`, { privateDir: false, durable: true });
  return entry;
}

/** Limits of one replay; `rejected`: replay the rejected place (no age limit); `waitUnsure`: wait in the budget for an unsure entry. */
export interface ReplayOptions {
  limit: number;
  ttlDays: number;
  budget: Budget;
  sessionId?: string;
  now?: number;
  rejected?: boolean;
  waitUnsure?: boolean;
}

/**
 * What a replay did: entries `replayed`, `expired` or `deferred`; messages sent, `held` already, `rejected`;
 * `waitUntil`: an unsure write waits until then; `elsewhere`: what is left for another destination.
 */
export interface ReplayReport {
  replayed: number;
  messages: number;
  held: number;
  rejected: number;
  expired: number;
  deferred: number;
  commitTasks: { sessionId: string; taskId: string }[];
  cause?: OvFailure;
  waitUntil?: number;
  delivered: { sessionId: string; messages: number }[];
  elsewhere: (Destination & { messages: number; commits: number })[];
}

/** A failure every session would meet the same way. */
function stopsEverything(res: OvFailure): boolean {
  return res.kind === "unreachable" || res.kind === "auth" || res.kind === "redirect" ||
    res.kind === "not-openviking" || res.kind === "missing-route";
}

const writeOf = (entry: QueueEntry): KeptWrite => ({
  ...(entry.kind === "commit" ? { commit: entry.key } : { messages: entry.messages.map((m) => m.payload) }),
  ...(entry.to && { to: entry.to }),
});

/** Replays one claimed entry (progress kept in the claim); returns the failure that stopped it. Throws when a refused write cannot be kept. */
async function replayEntry(run: ReplayRun, claimPath: string, entry: QueueEntry) {
  const { client, report, pendingDir } = run;
  const { sessionId, createdAt } = entry;
  const budget = run.options.budget;
  const reject = (write: KeptWrite, why: { status: number; message: string }) =>
    keepRejected(pendingDir, sessionId, write, why, createdAt);
  if (entry.kind === "commit") {
    const res = await postCommit(client, sessionId, budget);
    if (res.ok && res.result.taskId) report.commitTasks.push({ sessionId, taskId: res.result.taskId });
    if (res.ok || res.kind !== "rejected") return res.ok ? undefined : res;
    await reject(writeOf(entry), { status: res.status, message: res.error.message });
    report.rejected++;
    return undefined;
  }
  // What the session holds is not sent again; when it cannot say, all is sent: a duplicate beats a loss.
  const held = entry.unsure ? await heldMessages(client, sessionId, budget) : undefined;
  let sure = entry;
  if (held) {
    const { unsure: _, ...rest } = entry;
    const messages = entry.messages.filter((m) => !isHeld(held, m.payload));
    report.held += entry.messages.length - messages.length;
    if (!messages.length) return undefined;
    sure = await keep(claimPath, { ...rest, messages });
  }
  const messages = sure.messages;
  const d = await deliverMessages(client, sessionId, messages.map((m) => m.payload), {
    budget,
    onRejected: (payload, r) => reject({ ...writeOf(entry), messages: [payload] }, r),
    onSettled: async (settled) => {
      if (settled < messages.length) await keep(claimPath, { ...sure, messages: messages.slice(settled) });
    },
  });
  report.messages += d.sent;
  report.rejected += d.rejections.length;
  const mine = report.delivered.find((x) => x.sessionId === sessionId);
  if (mine) mine.messages += d.sent;
  else if (d.sent) report.delivered.push({ sessionId, messages: d.sent });
  return d.stop;
}

/** The queue directories to replay, oldest first write first (a claimed head counts as now). */
async function queuedSessions(pendingDir: string, options: ReplayOptions, now: number): Promise<string[]> {
  const subdir = options.rejected ? REJECTED_SUBDIR : undefined;
  const sessions: { dir: string; first: number }[] = [];
  for (const dir of await sessionDirs(pendingDir, options.sessionId, subdir)) {
    if (!(await Deno.stat(dir).then((i) => i.isDirectory, () => false))) continue;
    const [head] = await queueFiles(dir);
    const first = head?.claimedBy === undefined && head && await readEntry(joinPath(dir, head.name));
    sessions.push({ dir, first: first ? first.createdAt : now });
  }
  return sessions.sort((a, b) => a.first - b.first).map((s) => s.dir);
}

interface ReplayRun {
  client: OpenVikingClient;
  to: Destination;
  pendingDir: string;
  options: ReplayOptions;
  now: number;
  sent: number;
  stopAll: boolean;
  report: ReplayReport;
}

/**
 * Replays one queue file under the session's lock: "stop" when the session's later writes must wait, the
 * entry's destination when it is for another (put back untouched). A claim found is a dead replay's: taken
 * over, unsure.
 */
async function replayFile(run: ReplayRun, dir: string, f: QueueFile): Promise<"next" | "stop" | Destination> {
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
    await Deno.rename(claim, `${path}${UNREADABLE}`).catch(() => {});
    return "next";
  }
  const timeout = run.client.options.timeoutMs;
  if (f.claimedBy !== undefined && !entry.unsure) {
    entry = await keep(claim, { ...entry, unsure: run.now + timeout });
  }
  if (!goesTo(entry.to, run.to)) {
    await Deno.rename(claim, path).catch(() => {});
    return entry.to!;
  }
  const expired = !options.rejected && run.now - entry.createdAt > options.ttlDays * 86_400_000;
  const wait = expired ? 0 : (typeof entry.unsure === "number" ? entry.unsure : 0) - run.now;
  const waits = wait > 0 && options.waitUnsure && wait < options.budget.remaining() - 1000;
  if (waits) await new Promise((r) => setTimeout(r, wait));
  let stop: OvFailure | "local" | "wait" | undefined = "wait";
  if (expired) {
    const why = { status: 0, message: `waited in the queue longer than ${options.ttlDays} days` };
    stop = await keepRejected(run.pendingDir, entry.sessionId, writeOf(entry), why, entry.createdAt)
      .then(() => undefined, () => "local" as const);
  } else if (wait > 0 && !waits) {
    report.waitUntil = Math.min(report.waitUntil ?? run.now + wait, run.now + wait);
  } else {
    run.sent++;
    stop = await replayEntry(run, claim, entry).catch(() => "local" as const);
  }
  if (!stop) {
    await Deno.remove(claim).catch(() => {});
    if (expired) report.expired++;
    else report.replayed++;
    return "next";
  }
  let left = await readEntry(claim) ?? entry;
  const failure = typeof stop === "object" ? stop : undefined;
  const unsure = failure && unsureFrom(failure, timeout);
  if (unsure !== undefined) left = await keep(claim, { ...left, unsure });
  await Deno.rename(claim, joinPath(dir, entryName(f.seq, left))).catch(() => {});
  if (failure) report.cause = failure;
  run.stopAll ||= stop === "local" || (!!failure && stopsEverything(failure));
  return "stop";
}

/**
 * Replays one session's queue under its lock (a held lock defers it); an emptied directory goes. An entry for
 * another destination holds back the session's later ones: its writes go in the order they were queued.
 */
async function replaySession(run: ReplayRun, dir: string): Promise<void> {
  const done = await withLock(joinPath(dir, QUEUE_LOCK), async () => {
    await removeAbandonedTemps(dir);
    const files = await queueFiles(dir);
    let i = 0;
    let step: Awaited<ReturnType<typeof replayFile>> = "next";
    while (i < files.length && !run.stopAll && (step = await replayFile(run, dir, files[i])) === "next") i++;
    run.report.deferred += files.length - i;
    if (typeof step === "object") run.report.elsewhere.push({ ...step, ...countOf(files.slice(i)) });
    return i === files.length;
  }, { waitMs: 0 });
  if (!done.acquired) run.report.deferred += (await queueFiles(dir)).length;
  else if (done.value) await Deno.remove(dir).catch(() => {});
}

/** Replays our queue: sessions oldest first, each in sequence order, bounded in entries and time. */
export async function replayQueue(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const zero = { replayed: 0, messages: 0, held: 0, rejected: 0, expired: 0, deferred: 0 };
  const report: ReplayReport = { ...zero, commitTasks: [], delivered: [], elsewhere: [] };
  const now = options.now ?? Date.now();
  const to = destinationOf(client.options);
  const run: ReplayRun = { client, to, pendingDir, options, now, sent: 0, stopAll: false, report };
  for (const dir of await queuedSessions(pendingDir, options, now)) await replaySession(run, dir);
  return report;
}

/** Queue entries per replay run unless `run` says otherwise. */
const REPLAY_LIMIT = 50;

/** The bounds of a replay from the config and `run`. */
export function replayOptions(
  config: { pendingTtlDays: number },
  run: { budget: Budget; limit?: number; sessionId?: string; waitUnsure?: boolean },
): ReplayOptions {
  return {
    waitUnsure: run.waitUnsure,
    limit: run.limit ?? REPLAY_LIMIT,
    ttlDays: config.pendingTtlDays,
    budget: run.budget,
    sessionId: run.sessionId,
  };
}
