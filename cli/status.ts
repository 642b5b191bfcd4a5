/**
 * `openviking-kimi status`: what memory did, from the local ledger and state, and what OpenViking did with the
 * commits (its task API). With the server down it still tells everything local and says what it could not ask.
 * Bounded: a few seconds per request, the task list once per session (and by id the shown commits it left
 * out), memory diffs of the newest commits only. Its JSON form is `StatusSchema` (stable, documented in README
 * "status": changing a field is a breaking change); its text form is one screen of lines of at most 80 columns.
 */

import { printable, reportJson } from "../lib/neutralize.ts";
import * as z from "zod/mini";
import { adviceFor, adviceForCause } from "../openviking/advice.ts";
import { nextProbeAt, readBreaker } from "../openviking/breaker.ts";
import { type Config, loadConfig } from "../openviking/config.ts";
import {
  askDataAccess,
  clientOptions,
  createClient,
  type FailureKind,
  type OpenVikingClient,
} from "../openviking/client.ts";
import { type LedgerEntry, ledgerFile, ledgerFiles, readLedger, REPLAY_FILE } from "../memory/ledger.ts";
import {
  countShared,
  hasUnsent,
  type QueueSummary,
  queueSummary,
  REJECTED_SUBDIR,
  type RejectedSummary,
  rejectedSummary,
  setAsideFiles,
  setAsideWords,
} from "../openviking/queue.ts";
import {
  type Env,
  hookStateDir,
  joinPath,
  ledgerDir,
  orNoHome,
  pendingDir,
  processEnv,
  safeId,
  sharedStateDir,
} from "../lib/paths.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { asRecord, isRecord, type JsonRecord } from "../lib/parsed.ts";
import { scrub } from "../lib/scrub.ts";
import { statePaths } from "../memory/state.ts";
import { VERSION } from "../lib/version.ts";
import { commandName, workspaceDir } from "../lib/self.ts";
import { SESSION_PREFIX } from "../memory/context.ts";
import { type Alarm, alarmWords, askAlarm, memoriesOf } from "../memory/extraction.ts";

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
    /** The session's model tokens once this commit's extraction ended, as the server counts them (a total). */
    tokens: z.optional(z.number()),
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
    /** Queue files replay could not read and set aside: never sent, the user's to look at. */
    setAside: z.array(z.string()),
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
  /** Our newest commits made no memory, again and again (memory/extraction.ts); absent when they did. */
  extraction: z.optional(z.object({ commits: z.number(), failed: z.number(), ...Problem.shape })),
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

/** Widest line the text form prints. */
export const STATUS_COLUMNS = 80;

/**
 * A long line wrapped at spaces into lines of at most `width`; wrapped lines get `indent`. A word is never
 * broken or cut — a URI longer than a line goes whole onto a line of its own — and the line's indent and
 * list marker (`+ `, `- `) stay with its first word.
 */
export function wrap(line: string, indent: string, width = STATUS_COLUMNS): string[] {
  const cols = (t: string) => [...t].length;
  if (cols(line) <= width) return [line];
  const lead = /^ *(?:[+-] )?/.exec(line)![0];
  const [first, ...words] = line.slice(lead.length).split(/(?<= )(?=[^ ])/); // each word with its spaces
  const out: string[] = [];
  let current = `${lead}${first}`;
  for (const word of words) {
    if (cols(current) + cols(word.trimEnd()) <= width) current += word;
    else {
      out.push(current.trimEnd());
      current = `${indent}${word}`;
    }
  }
  out.push(current.trimEnd());
  return out;
}

/** `n` with its noun in the singular or the plural. */
function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A time as a short age ("4 min ago"). */
export function ago(at: number, now: number): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** What became of a queued commit: still waiting, delivered by a replay (when), or gone from the queue. */
function queuedFate(c: CommitStatus, now: number): string {
  if (c.waiting) return "queued, waits in the queue";
  if (c.replayedAt !== undefined) return `queued, delivered by a replay ${ago(c.replayedAt, now)}`;
  return c.taskId ? "queued, since delivered" : "queued, no longer in the queue";
}

