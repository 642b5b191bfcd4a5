/**
 * The shape of `openviking-kimi status --json` (stable, documented in README "status"), and the pure fold of a
 * session's ledger into its numbers. Changing a field here is a breaking change of the JSON form.
 */

import * as z from "zod/mini";
import type { LedgerEntry } from "../memory/ledger.ts";

const Problem = z.object({
  kind: z.string(),
  message: z.string(),
  fix: z.string(),
});

/** Commits of a session the screen shows (the newest); the rest are counted. */
export const SHOWN_COMMITS = 3;

/** A commit and what OpenViking did with it. */
const CommitStatusSchema = z.object({
  at: z.number(),
  /**
   * What the capture did with it: committed (sent), queued, rejected, failed (could not even be queued); or
   * replayed (a replay delivered a commit the ledger has no capture of), server (a task only the server knows).
   */
  outcome: z.string(),
  taskId: z.optional(z.string()),
  /** A queued commit: whether the queue still holds it. */
  waiting: z.optional(z.boolean()),
  /** A queued commit: when the replay that delivered it ran (its `taskId` is the one that replay started). */
  replayedAt: z.optional(z.number()),
  /**
   * The task as the server reports it now; absent when it was not (or could not be) asked — a commit the
   * task list leaves out is asked by its id only among the newest `SHOWN_COMMITS`.
   */
  task: z.optional(z.object({
    /** The server's (pending, running, completed, failed…), or expired: the server no longer has it. */
    status: z.string(),
    error: z.optional(z.string()),
    /** URIs of memories the commit added or updated (from its memory diff). */
    memories: z.array(z.string()),
  })),
});
export type CommitStatus = z.infer<typeof CommitStatusSchema>;

/** One Kimi session as the ledger saw it. */
const SessionStatusSchema = z.object({
  kimiSessionId: z.string(),
  openVikingSessionId: z.string(),
  lastActivity: z.number(),
  prompts: z.object({
    seen: z.number(),
    /** Memories injected, summed over prompts. */
    injected: z.number(),
    /** Memories left out as already in this session. */
    suppressed: z.number(),
    /** The recall stage that answered last (context, recall, find, none, reused…). */
    lastPath: z.optional(z.string()),
  }),
  captures: z.object({
    runs: z.number(),
    turns: z.number(),
    sent: z.number(),
    queued: z.number(),
    rejected: z.number(),
  }),
  commits: z.array(CommitStatusSchema),
  /** What of this session still waits in the queue. */
  queue: z.object({ entries: z.number(), messages: z.number(), commits: z.number() }),
  /** What of this session OpenViking refused, kept for `replay --rejected`. */
  rejected: z.object({ entries: z.number(), messages: z.number(), commits: z.number() }),
  lastError: z.optional(z.object({ at: z.number(), ...Problem.shape })),
});
export type SessionStatus = z.infer<typeof SessionStatusSchema>;

/** The whole `status --json` object. */
export const StatusSchema = z.object({
  version: z.string(),
  connection: z.object({
    url: z.string(),
    reachable: z.boolean(),
    /** null when it could not be asked (the server is not reachable). */
    authenticated: z.nullable(z.boolean()),
    serverVersion: z.optional(z.string()),
    account: z.optional(z.string()),
    user: z.optional(z.string()),
    /** The actor peer for the directory status ran in ("" = none) and where it came from. */
    peer: z.object({ id: z.string(), source: z.string() }),
    problem: z.optional(Problem),
  }),
  sessions: z.array(SessionStatusSchema),
  queue: z.object({
    entries: z.number(),
    messages: z.number(),
    commits: z.number(),
    sessions: z.number(),
    oldest: z.optional(z.number()),
    /** Writes other OpenViking plugins left in the shared queue. */
    shared: z.number(),
    /** When the queue is tried next, in words. */
    nextReplay: z.string(),
  }),
  /** The writes OpenViking refused for good (or that waited past the queue's age limit), kept in `dir`. */
  rejected: z.object({
    entries: z.number(),
    messages: z.number(),
    commits: z.number(),
    sessions: z.number(),
    dir: z.string(),
    /** The newest refusal: when, the server's HTTP status (0: never reached it) and words. */
    last: z.optional(z.object({ at: z.number(), status: z.number(), message: z.string() })),
    /** What to do about them, in words. */
    fix: z.string(),
  }),
  /** What could not be asked of the server (it was down, or the key was refused). */
  notAsked: z.array(z.string()),
  /** Recall paused: the server let a prompt's recall go unanswered (runtime/breaker.ts); absent when not. */
  paused: z.optional(z.object({
    since: z.number(),
    reason: z.string(),
    /** Unanswered recalls in this outage. */
    failures: z.number(),
    /** From then on, the next prompt or session start probes the server. */
    nextProbeAt: z.number(),
    /** The server answered a probe or a capture since: the next prompt asks it again. */
    answeredAt: z.optional(z.number()),
  })),
});
export type Status = z.infer<typeof StatusSchema>;

