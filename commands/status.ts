/**
 * `openviking-kimi status`: what memory did, from the local ledger and state, and what OpenViking did with the
 * commits (its task API). With the server down it still tells everything local and says what it could not ask.
 * Bounded: a few seconds per request, the task list once per session (and by id the shown commits it left
 * out), memory diffs of the newest commits only.
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
import { ledgerFile, ledgerFiles, readLedger, REPLAY_FILE } from "../memory/ledger.ts";
import {
  countShared,
  hasUnsent,
  type QueueSummary,
  queueSummary,
  REJECTED_SUBDIR,
  type RejectedSummary,
  rejectedSummary,
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
import {
  foldSession,
  markWaiting,
  matchUnrecorded,
  type SessionStatus,
  SHOWN_COMMITS,
  type Status,
} from "./status-model.ts";

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

/** The memories a completed commit added or updated, from its memory diff (`memory_diff_uri`). */
async function memoriesOf(client: OpenVikingClient, task: JsonRecord): Promise<string[]> {
  const uri = asRecord(task.result).memory_diff_uri;
  if (typeof uri !== "string") return [];
  const read = await client.request("GET", "/api/v1/content/read", z.string(), { query: { uri } });
  if (!read.ok) return [];
  try {
    const ops = asRecord(asRecord(JSON.parse(read.result)).operations);
    return [...(Array.isArray(ops.adds) ? ops.adds : []), ...(Array.isArray(ops.updates) ? ops.updates : [])]
      .filter(isRecord).map((o) => o.uri).filter((u): u is string => typeof u === "string");
  } catch {
    return [];
  }
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
      ? (diffs.left--, await memoriesOf(client, t))
      : [];
    c.task = { status, memories, ...(typeof t.error === "string" && t.error ? { error: t.error } : {}) };
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
  else console.log(printable((await import("./status-render.ts")).renderStatus(status, Date.now())));
  return 0;
}
