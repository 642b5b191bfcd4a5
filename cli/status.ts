/** `openviking-kimi status`: the ledger, queue and breaker, and what OpenViking made of the commits; its JSON shape. */

import * as z from "zod/mini";
import { printable, reportJson } from "../lib/neutralize.ts";
import { adviceFor, type CauseSchema } from "../openviking/advice.ts";
import { isOpen, nextProbeAt, readBreaker } from "../openviking/breaker.ts";
import { type Config, loadConfig } from "../openviking/config.ts";
import { askDataAccess, createClient, type OpenVikingClient } from "../openviking/client.ts";
import {
  hasLedger,
  type LedgerEntry,
  ledgerFiles,
  type Origin,
  originOf,
  OriginSchema,
  readLedger,
  REPLAY_FILE,
} from "../memory/ledger.ts";
import * as queues from "../openviking/queue.ts";
import * as paths from "../lib/paths.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { asRecord, isRecord, tolerant } from "../lib/parsed.ts";
import { scrub } from "../lib/redact.ts";
import { isFor, readState, statePaths, uncommitted } from "../memory/state.ts";
import { dueAt } from "../memory/idle-commit.ts";
import { VERSION } from "../lib/version.ts";
import { ago, plural, wrapLines } from "../lib/columns.ts";
import { commandName, invocationCwd } from "../lib/self.ts";
import { SESSION_PREFIX, sessionDestination } from "../memory/context.ts";
import { alarmWords, askAlarm, memoriesOf } from "../memory/extraction.ts";

const [num, str] = [z.number(), z.string()];
/** A problem as `status` says it; a place's counts. (`status --json`, README "status".) */
export const ProblemSchema = z.object({ kind: str, message: str, fix: str });
export const CountsSchema = z.object({ entries: num, messages: num, commits: num });
/** Writes for another server or identity (`where`: its environment). */
const Elsewhere = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.optional(z.array(z.object({ ...shape, messages: num, where: str })));

/** A commit and what OpenViking did with it (README "status" says each field). */
const CommitStatusSchema = z.object({
  ...{ at: num, outcome: str, taskId: z.optional(str), waiting: z.optional(z.boolean()) },
  ...{ replayedAt: z.optional(num), origin: z.optional(OriginSchema) },
  task: z.optional(
    z.object({ status: str, error: z.optional(str), memories: z.array(str), tokens: z.optional(num) }),
  ),
});
export type CommitStatus = z.infer<typeof CommitStatusSchema>;

/** One Kimi session as the ledger saw it; `elsewhere`: of its queued or uncommitted writes, in order. */
export const SessionStatusSchema = z.object({
  ...{ kimiSessionId: str, openVikingSessionId: str, lastActivity: num },
  prompts: z.object({ seen: num, injected: num, suppressed: num, lastPath: z.optional(str) }),
  captures: z.object({ runs: num, turns: num, sent: num, queued: num, rejected: num }),
  commits: z.array(CommitStatusSchema),
  queue: z.object({ ...CountsSchema.shape, elsewhere: Elsewhere({ commits: num }) }),
  rejected: CountsSchema,
  uncommitted: z.optional(z.object({ messages: num, dueAt: num, elsewhere: Elsewhere({}) })),
  lastError: z.optional(z.object({ at: num, ...ProblemSchema.shape })),
});
export type SessionStatus = z.infer<typeof SessionStatusSchema>;

