/**
 * Replaying our offline queue (pending-files.ts): sessions oldest first, each in sequence order, bounded in
 * entries and time; then what other plugins left in the shared queue (pending-shared.ts). A session's file is
 * claimed by renaming it to `<seq>-<tag>.<pid>.claim`; a claim whose process is gone (or older than
 * `ABANDONED_AFTER_MS`, or dated in the future) is put back, and while another run holds a claim of a
 * session that session's later writes wait. Progress inside an entry is kept in its claim. A write OpenViking
 * refuses for good, or one queued past the age limit, moves to the rejected place (pending.ts `keepRejected`),
 * which `replay --rejected` replays the same way; no failure spends anything.
 */

import { removeAbandonedTemps, writeFileAtomic } from "./fs.ts";
import type { Budget, OpenVikingClient, OvFailure } from "./http.ts";
import { isProcessGone } from "./process.ts";
import { joinPath } from "./paths.ts";
import { CommitResultSchema, deliverMessages, sessionPath } from "./deliver.ts";
import {
  ABANDONED_AFTER_MS,
  claimName,
  entryFile,
  FUTURE_SLACK_MS,
  type QueueEntry,
  type QueueFile,
  queueFiles,
  readEntry,
  REJECTED_SUBDIR,
  sessionDirs,
} from "./pending-files.ts";
import { keepRejected, type KeptWrite } from "./pending.ts";
import { replayShared, type SharedReplayReport } from "./pending-shared.ts";

/** Puts claims back whose replay process is gone, that are older than `ABANDONED_AFTER_MS`, or future-dated. */
async function recoverClaims(dir: string, files: QueueFile[], now: number): Promise<QueueFile[]> {
  const out: QueueFile[] = [];
  for (const f of files) {
    if (f.claimedBy === undefined) {
      out.push(f);
      continue;
    }
    const path = joinPath(dir, f.name);
    const mtime = (await Deno.stat(path).catch(() => undefined))?.mtime?.getTime() ?? now;
    const abandoned = isProcessGone(f.claimedBy) || now - mtime > ABANDONED_AFTER_MS ||
      mtime - now > FUTURE_SLACK_MS;
    // Progress inside a claim shrinks its content, not its name: name it after what is left.
    const left = abandoned ? await readEntry(path) : undefined;
    const back = entryFile(f.seq, left ?? f.tag);
    if (abandoned && await Deno.rename(path, joinPath(dir, back.name)).then(() => true, () => false)) {
      out.push(back);
    } else out.push(f);
  }
  return out;
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
  /** Replay the rejected place (`replay --rejected`, no age limit) instead of the queue. */
  rejected?: boolean;
  now?: number;
}

/** What a replay run did. */
export interface ReplayReport {
  /** Entries delivered (all their messages sent or rejected, or the commit accepted). */
  replayed: number;
  /** Messages sent (of replayed or partly replayed entries). */
  messages: number;
  /** Messages (or commits) OpenViking rejected: kept in the rejected place. */
  rejected: number;
  /** Entries queued past the age limit (TTL): moved to the rejected place. */
  expired: number;
  /** Entries left for a later run (limit, budget, a failure, or a session busy elsewhere). */
  deferred: number;
  /** The commits replayed and the task OpenViking started for each. */
  commitTasks: { sessionId: string; taskId: string }[];
  /** Messages sent per session (for `status`: they count as delivered, no longer as queued). */
  delivered: { sessionId: string; messages: number }[];
  /** The failure that stopped the run (or a session), if any. */
  cause?: OvFailure;
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
  const messages = entry.messages;
  const d = await deliverMessages(client, entry.sessionId, messages.map((m) => m.payload), {
    budget,
    onRejected: (payload, r) =>
      keepRejected(pendingDir, entry.sessionId, { messages: [payload] }, r, entry.createdAt),
    onSettled: async (settled) => {
      // Progress is kept in the claim: a replay killed later never sends these again.
      if (settled < messages.length) {
        await writeFileAtomic(
          claimPath,
          `${JSON.stringify({ ...entry, messages: messages.slice(settled) })}\n`,
          {
            privateDir: false,
            durable: true,
          },
        );
      }
    },
  });
  report.messages += d.sent;
  report.rejected += d.rejections.length;
  const mine = report.delivered.find((x) => x.sessionId === entry.sessionId);
  if (mine) mine.messages += d.sent;
  else if (d.sent) report.delivered.push({ sessionId: entry.sessionId, messages: d.sent });
  return d.stop;
}