function commitLine(c: CommitStatus, now: number): string {
  const task = c.task?.status === "expired"
    ? "expired (the server keeps finished tasks 24 h, failed ones 7 days)"
    : c.task
    ? `${c.task.status}${c.task.error ? `: ${c.task.error}` : ""}${
      c.task.memories.length
        ? ` → ${c.task.memories.length} memor${c.task.memories.length === 1 ? "y" : "ies"}`
        : ""
    }`
    : c.taskId
    ? "task not asked"
    : undefined;
  const outcome = c.outcome === "queued"
    ? queuedFate(c, now)
    : c.outcome === "rejected"
    ? "refused by OpenViking"
    : c.outcome;
  return `    commit ${ago(c.at, now)}: ${outcome}${c.taskId ? ` (task ${c.taskId.slice(0, 8)})` : ""}${
    task ? `, ${task}` : c.outcome === "queued" || c.outcome === "rejected" ? "" : `, ${c.outcome}`
  }`;
}

/**
 * What a session's commits cost (pure): how many, the messages each took on average, and the model tokens
 * the server counted for the session's extractions (the newest total it reported), when it did.
 */
export function commitCost(s: SessionStatus): string | undefined {
  const made = s.commits.filter((c) => c.outcome !== "failed" && c.outcome !== "rejected").length;
  if (!made) return undefined;
  const each = Math.round((s.captures.sent + s.captures.queued) / made);
  const tokens = Math.max(-1, ...s.commits.map((c) => c.task?.tokens ?? -1));
  return `    cost: ${plural(made, "commit", "commits")}, ${plural(each, "message", "messages")} each, ` +
    (tokens >= 0 ? `${tokens} model tokens (the server's count)` : "model tokens not reported by the server");
}

function sessionLines(s: SessionStatus, now: number): string[] {
  const lines = [
    `  ${s.kimiSessionId} — ${s.lastActivity ? ago(s.lastActivity, now) : "no hook run in the ledger"}`,
    `    prompts ${s.prompts.seen}: ${plural(s.prompts.injected, "memory", "memories")} injected, ` +
    `${s.prompts.suppressed} left out as repeats` +
    (s.prompts.lastPath ? ` (last via ${s.prompts.lastPath})` : ""),
    `    captured ${s.captures.turns} turn(s): ${s.captures.sent} message(s) delivered, ${s.captures.queued} queued` +
    (s.captures.rejected ? `, ${s.captures.rejected} refused` : ""),
  ];
  const cost = commitCost(s);
  if (cost) lines.push(cost);
  for (const c of s.commits.slice(-SHOWN_COMMITS)) {
    lines.push(commitLine(c, now));
    for (const uri of c.task?.memories.slice(0, 3) ?? []) lines.push(`      + ${uri}`);
  }
  if (s.commits.length > SHOWN_COMMITS) {
    lines.push(`    … ${s.commits.length - SHOWN_COMMITS} earlier commit(s)`);
  }
  if (s.queue.entries) {
    lines.push(`    waiting: ${s.queue.messages} message(s), ${s.queue.commits} commit(s) in the queue`);
  }
  if (s.rejected.entries) {
    lines.push(`    refused and kept: ${s.rejected.messages} message(s), ${s.rejected.commits} commit(s)`);
  }
  if (s.lastError) {
    lines.push(
      `    last error ${ago(s.lastError.at, now)}: ${s.lastError.message}`,
      `      fix: ${s.lastError.fix}`,
    );
  }
  return lines;
}

/** What OpenViking refused, kept aside: how much, where, the newest refusal's words, and the fix. */
function rejectedLines(r: Status["rejected"], now: number): string[] {
  if (!r.entries) return [];
  const lines = [
    "",
    `Rejected ${r.messages} message(s), ${r.commits} commit(s) of ${r.sessions} session(s), kept in ${r.dir}`,
  ];
  if (r.last) {
    const status = r.last.status ? `HTTP ${r.last.status}` : "never sent";
    lines.push(`        last ${ago(r.last.at, now)} (${status}): ${r.last.message}`);
  }
  lines.push(`        fix: ${r.fix}`);
  return lines;
}