/** A session's numbers from its ledger entries, oldest first (pure; the queue and the tasks come later). */
export function foldSession(name: string, entries: readonly LedgerEntry[], here: Origin): SessionStatus {
  /** A run's origin when it is not `here` (its commits' tasks are another server's or identity's). */
  const elsewhere = (o: Origin | undefined) =>
    o && (o.url !== here.url || o.who !== here.who) ? o : undefined;
  const [ov, none] = [`${SESSION_PREFIX}${name}`, { entries: 0, messages: 0, commits: 0 }];
  const s: SessionStatus = {
    ...{
      kimiSessionId: name,
      openVikingSessionId: ov,
      lastActivity: 0,
      commits: [],
      queue: none,
      rejected: none,
    },
    prompts: { seen: 0, injected: 0, suppressed: 0 },
    captures: { runs: 0, turns: 0, sent: 0, queued: 0, rejected: 0 },
  };
  for (const e of entries) {
    const ours = e.kind !== "replay" || e.commitTasks.some((t) => t.sessionId === ov) ||
      e.delivered?.some((d) => d.sessionId === ov);
    // A replay is this session's only for what it delivered of it; its failure is placed later.
    if (!ours) continue;
    s.lastActivity = Math.max(s.lastActivity, e.at);
    let worked: boolean;
    if (e.kind === "prompt") {
      s.prompts.seen++;
      s.prompts.injected += e.injected.length;
      s.prompts.suppressed += e.suppressed.length;
      // A recall that failed answers "none", as one that asked nothing: its failure tells them apart.
      s.prompts.lastPath = e.path === "none" && e.failure ? "failed" : e.path;
      worked = e.path !== "skipped" && e.path !== "reused";
    } else if (e.kind === "capture") {
      if (e.event !== "idle") s.captures.runs++; // the idle watch's commit is no capture run
      for (const k of ["turns", "sent", "queued", "rejected"] as const) s.captures[k] += e[k];
      if (e.commit !== "none") {
        s.commits.push({ at: e.at, outcome: e.commit, taskId: e.taskId, origin: elsewhere(e.origin) });
      }
      worked = true;
    } else {
      const tasks = e.commitTasks.filter((t) => t.sessionId === ov);
      for (const t of tasks) {
        // A session's queue goes out in order: the replay delivered its oldest queued commit.
        const queued = s.commits.find((c) => c.outcome === "queued" && !c.taskId);
        const made = { taskId: t.taskId, origin: elsewhere(e.origin) };
        if (queued) Object.assign(queued, { ...made, replayedAt: e.at });
        else s.commits.push({ at: e.at, outcome: "replayed", ...made });
      }
      const sent = e.delivered?.find((d) => d.sessionId === ov)?.messages;
      s.captures.sent += sent ?? 0;
      s.captures.queued = Math.max(0, s.captures.queued - (sent ?? 0));
      worked = tasks.length > 0 || sent !== undefined;
    }
    const cause = e.kind === "prompt" ? e.failure : e.cause;
    if (cause) s.lastError = errorOf(e.at, cause, (e.kind !== "prompt" && e.origin?.url) || here.url);
    else if (worked) delete s.lastError;
  }
  return s;
}

/** A recorded failure as a session's last error (a cause recorded without its reason says so). */
export function errorOf(
  at: number,
  cause: z.infer<typeof CauseSchema>,
  baseUrl: string,
): SessionStatus["lastError"] {
  const a = adviceFor({ ...cause, message: cause.message || "no reason was recorded" }, baseUrl);
  return { at, kind: cause.kind, message: a.summary, fix: a.fix };
}

/** Sessions `status` shows without `--session`. */
const NEWEST_SESSIONS = 5;
/** Commits of a session the screen shows (the newest); the rest are counted. */
const SHOWN_COMMITS = 3;

const Place = { ...CountsSchema.shape, sessions: num };
const Words = z.object({ summary: str, fix: str });
/** The whole `status --json` object. */
export const StatusSchema = z.object({
  version: str,
  connection: z.object({
    ...{
      url: str,
      reachable: z.boolean(),
      authenticated: z.nullable(z.boolean()),
      serverVersion: z.optional(str),
    },
    ...{ account: z.optional(str), user: z.optional(str), peer: z.object({ id: str, source: str }) },
    problem: z.optional(ProblemSchema),
  }),
  sessions: z.array(SessionStatusSchema),
  queue: z.object({
    ...{ ...Place, oldest: z.optional(num), nextReplay: str, setAside: z.array(str) },
    elsewhere: z.optional(Words),
  }),
  rejected: z.object({
    ...{ ...Place, dir: str, fix: str },
    last: z.optional(z.object({ at: num, status: num, message: str })),
  }),
  notAsked: z.array(str),
  extraction: z.optional(z.object({ commits: num, failed: num, ...ProblemSchema.shape })),
  paused: z.optional(
    z.object({ since: num, reason: str, failures: num, nextProbeAt: num, answeredAt: z.optional(num) }),
  ),
});
export type Status = z.infer<typeof StatusSchema>;

/** A queue summary's entries, messages and commits, and of how many sessions. */
function totals({ entries, sessions }: queues.QueueSummary) {
  const sum = (f: "messages" | "commits") => sessions.reduce((n, s) => n + s[f], 0);
  return { entries, messages: sum("messages"), commits: sum("commits"), sessions: sessions.length };
}