/** A session's queue as replay finds it: its files, and when its oldest write was queued. */
interface QueuedSession {
  dir: string;
  files: QueueFile[];
  first: number;
}

/** The sessions to replay (one, or every one), abandoned claims put back, oldest first; empty ones removed. */
async function queuedSessions(pendingDir: string, options: ReplayOptions, now: number) {
  const sessions: QueuedSession[] = [];
  const subdir = options.rejected ? REJECTED_SUBDIR : undefined;
  for (const dir of await sessionDirs(pendingDir, options.sessionId, subdir)) {
    await removeAbandonedTemps(dir); // what a write killed mid-way left (else the directory is never empty)
    const files = await recoverClaims(dir, await queueFiles(dir), now);
    if (!files.length) {
      await Deno.remove(dir).catch(() => {}); // an empty session directory is not kept
      continue;
    }
    const first = files[0].claimedBy === undefined
      ? (await readEntry(joinPath(dir, files[0].name)))?.createdAt ?? now
      : now;
    sessions.push({ dir, files, first });
  }
  return sessions.sort((a, b) => a.first - b.first);
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
 * Replays one file of a session's queue: "next" when the session may go on (sent, rejected, expired, or put
 * aside as unreadable), "stop" when its later writes must wait (claimed elsewhere, a failure, the run's bounds).
 */
async function replayFile(run: ReplayRun, dir: string, f: QueueFile): Promise<"next" | "stop"> {
  const { options, report } = run;
  // A claimed entry is being sent by another replay: this session's later writes wait for it.
  if (f.claimedBy !== undefined) return "stop";
  if (run.sent >= options.limit || options.budget.remaining() < 100) {
    run.stopAll = true;
    return "stop";
  }
  const path = joinPath(dir, f.name);
  const claim = joinPath(dir, claimName(f.seq, f.tag, Deno.pid));
  if (!(await Deno.rename(path, claim).then(() => true, () => false))) return "stop";
  const entry = await readEntry(claim);
  if (!entry) {
    // Not ours to understand (torn by hand, or a newer format): keep it aside rather than block the session.
    await Deno.rename(claim, `${path}.unreadable`).catch(() => {});
    return "next";
  }
  const expired = !options.rejected && run.now - entry.createdAt > options.ttlDays * 86_400_000;
  let stop: OvFailure | "local" | undefined;
  if (expired) {
    const why = { status: 0, message: `waited in the queue longer than ${options.ttlDays} days` };
    stop = await keepRejected(run.pendingDir, entry.sessionId, writeOf(entry), why, entry.createdAt)
      .then(() => undefined, () => "local" as const);
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
  // Back in its place, named after what is left of it (progress inside it is kept).
  const left = await readEntry(claim);
  await Deno.rename(claim, joinPath(dir, entryFile(f.seq, left ?? f.tag).name)).catch(() => {});
  if (stop !== "local") report.cause = stop;
  // "local": the rejected place could not keep a write (a full disk), so nothing more is settled now.
  if (stop === "local" || stopsEverything(stop)) run.stopAll = true;
  return "stop";
}

/** Replays our queue: sessions oldest first, each in sequence order, bounded in entries and time. */
export async function replayQueue(
  pendingDir: string,
  client: OpenVikingClient,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const report: ReplayReport = {
    replayed: 0,
    messages: 0,
    rejected: 0,
    expired: 0,
    deferred: 0,
    commitTasks: [],
    delivered: [],
  };
  const now = options.now ?? Date.now();
  const run: ReplayRun = { client, pendingDir, options, now, sent: 0, stopAll: false, report };
  for (const s of await queuedSessions(pendingDir, options, now)) {
    let i = 0;
    while (i < s.files.length && !run.stopAll && await replayFile(run, s.dir, s.files[i]) === "next") i++;
    report.deferred += s.files.length - i;
    if (i === s.files.length) await Deno.remove(s.dir).catch(() => {});
  }
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
  run: { budget: Budget; limit?: number; sessionId?: string },
): ReplayAllOptions {
  return {
    limit: run.limit ?? config.pendingReplayLimit,
    maxRetries: config.pendingMaxRetries,
    ttlDays: config.pendingTtlDays,
    budget: run.budget,
    ...(run.sessionId !== undefined ? { sessionId: run.sessionId } : {}),
  };
}