/** The status screen. */
export function renderStatus(st: Status, now: number): string {
  const c = st.connection;
  const who = [c.account && `account ${c.account}`, c.user && `user ${c.user}`].filter(Boolean).join(", ");
  const lines = [
    `openviking-kimi ${st.version} — memory status`,
    "",
    `Server  ${c.url}  ${
      c.reachable ? `reachable${c.serverVersion ? ` (OpenViking ${c.serverVersion})` : ""}` : "NOT reachable"
    }`,
    `        ${
      c.authenticated === null ? "key not checked" : c.authenticated ? "key accepted" : "key REFUSED"
    }${who ? `; ${who}` : ""}; peer ${c.peer.id ? `${c.peer.id} (${c.peer.source})` : "none"}`,
  ];
  if (c.problem) lines.push(`        ${c.problem.message}`, `        fix: ${c.problem.fix}`);
  const p = st.paused;
  if (p) {
    const next = p.answeredAt
      ? `the server answered ${ago(p.answeredAt, now)}: the next prompt asks it again`
      : `the first prompt or session start ${
        p.nextProbeAt > now ? `in ${Math.ceil((p.nextProbeAt - now) / 1000)} s or later` : "from now on"
      } probes it (GET /health); recall resumes once it answers`;
    lines.push(
      `Memory  ${p.answeredAt ? "paused" : "PAUSED: prompts do not ask the server"} since ${
        ago(p.since, now)
      }`,
      `        ${p.reason}`,
      `        ${next}`,
    );
  }
  const x = st.extraction;
  if (x) lines.push(`Memory  NOT MADE: ${x.message}`, `        fix: ${x.fix}`);
  lines.push("", st.sessions.length ? "Sessions (newest first)" : "Sessions: none recorded yet");
  for (const s of st.sessions) lines.push(...sessionLines(s, now));
  const q = st.queue;
  lines.push(
    "",
    q.entries || q.shared
      ? `Queue   ${q.messages} message(s), ${q.commits} commit(s) of ${q.sessions} session(s)` +
        (q.oldest ? `, oldest ${ago(q.oldest, now)}` : "") +
        (q.shared ? `; ${q.shared} of other plugins` : "")
      : "Queue   empty",
  );
  if (q.entries || q.shared) lines.push(`        next replay: ${q.nextReplay}`);
  const aside = setAsideWords(q.setAside);
  if (aside) lines.push(`        ${aside.summary}`, `        fix: ${aside.fix}`);
  lines.push(...rejectedLines(st.rejected, now));
  const why = !c.reachable ? "server unavailable" : c.authenticated === false ? "key refused" : "no answer";
  if (st.notAsked.length) lines.push("", `Not asked (${why}): ${st.notAsked.join(", ")}`);
  return lines.flatMap((l) => wrap(l, " ".repeat(Math.min(12, l.length - l.trimStart().length + 2))))
    .join("\n");
}

/** Sessions shown without `--all` or `--session`. */
const LATEST_SESSIONS = 5;
/** Memory diffs read per status run (the newest completed commits). */
const MAX_DIFFS = 6;
/** Tasks asked per session's list: the most the server gives (its default is 50). */
const MAX_LISTED_TASKS = 200;
/** Time each server request may take. */
const STATUS_TIMEOUT_MS = 3000;

/** Which sessions to show. */
export type SessionChoice = { kind: "latest" } | { kind: "all" } | { kind: "one"; id: string };

const advise = (config: Config) => (cause: { kind: string; status: number; message: string }) =>
  adviceForCause({ ...cause, kind: cause.kind as FailureKind | "local" }, config.baseUrl);

const optionalText = z.catch(z.optional(z.string()), undefined);

/** `/health`: the server's version. */
const HealthReply = z.looseObject({ version: optionalText });