/** What status and doctor read locally: the queue, the refused writes (or errors), set-aside files, the breaker. */
export async function readPlaces(env: paths.Env, config: Config) {
  const pending = paths.pendingDir(env);
  const read = (q: Promise<queues.QueueSummary>) => q.catch((e) => e as Error);
  const b = await readBreaker(paths.orNoHome(() => paths.sharedStateDir(env)) ?? "", config.baseUrl)
    .catch(() => undefined);
  const paused: Status["paused"] = b && {
    ...{ since: b.since, reason: b.reason, failures: b.failures, nextProbeAt: nextProbeAt(b) },
    ...(isOpen(b) ? {} : { answeredAt: b.answeredAt }),
  };
  return {
    pending,
    rejectedDir: paths.joinPath(pending, queues.REJECTED_SUBDIR),
    queue: await read(queues.queueSummary(pending)),
    rejected: await read(queues.queueSummary(pending, queues.REJECTED_SUBDIR)),
    setAside: await queues.setAsideFiles(pending).catch(() => []),
    paused,
  };
}

export type Places = Awaited<ReturnType<typeof readPlaces>>;

/** Marks the queued commits the queue still holds waiting; gives those that left it `tasks` no entry names; the rest. */
function placeQueued(s: SessionStatus, tasks: { id: string; at: number }[]) {
  const undelivered = s.commits.filter((c) => c.outcome === "queued" && !c.taskId);
  undelivered.forEach((c, i) => c.waiting = i >= undelivered.length - s.queue.commits);
  for (const c of s.commits) if (c.outcome === "queued" && c.taskId) c.waiting = false;
  const left = [...tasks].sort((a, b) => a.at - b.at);
  for (const c of undelivered.filter((c) => !c.waiting)) {
    const i = left.findIndex((t) => t.at >= c.at);
    if (i >= 0) c.taskId = left.splice(i, 1)[0].id;
  }
  return left;
}

/** A commit's task status when the session's task list does not name it (expired, or another server's). */
const UNLISTED = "unlisted";

function commitLine(c: CommitStatus, now: number, url: string): string {
  const { origin: o, task: t } = c;
  const who = o &&
    (o.url !== url ? ", not on this server" : ` as another identity (${o.who || "the key's own"})`);
  const made = plural(t?.memories.length ?? 0, "memory", "memories");
  const task = o
    ? `made on ${o.url}${who}: not asked`
    : t?.status === UNLISTED
    ? "the server no longer lists it"
    : t
    ? `${t.status}${t.error ? `: ${t.error}` : ""}${t.memories.length ? ` → ${made}` : ""}`
    : c.taskId && "task not asked";
  const queued = c.waiting
    ? "waits in the queue"
    : c.replayedAt !== undefined
    ? `delivered by a replay ${ago(c.replayedAt, now)}`
    : c.taskId
    ? "since delivered"
    : "no longer in the queue";
  const outcome = c.outcome === "rejected"
    ? "refused by OpenViking"
    : c.outcome === "queued"
    ? `queued, ${queued}`
    : c.outcome;
  return `    commit ${ago(c.at, now)}: ${outcome}${c.taskId ? ` (task ${c.taskId.slice(0, 8)})` : ""}` +
    (task ? `, ${task}` : "");
}

/** What a session's commits cost: how many, messages each, and the server's newest token total, if any. */
export function commitCost(s: SessionStatus): string | undefined {
  const made = s.commits.filter((c) => c.outcome !== "failed" && c.outcome !== "rejected").length;
  if (!made) return undefined;
  const each = Math.round((s.captures.sent + s.captures.queued - (s.uncommitted?.messages ?? 0)) / made);
  const tokens = Math.max(-1, ...s.commits.map((c) => c.task?.tokens ?? -1));
  return `    cost: ${plural(made, "commit", "commits")}, ${plural(each, "message", "messages")} each, ` +
    (tokens >= 0
      ? `${tokens} model tokens (the server's count)`
      : s.commits.some((c) => c.task?.status === "pending" || c.task?.status === "running")
      ? "model tokens counted once its extraction ends"
      : s.commits.some((c) => c.task)
      ? "model tokens not reported by the server"
      : "model tokens unknown (the server was not asked)");
}

/** How a session's last prompt's recall went, in words, by its folded path (else "last via <path>"). */
const LAST_RECALL: Record<string, string> = {
  ...{ failed: "last recall failed", paused: "last recall paused", none: "last asked nothing" },
  ...{ reused: "last reused its recall", skipped: "last too short to ask" },
};

