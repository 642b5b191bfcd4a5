/**
 * Doctor's checks of memory itself: the server (reachable, really OpenViking, the key accepted), the pending
 * queues, what the last captures did (messages queued or refused, and why) and the writes OpenViking refused,
 * kept aside. Every failure is told with its fix (`runtime/advice.ts`); nothing printed carries a secret.
 */

import { adviceFor, adviceForCause } from "../openviking/advice.ts";
import { isOpen, nextProbeAt, readBreaker } from "../openviking/breaker.ts";
import type { Config } from "../openviking/config.ts";
import * as z from "zod/mini";
import { AnyResult, askDataAccess, clientOptions, createClient } from "../openviking/client.ts";
import {
  countShared,
  type QueueSummary,
  queueSummary,
  REJECTED_MAX_BYTES,
  REJECTED_MAX_ENTRIES,
  REJECTED_SUBDIR,
  rejectedSummary,
} from "../openviking/queue.ts";
import { type SessionState, SessionStateSchema } from "../memory/state.ts";
import { parseJsonOrUndefined } from "../lib/fs.ts";
import { type Env, hookStateDir, joinPath, orNoHome, pendingDir, sharedStateDir } from "../lib/paths.ts";
import { SESSION_PREFIX } from "../memory/context.ts";
import type { Check } from "./check.ts";
import { commandName } from "../lib/self.ts";

/** Journal protocol versions this release was tested with. */
const KNOWN_PROTOCOLS = ["1.4", "1.5"];

/** `/health`: OpenViking's says `healthy: true` (or `status: "ok"`) and its version. */
const HealthReply = z.looseObject({
  healthy: z.optional(z.unknown()),
  status: z.optional(z.unknown()),
  version: z.optional(z.unknown()),
});

/**
 * Server checks: `/health` is OpenViking's and answers; a search is accepted with the configured key (with
 * `quick`, as install asks after installing: only whether the key may use memory's routes, no search).
 */
export async function serverChecks(
  config: Config,
  fetchImpl?: typeof fetch,
  options: { quick?: boolean } = {},
): Promise<Check[]> {
  const checks: Check[] = [];
  const client = createClient(clientOptions(config, "", { timeoutMs: 5000, fetch: fetchImpl }));
  const where = `${config.baseUrl} (from ${config.credentialSource})`;
  const health = await client.request("GET", "/health", HealthReply);
  if (!health.ok) {
    const advice = adviceFor(health, config.baseUrl);
    checks.push({ id: "server", status: "fail", summary: `${where}: ${advice.summary}`, fix: advice.fix });
    return checks;
  }
  const h = health.result;
  if (h.healthy !== true && h.status !== "ok") {
    checks.push({
      id: "server",
      status: "fail",
      summary: `${where} answers /health, but not as OpenViking does`,
      fix:
        `check the address (a proxy must forward to OpenViking), then \`${commandName()} install --url URL\``,
    });
    return checks;
  }
  checks.push({
    id: "server",
    status: "ok",
    summary: `OpenViking ${typeof h.version === "string" ? h.version : ""} at ${where}`.replace("  ", " "),
  });
  const search = options.quick
    ? await askDataAccess(client)
    : await client.request("POST", "/api/v1/search/find", AnyResult, {
      body: { query: "openviking-kimi doctor", limit: 1 },
    });
  const keyNote = config.apiKey ? `API key from ${config.apiKeySource}` : "no API key";
  const what = options.quick ? "memory's routes answer" : "a search works";
  if (search.ok || (options.quick && search.kind !== "auth")) {
    checks.push({ id: "auth", status: "ok", summary: `${what} (${keyNote})` });
  } else {
    const advice = adviceFor(search, config.baseUrl);
    checks.push({
      id: "auth",
      status: "fail",
      summary: `${
        options.quick ? "memory's routes refuse the key" : "a search failed"
      } (${keyNote}): ${advice.summary}`,
      fix: advice.fix,
    });
  }
  return checks;
}

/** The pending queues: ours (per session) and the shared one other plugins use. */
export async function queueCheck(env: Env, now: number): Promise<Check> {
  const dir = pendingDir(env);
  let summary;
  let shared = 0;
  try {
    summary = await queueSummary(dir);
    shared = await countShared(dir);
  } catch (error) {
    return {
      id: "queue",
      status: "warn",
      summary: `cannot read ${dir}: ${(error as Error).message}`,
      fix: `make ${dir} readable and writable by you`,
    };
  }
  if (summary.entries === 0 && shared === 0) {
    return { id: "queue", status: "ok", summary: `pending queue empty (${dir})` };
  }
  const oldest = Math.min(...summary.sessions.map((s) => s.oldest), now);
  const messages = summary.sessions.reduce((n, s) => n + s.messages, 0);
  const text =
    `${messages} message(s) and ${
      summary.sessions.reduce((n, s) => n + s.commits, 0)
    } commit(s) of ${summary.sessions.length} session(s) waiting in ${dir}` +
    (shared ? `, and ${shared} write(s) of other OpenViking plugins` : "") +
    (summary.entries ? `, oldest from ${new Date(oldest).toISOString()}` : "");
  const stale = (now - oldest) / 3_600_000 > 1;
  return stale
    ? {
      id: "queue",
      status: "warn",
      summary: text,
      detail: summary.sessions.slice(0, 5).map((s) =>
        `${s.sessionId}: ${s.messages} message(s), ${s.commits} commit(s)`
      ),
      fix: "they are sent when the server takes them (at the next session start); send them now with " +
        `\`${commandName()} replay\`, and see the captures check below for why they wait`,
    }
    : { id: "queue", status: "info", summary: text };
}