/** `/system/status`: the user the key belongs to. */
const StatusReply = z.looseObject({ user: optionalText });

/**
 * The connection part: `/health` (no key) says whether OpenViking answers; `/api/v1/system/status` whether
 * the key is accepted and whose it is; a data route whether it may read memory (a root key may not).
 */
async function connection(
  client: OpenVikingClient,
  config: Config,
  cwd: string,
): Promise<Status["connection"]> {
  const peer = await resolvePeer(cwd, config);
  const out: Status["connection"] = {
    url: config.baseUrl,
    reachable: false,
    authenticated: null,
    account: config.account || undefined,
    user: config.user || undefined,
    peer: { id: peer.peerId, source: peer.source },
  };
  const health = await client.request("GET", "/health", HealthReply);
  if (!health.ok) {
    const a = adviceFor(health, config.baseUrl);
    out.problem = { kind: health.kind, message: a.summary, fix: a.fix };
    return out;
  }
  out.reachable = true;
  if (health.result.version !== undefined) out.serverVersion = health.result.version;
  const me = await client.request("GET", "/api/v1/system/status", StatusReply);
  const data = me.ok && config.apiKey ? await askDataAccess(client) : me;
  if (data.ok || (data.kind !== "auth" && me.ok)) {
    out.authenticated = true;
    if (me.ok && me.result.user) out.user = me.result.user;
  } else {
    out.authenticated = data.kind === "auth" ? false : null;
    const a = adviceFor(data, config.baseUrl);
    out.problem = { kind: data.kind, message: a.summary, fix: a.fix };
  }
  return out;
}

/**
 * The tasks of the newest commits of `s` (those the screen shows) that the list left out, each asked by its id:
 * found, or expired (404: the server no longer keeps it). Returns how many could not be asked.
 */
async function lookUpMissing(
  client: OpenVikingClient,
  s: SessionStatus,
  tasks: Map<string, JsonRecord>,
  expired: Set<string>,
): Promise<number> {
  let failed = 0;
  for (const c of s.commits.slice(-SHOWN_COMMITS)) {
    if (!c.taskId || tasks.has(c.taskId)) continue;
    const one = await client.request("GET", `/api/v1/tasks/${encodeURIComponent(c.taskId)}`, z.unknown());
    if (one.ok && isRecord(one.result)) tasks.set(c.taskId, one.result);
    else if (!one.ok && one.kind === "rejected" && one.status === 404) expired.add(c.taskId);
    else failed++;
  }
  return failed;
}

/**
 * Fills in what OpenViking did with each commit of `s`: its task list (newest first, as many as the server
 * gives), the newest commits it left out by their ids, and the memory diffs within `diffs`. Returns what it
 * could not ask.
 */
async function askTasks(
  client: OpenVikingClient,
  s: SessionStatus,
  diffs: { left: number },
): Promise<string[]> {
  const list = await client.request("GET", "/api/v1/tasks", z.array(z.unknown()), {
    query: { resource_id: s.openVikingSessionId, limit: MAX_LISTED_TASKS },
  });
  if (!list.ok) return [`the commit tasks of ${s.kimiSessionId}`];
  const tasks = new Map(list.result.filter(isRecord).map((t) => [String(t.task_id), t]));
  const known = new Set(s.commits.map((c) => c.taskId).filter(Boolean));
  const unknown = [...tasks].filter(([id]) => !known.has(id))
    .map(([id, t]) => ({ id, at: Number(t.created_at ?? 0) * 1000 }));
  // Tasks no entry names: a queued commit replayed with no record of it takes its own; the rest (another
  // client's commits of this session) still count for it.
  for (const t of matchUnrecorded(s, unknown)) s.commits.push({ at: t.at, outcome: "server", taskId: t.id });
  s.commits.sort((a, b) => a.at - b.at);
  const expired = new Set<string>();
  const failed = await lookUpMissing(client, s, tasks, expired);
  for (const c of [...s.commits].reverse()) {
    if (c.taskId && expired.has(c.taskId)) c.task = { status: "expired", memories: [] };
    const t = c.taskId ? tasks.get(c.taskId) : undefined;
    if (!t) continue;
    const status = String(t.status ?? "unknown");
    const memories = status === "completed" && diffs.left > 0
      ? (diffs.left--, await memoriesOf(client, t) ?? [])
      : [];
    const tokens = asRecord(asRecord(asRecord(t.result).token_usage).llm).total_tokens;
    c.task = {
      status,
      memories,
      ...(typeof t.error === "string" && t.error ? { error: t.error } : {}),
      ...(typeof tokens === "number" && Number.isFinite(tokens) ? { tokens } : {}),
    };
  }
  return failed ? [`the tasks of ${failed} commit(s) of ${s.kimiSessionId}`] : [];
}

