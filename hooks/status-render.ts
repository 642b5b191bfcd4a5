/** `openviking-kimi status` as text: one screen, lines of at most 80 columns. Pure. */

import { type CommitStatus, type SessionStatus, SHOWN_COMMITS, type Status } from "./status-model.ts";

/** Widest line the text form prints. */
export const STATUS_COLUMNS = 80;

/** Cuts a line to the screen width (an ellipsis marks the cut). */
export function fit(line: string, width = STATUS_COLUMNS): string {
  const chars = [...line];
  return chars.length <= width ? line : `${chars.slice(0, width - 1).join("")}…`;
}

/** A long line wrapped at word boundaries into lines of at most `width`; wrapped lines get `indent`. */
export function wrap(line: string, indent: string, width = STATUS_COLUMNS): string[] {
  const out: string[] = [];
  let rest = line;
  while ([...rest].length > width) {
    const head = [...rest].slice(0, width).join("");
    const cut = head.lastIndexOf(" ");
    const at = cut > indent.length + 10 ? cut : head.length;
    out.push(rest.slice(0, at).trimEnd());
    rest = `${indent}${rest.slice(at).trimStart()}`;
  }
  out.push(rest);
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
  const outcome = c.outcome === "queued" ? queuedFate(c, now) : c.outcome;
  return `    commit ${ago(c.at, now)}: ${outcome}${c.taskId ? ` (task ${c.taskId.slice(0, 8)})` : ""}${
    task ? `, ${task}` : c.outcome === "queued" ? "" : `, ${c.outcome}`
  }`;
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
  if (s.lastError) {
    lines.push(
      `    last error ${ago(s.lastError.at, now)}: ${s.lastError.message}`,
      `      fix: ${s.lastError.fix}`,
    );
  }
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
  if (st.notAsked.length) lines.push("", `Not asked (server unavailable): ${st.notAsked.join(", ")}`);
  return lines.flatMap((l) => wrap(l, " ".repeat(Math.min(12, l.length - l.trimStart().length + 2))))
    .map((l) => fit(l)).join("\n");
}