/** A session's capture state as doctor finds it. */
interface SeenSession {
  name: string;
  state: SessionState;
}

/** The capture states in the hook state directory (prompt states skipped), or why it cannot be read. */
async function seenSessions(dir: string): Promise<SeenSession[] | { error: string }> {
  const sessions: SeenSession[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".json") || e.name.endsWith(".prompt.json")) continue;
      const raw = parseJsonOrUndefined(await Deno.readTextFile(joinPath(dir, e.name)).catch(() => undefined));
      const parsed = SessionStateSchema.safeParse(raw);
      if (parsed.success) sessions.push({ name: e.name.replace(/\.json$/, ""), state: parsed.data });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) return { error: (error as Error).message };
  }
  return sessions;
}

/** One line per recent capture: when, on which event, what it did, the journal's protocol. */
function captureLine({ name, state }: SeenSession): string {
  const l = state.lastCapture;
  const what = l ? `: sent ${l.sent}, queued ${l.queued}, refused ${l.rejected}` : "";
  return `${name}: ${new Date(state.lastCaptureAt ?? 0).toISOString()}${
    state.lastCaptureEvent ? ` on ${state.lastCaptureEvent}` : ""
  }${what}${state.protocolVersion ? `, journal protocol ${state.protocolVersion}` : ""}`;
}

/**
 * What became of a capture's queued messages, as doctor can tell now: `delivered` when its session's queue
 * holds nothing any more, `waiting` when it still does but the server answers (the queue goes out on its own),
 * `blocked` while the server still cannot take them.
 */
export type QueuedFate = "delivered" | "waiting" | "blocked";

/** The fate of session `name`'s queued messages from its queue now and whether the server answers (pure). */
export function queuedFate(name: string, queue: QueueSummary, serverAnswers: boolean): QueuedFate {
  const left = queue.sessions.find((q) => q.sessionId === `${SESSION_PREFIX}${name}`)?.entries ?? 0;
  return left === 0 ? "delivered" : serverAnswers ? "waiting" : "blocked";
}

/** The fix for messages that wait in the queue while the server answers: nothing, or a replay now. */
const waitingFix = () =>
  "nothing to do: the session's next turn or the next Kimi session start sends them; to send them now: " +
  `\`${commandName()} replay\``;

/** The captures check: none yet, the last one could not deliver (and why, or what became of it), or all is well. */
function capturesCheck(sessions: SeenSession[], config: Config, fate: (name: string) => QueuedFate): Check {
  const captured = sessions.filter((s) => (s.state.lastCaptureAt ?? 0) > 0)
    .sort((a, b) => (b.state.lastCaptureAt ?? 0) - (a.state.lastCaptureAt ?? 0));
  if (captured.length === 0) {
    return {
      id: "captures",
      status: "info",
      summary: sessions.length
        ? `${sessions.length} session(s) seen, none captured yet`
        : "no capture recorded yet (finish a turn in Kimi Code, then run doctor again)",
    };
  }
  const detail = captured.slice(0, 5).map(captureLine);
  const last = captured[0].state.lastCapture;
  const cause = last?.cause;
  const queued = last && cause && last.queued > 0 && last.rejected === 0 && cause.kind !== "local"
    ? fate(captured[0].name)
    : undefined;
  if (
    last && cause && queued !== "delivered" &&
    (last.queued > 0 || last.rejected > 0 || cause.kind === "local")
  ) {
    const advice = adviceForCause(cause, config.baseUrl);
    return {
      id: "captures",
      status: "warn",
      summary: last.rejected > 0
        ? `the last capture had ${last.rejected} message(s) refused by OpenViking: ${cause.message}`
        : queued === "waiting"
        ? `the last capture could not deliver then (${advice.summary}); the server answers now, and its ` +
          `${last.queued} message(s) wait in the queue`
        : `the last capture could not deliver: ${advice.summary}` +
          (last.queued ? ` (${last.queued} message(s) wait in the queue)` : ""),
      detail,
      fix: queued === "waiting" ? waitingFix() : advice.fix,
    };
  }
  return {
    id: "captures",
    status: "ok",
    summary:
      `last capture ${new Date(captured[0].state.lastCaptureAt ?? 0).toISOString()} (${captured.length} ` +
      `session(s))${
        queued === "delivered" ? `; the ${last?.queued} message(s) it queued have left the queue` : ""
      }`,
    detail,
  };
}