/** The chosen sessions as the ledger, the queue and the rejected place know them (no network). */
async function localSessions(
  env: Env,
  config: Config,
  choice: SessionChoice,
  places: { queue: QueueSummary; rejected: QueueSummary },
): Promise<SessionStatus[]> {
  const dir = ledgerDir(env);
  const replays = await readLedger(dir, REPLAY_FILE).catch(() => []);
  const files = (await ledgerFiles(dir).catch(() => [])).filter((f) => f.name !== REPLAY_FILE);
  const chosen = choice.kind === "one"
    ? [await safeId(choice.id)]
    : files.map((f) => f.name).slice(0, choice.kind === "all" ? undefined : LATEST_SESSIONS);
  const sessions: SessionStatus[] = [];
  for (const name of chosen) {
    const entries = [...await readLedger(dir, name).catch(() => []), ...replays].sort((a, b) => a.at - b.at);
    const ov = `${SESSION_PREFIX}${name}`;
    const s = foldSession(name, ov, entries, advise(config));
    const q = places.queue.sessions.find((x) => x.sessionId === ov);
    if (q) s.queue = { entries: q.entries, messages: q.messages, commits: q.commits };
    const r = places.rejected.sessions.find((x) => x.sessionId === ov);
    if (r) s.rejected = { entries: r.entries, messages: r.messages, commits: r.commits };
    markWaiting(s, s.queue.commits);
    sessions.push(s);
  }
  return sessions;
}

/** The alarm as status shows it: how many commits made nothing, how many failed, the words and the fix. */
function extractionOf(a: Alarm): Status["extraction"] {
  const { kind, summary, fix } = alarmWords(a);
  return { commits: a.commits, failed: a.failed, kind, message: summary, fix };
}