function sessionLines(s: SessionStatus, now: number, url: string): string[] {
  const { prompts: p, captures: c, queue: q, rejected: r, lastError: e, uncommitted: u } = s;
  const lines = [
    `  ${s.kimiSessionId} — ${s.lastActivity ? ago(s.lastActivity, now) : "no hook run in the ledger"}`,
    `    prompts ${p.seen}: ${plural(p.injected, "memory", "memories")} injected` +
    `${p.suppressed ? `, ${p.suppressed} left out as repeats` : ""}${
      p.lastPath ? ` (${LAST_RECALL[p.lastPath] ?? `last via ${p.lastPath}`})` : ""
    }`,
    `    ${capturedWords(c)}`,
    // Each of the cost's phrases kept whole by the wrap (no-break spaces until the screen is made).
    ...[commitCost(s)?.replace(/(?<=[,:] )[^,]+/g, (p) => p.replaceAll(" ", "\u00a0")) ?? []].flat(),
  ];
  const due = u &&
    (u.dueAt > now
      ? `due in ${ago(now, u.dueAt).slice(0, -4)} (idle since the last capture), or at the session's end`
      : `due ${ago(u.dueAt, now)}; the next Kimi session start commits them`);
  if (u) lines.push(`    ${u.messages} message(s) wait for a commit: ${due}`);
  for (const x of u?.elsewhere ?? []) {
    lines.push(
      `      ${x.messages} of them are for another server or identity (${x.where}): a session there commits them`,
    );
  }
  for (const commit of s.commits.slice(-SHOWN_COMMITS)) {
    const made = (commit.task?.memories ?? []).slice(0, 3).map((u) => `      + ${u}`);
    lines.push(commitLine(commit, now, url), ...made);
  }
  if (s.commits.length > SHOWN_COMMITS) {
    lines.push(`    … ${s.commits.length - SHOWN_COMMITS} earlier commit(s)`);
  }
  if (q.entries) lines.push(`    waiting: ${queues.countWords(q)} in the queue`);
  for (const x of q.elsewhere ?? []) {
    lines.push(
      `      ${queues.countWords(x)} of them for another server or identity (${x.where}), sent only there`,
    );
  }
  if (r.entries) lines.push(`    refused and kept: ${queues.countWords(r)}`);
  if (e) lines.push(`    last error ${ago(e.at, now)}: ${e.message}`, `      fix: ${e.fix}`);
  return lines;
}

/** A fact in words, as `status` prints it and doctor checks it: its line, the lines under it, what to do. */
export type Said = { summary: string; detail?: string[]; fix?: string };

/** A session's captures: turns, and their messages delivered, queued and refused. */
export const capturedWords = (c: SessionStatus["captures"]): string =>
  `captured ${c.turns} turn(s): ${c.sent} message(s) delivered, ${c.queued} queued` +
  (c.rejected ? `, ${c.rejected} refused` : "");

/** The recall breaker: paused since when and why, and what asks the server again. */
export function pausedWords(p: NonNullable<Status["paused"]>, now: number): Said {
  const since = ago(p.since, now);
  if (p.answeredAt) {
    const next = `the server answered ${ago(p.answeredAt, now)}: the next prompt asks it again`;
    return { summary: `paused since ${since}`, detail: [p.reason, next] };
  }
  const probe = p.nextProbeAt > now
    ? `in ${Math.ceil((p.nextProbeAt - now) / 1000)} s or later`
    : "from now on";
  return {
    summary: `PAUSED: prompts do not ask the server since ${since}`,
    detail: [p.reason],
    fix: `the first prompt or session start ${probe} probes it (a search); recall resumes once it answers`,
  };
}

/** The queue's writes, its oldest, and when they go (undefined: empty). */
export function queueWords(q: Status["queue"], now: number): Said | undefined {
  if (!q.entries) return undefined;
  const oldest = q.oldest ? `, oldest ${ago(q.oldest, now)}` : "";
  return { summary: `${queues.countWords(q)}${oldest}`, detail: [`next replay: ${q.nextReplay}`] };
}

/** The writes OpenViking refused: how many, where kept, the newest's reason, what to do. */
export function rejectedWords(r: Status["rejected"], now: number): Said {
  const l = r.last;
  const last = l && `last ${ago(l.at, now)} (${l.status ? `HTTP ${l.status}` : "never sent"}): ${l.message}`;
  return { summary: `${queues.countWords(r)}, kept in ${r.dir}`, detail: last ? [last] : [], fix: r.fix };
}