/** The journal protocol versions the captures saw, against the ones this release knows. */
function protocolCheck(sessions: SeenSession[]): Check | undefined {
  const protocols = [
    ...new Set(sessions.map((s) => s.state.protocolVersion).filter((p): p is string => !!p)),
  ];
  if (!protocols.length) return undefined;
  const unknown = protocols.filter((p) => !KNOWN_PROTOCOLS.includes(p));
  return unknown.length
    ? {
      id: "protocol",
      status: "warn",
      summary: `journal protocol ${unknown.join(", ")} seen; this release knows ${
        KNOWN_PROTOCOLS.join(", ")
      }`,
      fix: "update openviking-kimi; until then capture may miss parts of turns",
    }
    : { id: "protocol", status: "ok", summary: `journal protocol ${protocols.join(", ")}` };
}

/** The writes OpenViking refused for good (or that waited past the queue's age limit), kept aside. */
async function rejectedCheck(env: Env): Promise<Check> {
  const dir = joinPath(pendingDir(env), REJECTED_SUBDIR);
  const kept = await rejectedSummary(pendingDir(env)).catch((error) => ({ error: (error as Error).message }));
  if ("error" in kept) {
    return { id: "rejected", status: "warn", summary: `cannot read ${dir}: ${kept.error}` };
  }
  if (!kept.entries) return { id: "rejected", status: "ok", summary: "no write refused by OpenViking" };
  const count = (f: "messages" | "commits") => kept.sessions.reduce((n, s) => n + s[f], 0);
  const last = kept.last;
  return {
    id: "rejected",
    status: "warn",
    summary:
      `${kept.entries} write(s) OpenViking refused (${count("messages")} message(s), ${
        count("commits")
      } commit(s) of ${kept.sessions.length} session(s)) are kept in ${dir}` +
      (last
        ? `; the newest, ${new Date(last.at).toISOString()}: ${
          last.status ? `HTTP ${last.status}` : "never sent"
        }: ${last.message}`
        : ""),
    detail: kept.sessions.slice(0, 5).map((s) =>
      `${s.sessionId}: ${s.messages} message(s), ${s.commits} commit(s)`
    ),
    fix: "fix what the server says (its log, its settings), then send them again with " +
      `\`${commandName(env)} replay --rejected\`; to drop them, delete ${dir}. It keeps the newest ` +
      `${REJECTED_MAX_ENTRIES} writes and ${REJECTED_MAX_BYTES >> 20} MiB; past that the oldest are dropped`,
  };
}

/**
 * What the last captures did: when, whether messages were queued or refused, and why — or, for queued ones,
 * what became of them since (`serverAnswers`: the server and key checks passed just now).
 */
export async function captureChecks(env: Env, config: Config, serverAnswers: boolean): Promise<Check[]> {
  const dir = hookStateDir(env);
  const sessions = await seenSessions(dir);
  const rejected = await rejectedCheck(env);
  if ("error" in sessions) {
    return [{ id: "captures", status: "warn", summary: `cannot read ${dir}: ${sessions.error}` }, rejected];
  }
  const queue = await queueSummary(pendingDir(env)).catch((): QueueSummary => ({ sessions: [], entries: 0 }));
  const protocol = protocolCheck(sessions);
  const fate = (name: string) => queuedFate(name, queue, serverAnswers);
  return [capturesCheck(sessions, config, fate), rejected, ...(protocol ? [protocol] : [])];
}

/** Recall paused (runtime/breaker.ts): since when and why, and when the server is asked again; nothing when not. */
export async function recallChecks(env: Env, config: Config): Promise<Check[]> {
  const b = await readBreaker(orNoHome(() => sharedStateDir(env)) ?? "", config.baseUrl);
  if (!b) return [];
  const since = `memory paused since ${new Date(b.since).toISOString()}: ${b.reason}`;
  if (!isOpen(b)) {
    return [{
      id: "recall",
      status: "info",
      summary: `${since}; the server answered at ${new Date(b.answeredAt ?? 0).toISOString()}: ` +
        "the next prompt asks it again",
    }];
  }
  return [{
    id: "recall",
    status: "warn",
    summary: `${since}; prompts do not ask the server`,
    fix:
      `nothing to do once the server answers: the first prompt or session start after ${
        new Date(nextProbeAt(b)).toISOString()
      } probes it (GET /health) and recall resumes; meanwhile check the server and its embedding and chat ` +
      "models (OpenViking's log)",
  }];
}