/** A session's numbers from its ledger entries (pure; the queue and the tasks are filled in by the caller). */
export function foldSession(
  kimiSessionId: string,
  openVikingSessionId: string,
  entries: readonly LedgerEntry[],
  advise: (cause: { kind: string; status: number; message: string }) => { fix: string; summary: string },
): SessionStatus {
  const s: SessionStatus = {
    kimiSessionId,
    openVikingSessionId,
    lastActivity: 0,
    prompts: { seen: 0, injected: 0, suppressed: 0 },
    captures: { runs: 0, turns: 0, sent: 0, queued: 0, rejected: 0 },
    commits: [],
    queue: { entries: 0, messages: 0, commits: 0 },
    rejected: { entries: 0, messages: 0, commits: 0 },
  };
  for (const e of entries) {
    s.lastActivity = Math.max(s.lastActivity, e.at);
    if (e.kind === "prompt") {
      s.prompts.seen++;
      s.prompts.injected += e.injected.length;
      s.prompts.suppressed += e.suppressed.length;
      s.prompts.lastPath = e.path;
    } else if (e.kind === "capture") {
      s.captures.runs++;
      s.captures.turns += e.turns;
      s.captures.sent += e.sent;
      s.captures.queued += e.queued;
      s.captures.rejected += e.rejected;
      if (e.commit !== "none") s.commits.push({ at: e.at, outcome: e.commit, taskId: e.taskId });
    } else {
      for (const t of e.commitTasks) {
        if (t.sessionId !== openVikingSessionId) continue;
        // A session's queue goes out in order: the replay delivered its oldest queued commit.
        const queued = s.commits.find((c) => c.outcome === "queued" && !c.taskId);
        if (queued) Object.assign(queued, { taskId: t.taskId, replayedAt: e.at });
        else s.commits.push({ at: e.at, outcome: "replayed", taskId: t.taskId });
      }
      // Queued messages a replay sent are delivered now, no longer queued.
      const sent = e.delivered?.find((d) => d.sessionId === openVikingSessionId)?.messages ?? 0;
      s.captures.sent += sent;
      s.captures.queued = Math.max(0, s.captures.queued - sent);
    }
    const cause = e.kind === "prompt" ? e.failure : e.cause;
    if (cause) {
      const advice = advise(cause);
      s.lastError = { at: e.at, kind: cause.kind, message: advice.summary, fix: advice.fix };
    } else if (workedFor(e, openVikingSessionId)) delete s.lastError;
  }
  return s;
}

/**
 * Whether entry `e` reached the server for session `ovSession` and met no failure: a recall the server
 * answered, a capture, or a replay that delivered some of the session's queue — the last error is then over.
 */
function workedFor(e: LedgerEntry, ovSession: string): boolean {
  if (e.kind === "prompt") return e.path !== "skipped" && e.path !== "reused";
  if (e.kind === "capture") return true;
  return e.commitTasks.some((t) => t.sessionId === ovSession) ||
    (e.delivered ?? []).some((d) => d.sessionId === ovSession);
}

/**
 * Marks the queued commits of `s` the queue still holds (`queuedCommits` of them: the newest not delivered by a
 * recorded replay) as waiting, and the older ones as gone from it (no I/O; changes `s`).
 */
export function markWaiting(s: SessionStatus, queuedCommits: number): void {
  const undelivered = s.commits.filter((c) => c.outcome === "queued" && !c.taskId);
  undelivered.forEach((c, i) => c.waiting = i >= undelivered.length - queuedCommits);
  for (const c of s.commits) if (c.outcome === "queued" && c.taskId) c.waiting = false;
}

/**
 * Gives the queued commits that left the queue with no replay on record (an older version's, or one whose
 * ledger line was lost) the tasks the server started for this session afterwards that no entry names, oldest
 * first; returns the tasks left over (no I/O; changes `s`).
 */
export function matchUnrecorded<T extends { id: string; at: number }>(s: SessionStatus, tasks: T[]): T[] {
  const left = [...tasks].sort((a, b) => a.at - b.at);
  for (const c of s.commits) {
    if (c.outcome !== "queued" || c.taskId || c.waiting !== false) continue;
    const i = left.findIndex((t) => t.at >= c.at);
    if (i >= 0) c.taskId = left.splice(i, 1)[0].id;
  }
  return left;
}