/** The status screen. */
export function renderStatus(st: Status, now: number): string {
  const { connection: c, paused: p, extraction: x, queue: q, rejected: r } = st;
  const who = [c.account && `account ${c.account}`, c.user && `user ${c.user}`].filter(Boolean).join(", ");
  const key = c.authenticated === null ? "key not checked" : c.authenticated ? "key accepted" : "key REFUSED";
  const version = c.serverVersion ? ` (OpenViking ${c.serverVersion})` : "";
  const lines = [
    `openviking-kimi ${st.version} — memory status`,
    "",
    `Server  ${c.url}  ${c.reachable ? `reachable${version}` : "NOT reachable"}`,
    `        ${key}${who ? `; ${who}` : ""}; peer ${c.peer.id ? `${c.peer.id} (${c.peer.source})` : "none"}`,
  ];
  const said = (label: string, w?: Said) =>
    w
      ? [
        label + w.summary,
        ...[...w.detail ?? [], ...w.fix ? [`fix: ${w.fix}`] : []].map((l) => `        ${l}`),
      ]
      : [];
  if (c.problem) lines.push(...said("        ", { summary: c.problem.message, fix: c.problem.fix }));
  if (p) lines.push(...said("Memory  ", pausedWords(p, now)));
  if (x) lines.push(...said("Memory  NOT MADE: ", { summary: x.message, fix: x.fix }));
  lines.push("", st.sessions.length ? "Sessions (newest first)" : "Sessions: none recorded yet");
  for (const s of st.sessions) lines.push(...sessionLines(s, now, c.url));
  lines.push("", ...said("Queue   ", queueWords(q, now) ?? { summary: "empty" }));
  lines.push(...said("        ", queues.setAsideWords(q.setAside)), ...said("        ", q.elsewhere));
  if (r.entries) lines.push("", ...said("Rejected ", rejectedWords(r, now)));
  const why = !c.reachable ? "server unavailable" : c.authenticated === false ? "key refused" : "no answer";
  if (st.notAsked.length) lines.push("", `Not asked (${why}): ${st.notAsked.join(", ")}`);
  return wrapLines(lines).join("\n").replaceAll("\u00a0", " ");
}

/** `/health`: whether OpenViking answers; system status: whose the key is; a data route: whether it may read memory. */
async function connection(client: OpenVikingClient, config: Config, cwd: string) {
  const peer = await resolvePeer(cwd, config);
  const health = await client.request("GET", "/health", z.looseObject({ version: tolerant(z.string()) }));
  const me = health.ok
    ? await client.request("GET", "/api/v1/system/status", z.looseObject({ user: tolerant(z.string()) }))
    : health;
  const data = me.ok && config.apiKey ? await askDataAccess(client) : me;
  const accepted = health.ok && (data.ok || (data.kind !== "auth" && me.ok));
  const a = !accepted && !data.ok ? adviceFor(data, config.baseUrl) : undefined;
  return {
    url: config.baseUrl,
    reachable: health.ok,
    authenticated: accepted || (health.ok && !data.ok && data.kind === "auth" ? false : null),
    account: config.account || undefined,
    user: (accepted && me.ok && me.result.user) || config.user || undefined,
    peer: { id: peer.peerId, source: peer.source },
    ...(health.ok && health.result.version !== undefined ? { serverVersion: health.result.version } : {}),
    ...(a && !data.ok ? { problem: { kind: data.kind, message: a.summary, fix: a.fix } } : {}),
  } satisfies Status["connection"];
}

