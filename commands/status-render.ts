/** `openviking-kimi status` as text: one screen, lines of at most 80 columns (a longer URI whole). Pure. */

import { type CommitStatus, type SessionStatus, SHOWN_COMMITS, type Status } from "./status-model.ts";

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
  lines.push(...rejectedLines(st.rejected, now));
  const why = !c.reachable ? "server unavailable" : c.authenticated === false ? "key refused" : "no answer";
  if (st.notAsked.length) lines.push("", `Not asked (${why}): ${st.notAsked.join(", ")}`);
  return lines.flatMap((l) => wrap(l, " ".repeat(Math.min(12, l.length - l.trimStart().length + 2))))
    .join("\n");
}