/** Everything `status` shows. */
async function collectStatus(
  env: Env,
  options: { cwd: string; sessions: SessionChoice; fetch?: typeof fetch; now?: number },
): Promise<Status> {
  const { config } = await loadConfig(env, options.cwd);
  const client = createClient(
    clientOptions(config, "", { timeoutMs: STATUS_TIMEOUT_MS, fetch: options.fetch }),
  );
  const conn = await connection(client, config, options.cwd);
  const queue = await queueSummary(pendingDir(env)).catch(() => ({ sessions: [], entries: 0 }));
  const rejected: RejectedSummary = await rejectedSummary(pendingDir(env))
    .catch(() => ({ sessions: [], entries: 0 }));
  const sessions = await localSessions(env, config, options.sessions, { queue, rejected });
  const notAsked: string[] = [];
  const canAsk = conn.reachable && conn.authenticated !== false;
  const diffs = { left: MAX_DIFFS };
  for (const s of sessions) {
    if (!s.commits.length) continue;
    if (canAsk) notAsked.push(...await askTasks(client, s, diffs));
    else notAsked.push(`the commit tasks of ${s.kimiSessionId}`);
  }
  const alarm = canAsk ? await askAlarm(client) : null;
  if (alarm === null) notAsked.push("what the newest commits made");
  if (!conn.reachable) notAsked.unshift("whether the key is accepted");
  const shared = await countShared(pendingDir(env)).catch(() => 0);
  const b = await readBreaker(orNoHome(() => sharedStateDir(env)) ?? "", config.baseUrl);
  const status: Status = {
    version: VERSION,
    connection: conn,
    sessions,
    queue: {
      entries: queue.entries,
      messages: queue.sessions.reduce((n, s) => n + s.messages, 0),
      commits: queue.sessions.reduce((n, s) => n + s.commits, 0),
      sessions: queue.sessions.length,
      oldest: queue.sessions[0]?.oldest,
      shared,
      nextReplay: `at the next Kimi session start, or the session's next turn; now: \`${
        commandName(env)
      } replay\``,
      setAside: await setAsideFiles(pendingDir(env)).catch(() => []),
    },
    rejected: {
      entries: rejected.entries,
      messages: rejected.sessions.reduce((n, s) => n + s.messages, 0),
      commits: rejected.sessions.reduce((n, s) => n + s.commits, 0),
      sessions: rejected.sessions.length,
      dir: joinPath(pendingDir(env), REJECTED_SUBDIR),
      ...(rejected.last ? { last: rejected.last } : {}),
      fix: `fix what the server says (its log, its settings), then \`${commandName(env)} replay --rejected\``,
    },
    notAsked,
    ...(alarm ? { extraction: extractionOf(alarm) } : {}),
    ...(b
      ? {
        paused: {
          since: b.since,
          reason: b.reason,
          failures: b.failures,
          nextProbeAt: nextProbeAt(b),
          ...(b.answeredAt !== undefined && b.answeredAt >= b.at ? { answeredAt: b.answeredAt } : {}),
        },
      }
      : {}),
  };
  return scrub(status, [config.apiKey]) as Status;
}

/** Whether anything local is known of Kimi session `id`: its ledger, its state, or writes in the queue. */
async function knownSession(env: Env, id: string): Promise<boolean> {
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  const ledger = orNoHome(() => ledgerDir(env));
  if (ledger && await exists(ledgerFile(ledger, await safeId(id)))) return true;
  const state = orNoHome(() => hookStateDir(env));
  for (const name of [id, `${id}.prompt`]) {
    if (state && await exists((await statePaths(state, name)).file)) return true;
  }
  const queue = orNoHome(() => pendingDir(env));
  return queue !== undefined &&
    await hasUnsent(queue, `${SESSION_PREFIX}${await safeId(id)}`).catch(() => false);
}

/** Options of `openviking-kimi status`. */
export interface StatusOptions {
  session: string | undefined;
  all: boolean;
  cwd: string | undefined;
  json: boolean;
}

/**
 * `openviking-kimi status [--session ID | --all] [--cwd DIR] [--json]`: exit 0; 1 for a session nothing is
 * known of; 2 for both --session and --all, or a --cwd that is not a directory.
 */
export async function statusCommand(options: StatusOptions): Promise<number> {
  if (options.session !== undefined && options.all) {
    console.error("openviking-kimi status: --session and --all exclude each other; give one of them.");
    return 2;
  }
  if (options.session !== undefined && !(await knownSession(processEnv(), options.session))) {
    console.error(
      `openviking-kimi status: no ledger or state exists for session ${JSON.stringify(options.session)}. ` +
        `\`${commandName()} status --all\` lists the sessions the ledger knows.`,
    );
    return 1;
  }
  const sessions: SessionChoice = options.session !== undefined
    ? { kind: "one", id: options.session }
    : options.all
    ? { kind: "all" }
    : { kind: "latest" };
  const cwd = await workspaceDir(options.cwd);
  if (!cwd) {
    console.error(`openviking-kimi status: --cwd ${JSON.stringify(options.cwd)} is not a directory.`);
    return 2;
  }
  const status = await collectStatus(processEnv(), { cwd, sessions });
  // What the server said is printed as a person may safely read it: no escape sequence reaches the terminal.
  if (options.json) console.log(reportJson(status, 2));
  else console.log(printable(renderStatus(status, Date.now())));
  return 0;
}