/** Fills in each commit's task from the session's task list, and memory diffs; what went unasked. */
async function askTasks(client: OpenVikingClient, s: SessionStatus, diffs: { left: number }) {
  const list = await client.request("GET", "/api/v1/tasks", z.array(z.unknown()), {
    query: { resource_id: s.openVikingSessionId, limit: 200 },
  });
  if (!list.ok) return [`the commit tasks of ${s.kimiSessionId}`];
  const tasks = new Map(list.result.filter(isRecord).map((t) => [String(t.task_id), t]));
  const known = new Set(s.commits.map((c) => c.taskId));
  const unknown = [...tasks].filter(([id]) => !known.has(id))
    .map(([id, t]) => ({ id, at: Number(t.created_at ?? 0) * 1000 }));
  // Tasks no entry names: a queued commit replayed with no record takes its own; the rest are another client's.
  for (const t of placeQueued(s, unknown)) s.commits.push({ at: t.at, outcome: "server", taskId: t.id });
  s.commits.sort((a, b) => a.at - b.at);
  for (const c of [...s.commits].reverse()) {
    if (!c.taskId || c.origin) continue;
    const t = tasks.get(c.taskId);
    if (!t) {
      c.task = { status: UNLISTED, memories: [] };
      continue;
    }
    const status = String(t.status ?? "unknown");
    const memories = status === "completed" && diffs.left-- > 0 ? await memoriesOf(client, t) ?? [] : [];
    const tokens = asRecord(asRecord(asRecord(t.result).token_usage).llm).total_tokens;
    c.task = {
      status,
      memories,
      ...(typeof t.error === "string" && t.error ? { error: t.error } : {}),
      ...(typeof tokens === "number" && Number.isFinite(tokens) ? { tokens } : {}),
    };
  }
  return [];
}

type SessionChoice = { session?: string };

/** The chosen sessions (newest first) as the ledger, the queue and the rejected place know them (no network). */
export async function localSessions(
  env: paths.Env,
  config: Config,
  choice: SessionChoice,
  places: { queue: queues.QueueSummary; rejected: queues.QueueSummary },
): Promise<SessionStatus[]> {
  const dir = paths.ledgerDir(env);
  const stateDir = paths.orNoHome(() => paths.hookStateDir(env));
  const replays = await readLedger(dir, REPLAY_FILE).catch(() => []);
  const files = (await ledgerFiles(dir).catch(() => [])).filter((f) => f.name !== REPLAY_FILE);
  const chosen = choice.session !== undefined
    ? [await paths.safeId(choice.session)]
    : files.map((f) => f.name).slice(0, NEWEST_SESSIONS);
  const counts = (q: queues.QueueSummary, ov: string) => {
    const { entries = 0, messages = 0, commits = 0 } = q.sessions.find((x) => x.sessionId === ov) ?? {};
    return { entries, messages, commits };
  };
  // The newest replay failed for the sessions whose writes still wait.
  const failed = replays.findLast((e) => e.kind === "replay" && e.cause);
  const [here, to] = [await sessionDestination(config), await queues.destinationFor(config)];
  return await Promise.all(chosen.map(async (name) => {
    const entries = [...await readLedger(dir, name).catch(() => []), ...replays].sort((a, b) => a.at - b.at);
    const s = foldSession(name, entries, originOf(config));
    const runs = places.queue.sessions.find((x) => x.sessionId === s.openVikingSessionId)?.runs ?? [];
    const away = runs.flatMap((r) =>
      r.to && !queues.goesTo(r.to, to)
        ? [{ messages: r.messages, commits: r.commits, where: queues.placeWords(r.to) }]
        : []
    );
    s.queue = { ...counts(places.queue, s.openVikingSessionId), ...away.length ? { elsewhere: away } : {} };
    s.rejected = counts(places.rejected, s.openVikingSessionId);
    placeQueued(s, []);
    const state = stateDir && await readState((await statePaths(stateDir, name)).file).catch(() => undefined);
    // Due when the watch of the captures' own server and identity commits them, whichever is configured now.
    const due = state && dueAt(state, config.idleCommitSeconds * 1000, undefined);
    const parts = state ? uncommitted(state) : [];
    const messages = parts.reduce((n, u) => n + u.captured, 0);
    const elsewhere = parts.flatMap((u) =>
      isFor(u, here) || !u.to ? [] : [{ messages: u.captured, where: queues.placeWords(u.to) }]
    );
    if (due) s.uncommitted = { messages, dueAt: due, ...elsewhere.length ? { elsewhere } : {} };
    if (failed?.kind === "replay" && failed.cause && s.queue.entries && failed.at > (s.lastError?.at ?? 0)) {
      s.lastError = errorOf(failed.at, failed.cause, failed.origin?.url ?? config.baseUrl);
    }
    return s;
  }));
}

/** The queue and the refused writes as read (one that cannot be read: empty). */
export function readable(places: Places) {
  const none: queues.QueueSummary = { sessions: [], entries: 0 };
  const [queue, rejected] = [places.queue, places.rejected].map((q) => q instanceof Error ? none : q);
  return { queue, rejected };
}

/** The queue and the refused writes as `status --json` has them (doctor checks them in the same words). */
export async function placesStatus(env: paths.Env, config: Config, places: Places) {
  const [{ queue, rejected }, cmd, dir] = [readable(places), commandName(env), places.rejectedDir];
  const here = await queues.destinationFor(config);
  const elsewhere = queues.elsewhereOf(queue.sessions, here);
  return {
    queue: {
      ...totals(queue),
      oldest: queue.sessions[0]?.oldest,
      nextReplay: elsewhere && !queue.sessions.some((s) => queues.goesTo(s.to, here))
        ? "none here — every queued write is for another server or identity (below)"
        : `at the next Kimi session start, or the session's next turn; now: \`${cmd} replay\``,
      setAside: places.setAside,
      elsewhere,
    },
    rejected: {
      ...totals(rejected),
      dir,
      ...(rejected.last ? { last: rejected.last } : {}),
      fix: `fix what the server says (its log, its settings), then send them again with \`${cmd} replay ` +
        `--rejected\`; to drop them, delete ${dir}. It keeps the newest ${queues.REJECTED_MAX_ENTRIES} writes ` +
        `and ${queues.REJECTED_MAX_BYTES >> 20} MiB; past that the oldest are dropped`,
    },
  } satisfies Pick<Status, "queue" | "rejected">;
}

/** Everything `status` shows. */
export async function collectStatus(env: paths.Env, cwd: string, choice: SessionChoice = {}) {
  const { config } = await loadConfig(env, cwd);
  const client = createClient(config, "", { timeoutMs: 3000 });
  const conn = await connection(client, config, cwd);
  const places = await readPlaces(env, config);
  const read = readable(places);
  const sessions = await localSessions(env, config, choice, read);
  const notAsked: string[] = [];
  const canAsk = conn.reachable && conn.authenticated !== false;
  const diffs = { left: 6 }; // memory diffs read per run
  // A commit made on another server or identity is not asked here: a session with no other has nothing to ask.
  for (const s of sessions.filter((s) => s.commits.some((c) => !c.origin))) {
    notAsked.push(...canAsk ? await askTasks(client, s, diffs) : [`the commit tasks of ${s.kimiSessionId}`]);
  }
  const alarm = canAsk ? await askAlarm(client) : null;
  if (alarm === null) notAsked.push("what the newest commits made");
  if (!conn.reachable) notAsked.unshift("whether the key is accepted");
  const x = alarm && alarmWords(alarm);
  const extraction = alarm && x &&
    { commits: alarm.commits, failed: alarm.failed, kind: x.kind, message: x.summary, fix: x.fix };
  const status: Status = {
    version: VERSION,
    connection: conn,
    sessions,
    ...await placesStatus(env, config, places),
    notAsked,
    ...(extraction ? { extraction } : {}),
    ...(places.paused ? { paused: places.paused } : {}),
  };
  return scrub(status, [config.apiKey]) as Status;
}

/** Whether anything local is known of Kimi session `id`: its ledger, its state, or writes in the queue. */
async function knownSession(env: paths.Env, id: string): Promise<boolean> {
  const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
  const [ledger, state, queue] = [paths.ledgerDir, paths.hookStateDir, paths.pendingDir]
    .map((dir) => paths.orNoHome(() => dir(env)));
  const safe = await paths.safeId(id);
  const file = async (kind: "capture" | "prompt") => (await statePaths(state!, id, kind)).file;
  return !!ledger && await hasLedger(ledger, safe) ||
    !!state && (await exists(await file("capture")) || await exists(await file("prompt"))) ||
    !!queue && await queues.hasUnsent(queue, `${SESSION_PREFIX}${safe}`).catch(() => false);
}

/** `openviking-kimi status`: exit 0; 1 for a session nothing is known of. */
export async function statusCommand(o: SessionChoice & { json: boolean }, env: paths.Env) {
  if (o.session !== undefined && !(await knownSession(env, o.session))) {
    const newest = `\`${commandName(env)} status\` lists the newest sessions the ledger knows.`;
    console.error(
      `openviking-kimi status: no ledger or state exists for session ${JSON.stringify(o.session)}. ${newest}`,
    );
    return 1;
  }
  const status = await collectStatus(env, invocationCwd(env), o);
  console.log(o.json ? reportJson(status, 2) : printable(renderStatus(status, Date.now())));
  return 0;
}
