/**
 * `status` in-process (collectStatus, renderStatus) after scripted sessions run in-process: prompts, captures
 * whose commits' tasks complete or fail, writes queued while the server is down, replays; the commands through
 * the command table (tests/cli/in-process.ts), doctor too.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, MODEL_DOWN } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { JournalBuilder } from "../support/journal.ts";
import { enqueueMessages } from "../support/queue.ts";
import { tempDir } from "../support/temp.ts";
import { runIn } from "../cli/in-process.ts";
import { collectStatus, renderStatus } from "../../cli/status.ts";
import { WIDTH as STATUS_COLUMNS } from "../../lib/columns.ts";
import {
  appendLedger,
  type LedgerEntry,
  readLedger,
  REPLAY_FILE,
  type ReplayEntry,
} from "../../memory/ledger.ts";
import { readState } from "../../memory/state.ts";
import { commandName } from "../../lib/self.ts";
import type { Check } from "./world.ts";

const SESSION = "session_5747a705-0000-4000-8000-000000000014";

/** A sandbox's environment where each capture is over when its hook exits and no Stop waits for a turn's end. */
function statusEnv(home: string, url: string, extra: Record<string, string> = {}): Record<string, string> {
  return sandboxEnv(home, url, {
    OPENVIKING_TIMEOUT_MS: "1500",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    ...extra,
  });
}

/** Runs hook `event` of `session` (payload `name` with `extra`) in-process. */
async function runHook(env: Record<string, string>, cwd: string, event: string, name: string, extra = {}) {
  await hookIn(event, {
    env,
    stdin: JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd, ...extra }),
  });
}

/** The status entry for `SESSION`. */
const ours = async (env: Record<string, string>, cwd: string) =>
  (await collectStatus(env, cwd)).sessions.find((x) => x.kimiSessionId === SESSION)!;

/** The status screen, in-process: its lines within the screen width. */
async function statusText(env: Record<string, string>, cwd: string, choice = {}): Promise<string> {
  const text = renderStatus(await collectStatus(env, cwd, choice), Date.now());
  for (const line of text.split("\n")) {
    assertTrue([...line].length <= STATUS_COLUMNS, `wider than ${STATUS_COLUMNS}: ${line}`);
  }
  return text;
}

/** Appends `entry` to `name`'s ledger in `home` (a capture of one stopped turn unless it says otherwise). */
async function ledgerLine(home: string, name: string, entry: Partial<LedgerEntry> & { at: number }) {
  const capture = {
    kind: "capture",
    ms: 5,
    event: "stop",
    turns: 1,
    sent: 0,
    queued: 0,
    rejected: 0,
    commit: "none",
  };
  const limits = { ledgerMaxBytes: 8 << 20, ledgerMaxAgeDays: 30 };
  const line = { ...capture, ...entry } as LedgerEntry;
  assertTrue(await appendLedger(`${home}/.openviking/ledger/kimicode`, name, line, limits));
}

/** The replay entries of the replay ledger (every replay that sent something records one). */
async function replayLedger(home: string): Promise<ReplayEntry[]> {
  const entries = await readLedger(`${home}/.openviking/ledger/kimicode`, REPLAY_FILE);
  return entries.filter((e): e is ReplayEntry => e.kind === "replay");
}

/** One turn of the session: its prompt, the journal with it, then Stop (capture and commit). */
function sessionTurns(env: Record<string, string>, home: string) {
  const j = new JournalBuilder();
  return async (text: string) => {
    await runHook(env, home, "user-prompt-submit", "UserPromptSubmit", { prompt: text });
    j.simpleTurn(text, `an answer to: ${text}`);
    await placeJournal(home, SESSION, j.toString());
    await runHook(env, home, "stop", "Stop");
  };
}

Deno.test("status: every field after a scripted session, with the server down and back (its backlog replayed)", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  // The configured account and user: status shows them while the server cannot be asked.
  const env = statusEnv(dir.path, fake.url, { OPENVIKING_ACCOUNT: "acme", OPENVIKING_USER: "carol" });
  const j = new JournalBuilder();
  /** When each turn's Stop ran: its commit is dated within. */
  const stops: [number, number][] = [];
  const turn = async (text: string) => {
    await runHook(env, dir.path, "user-prompt-submit", "UserPromptSubmit", { prompt: text });
    await placeJournal(dir.path, SESSION, j.simpleTurn(text, `an answer to: ${text}`).toString());
    const from = Date.now();
    await runHook(env, dir.path, "stop", "Stop");
    stops.push([from, Date.now()]);
  };
  const within = (at: number | undefined, [from, to]: [number, number]) =>
    at !== undefined && from <= at && at <= to;
  await turn("how should I indent TypeScript here?"); // commit → task completed, one memory
  fake.taskOutcome = "failed";
  await turn("and what about the tests folder?"); // commit → task failed
  fake.fault({ route: "*", drop: true }); // the server goes away
  await turn("remember that the build runs in CI only"); // queued, with its commit

  const down = await collectStatus(env, dir.path);
  const c = down.connection;
  assertEquals([c.reachable, c.authenticated, c.account, c.user, c.serverVersion], [
    false,
    null,
    "acme",
    "carol",
    undefined,
  ]);
  assertMatch(c.problem!.fix, /start the server|install --url/);
  assertEquals(c.peer, { id: dir.path.replace(/[^A-Za-z0-9]/g, "-"), source: "cwd" });
  assertTrue(down.notAsked.includes("whether the key is accepted"));
  assertTrue(down.notAsked.some((x) => x.includes(SESSION)), "says it could not ask for the tasks");
  const d = down.sessions.find((s) => s.kimiSessionId === SESSION)!;
  // The first prompt shows the fake's one memory; the second finds it again and leaves it out; the third
  // (server down) gets nothing.
  assertEquals(d.prompts, { seen: 3, injected: 1, suppressed: 1, lastPath: "none" });
  assertEquals([d.captures.runs, d.captures.turns, d.captures.sent, d.captures.queued], [3, 3, 4, 2]);
  assertEquals(d.commits.map((c) => [c.outcome, c.task?.status]), [
    ["committed", undefined],
    ["committed", undefined],
    ["queued", undefined],
  ]);
  assertEquals(d.commits.map((c, i) => within(c.at, stops[i])), [true, true, true], "each commit's time");
  assertEquals(d.queue, { entries: 2, messages: 2, commits: 1 });
  assertEquals(d.lastError?.kind, "unreachable");
  assertTrue(within(d.lastError?.at, stops[2]), "the error of the third turn's capture");
  assertMatch(d.lastError!.message, new RegExp(`^OpenViking at ${fake.url} is not reachable`));
  assertMatch(d.lastError!.fix, /writes wait in the queue/);
  const q = down.queue;
  assertEquals([q.entries, q.messages, q.commits, q.sessions], [2, 2, 1, 1]);
  assertTrue(within(q.oldest, stops[2]), "the oldest queued write is the third turn's");
  assertStringIncludes(q.nextReplay, `; now: \`${commandName(env)} replay\``);

  fake.clearFaults(); // back
  fake.taskOutcome = "completed";
  // Doctor names the replay (or the next turn), not the server.
  const doctor = async () => {
    const r = await runIn(env, ["doctor", "--json"]);
    return Object.fromEntries((JSON.parse(r.stdout).checks as Check[]).map((c) => [c.id, c]));
  };
  const waiting = await doctor();
  assertEquals([waiting.server.status, waiting.captures.status], ["ok", "warn"]);
  assertMatch(waiting.captures.summary, /2 message\(s\) wait in the queue/);
  assertTrue(!/start the server/.test(waiting.captures.fix ?? ""), waiting.captures.fix);
  assertMatch(waiting.captures.fix!, /next turn/);
  assertStringIncludes(waiting.captures.fix!, `\`${commandName(env)} replay\``);
  const up = await collectStatus(env, dir.path);
  const u = up.connection;
  // Asked: the server's version, and the user its key belongs to (the fake's is "default").
  assertEquals([u.reachable, u.authenticated, u.account, u.user, u.serverVersion, up.notAsked], [
    true,
    true,
    "acme",
    "default",
    "0.5.2-fake",
    [],
  ]);
  const commits = up.sessions.find((s) => s.kimiSessionId === SESSION)!.commits;
  assertEquals(commits.map((c) => [c.outcome, c.task?.status, c.task?.error, c.task?.memories]), [
    ["committed", "completed", undefined, [fake.memoryAdds[0].uri]],
    ["committed", "failed", fake.taskError, []],
    ["queued", undefined, undefined, undefined],
  ]);
  // The next turn's capture replays the session's backlog first (the queued commit goes out with a task of its
  // own), then sends and commits its own; tasks OpenViking has not finished: their state as it is, no memories.
  fake.taskOutcome = "running";
  await turn("is the cache shared between jobs?");
  fake.taskOutcome = "pending";
  await turn("and between branches?");
  const replayed = [...fake.tasks.keys()][2];
  const replays = (await replayLedger(dir.path)).map((e) => e.commitTasks);
  assertEquals(replays, [[{ sessionId: `kc-${SESSION}`, taskId: replayed }]]);
  const busy = await collectStatus(env, dir.path);
  assertEquals([busy.queue.entries, busy.queue.oldest], [0, undefined]);
  const b = busy.sessions.find((s) => s.kimiSessionId === SESSION)!;
  const running = { status: "running", memories: [] };
  assertEquals(b.commits.slice(2).map((c) => [c.outcome, c.waiting, c.replayedAt !== undefined, c.task]), [
    ["queued", false, true, running],
    ["committed", undefined, false, running],
    ["committed", undefined, false, { status: "pending", memories: [] }],
  ]);
  assertEquals(b.commits.map((c) => c.taskId === replayed), [false, false, true, false, false]);
  assertEquals([b.captures.queued, b.lastError], [0, undefined], "the error is over once a capture worked");
  const delivered = await doctor();
  assertEquals(delivered.captures.status, "ok", delivered.captures.summary);
  assertEquals(b.commits.slice(-2).map((c, i) => within(c.at, stops[3 + i])), [true, true]);
  const text = await statusText(env, dir.path);
  assertMatch(text, new RegExp(SESSION));
  assertMatch(text, /queued, delivered by a replay/);
  assertEquals(text.includes("waits in the queue"), false, text);
  assertTrue(!text.includes("last error"), text);
  assertMatch(text, /captured 5 turn\(s\): 10 message\(s\) delivered, 0 queued/);
  assertMatch(text, /\(task task-kc-\), running\n.*\(task task-kc-\), pending\n/);
});

Deno.test("status: a turn still open at one Stop and captured at the next is counted once", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  const stop = async (journal: string) => {
    await placeJournal(dir.path, SESSION, journal);
    await runHook(env, dir.path, "stop", "Stop");
  };
  const j = new JournalBuilder().simpleTurn("first question about the deploy script", "the first answer");
  j.prompt("second question about the deploy script").stepBegin().text("the second answer").stepEnd(
    "end_turn",
  );
  await stop(j.toString()); // the second turn's end is not on disk yet
  await stop(j.ended().toString());
  await stop(j.toString()); // nothing new
  const s = (await collectStatus(env, dir.path, { session: SESSION })).sessions[0];
  assertEquals(fake.messages(`kc-${SESSION}`).length, 4, "both turns stored");
  assertEquals([s.captures.turns, s.captures.sent], [2, 4], "each turn counted once, when it is captured");
});

Deno.test("status: turns captured from the kept prompts (no journal) are counted too", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  const prompt = { prompt: "where does the deploy script live?" };
  await runHook(env, dir.path, "user-prompt-submit", "UserPromptSubmit", prompt);
  await runHook(env, dir.path, "stop", "Stop"); // no wire.jsonl anywhere: the kept prompt is the turn
  const s = (await collectStatus(env, dir.path, { session: SESSION })).sessions[0];
  assertEquals(fake.messages(`kc-${SESSION}`).map((m) => m.content), ["where does the deploy script live?"]);
  assertEquals([s.captures.runs, s.captures.turns, s.captures.sent], [1, 1, 1]);

  // Refused for good, a kept prompt is counted as refused (and kept), not as delivered nor left out.
  fake.fault({ route: "POST /api/v1/sessions/:id/*", status: 400, error: { message: "content: too long" } });
  await runHook(env, dir.path, "user-prompt-submit", "UserPromptSubmit", { prompt: "and the staging one?" });
  await runHook(env, dir.path, "stop", "Stop");
  const after = (await collectStatus(env, dir.path, { session: SESSION })).sessions[0];
  assertEquals([after.captures.runs, after.captures.turns, after.captures.sent, after.captures.rejected], [
    2,
    2,
    1,
    1,
  ]);
  assertEquals(after.rejected, { entries: 2, messages: 1, commits: 1 });
});

Deno.test("status: the prompts of a session that never reached a Stop, delivered by another session's start, are counted as its capture", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  await runHook(env, dir.path, "user-prompt-submit", "UserPromptSubmit", {
    prompt: "where is the deploy key?",
  });
  // Its Kimi died before the turn reached a Stop (`kimi -p … | head`), minutes ago.
  const file = `${dir.path}/.openviking/hook-state/kimicode/${SESSION}.prompt.json`;
  const state = JSON.parse(await Deno.readTextFile(file));
  const ago = Date.now() - 10 * 60_000;
  state.fallbackPrompts = state.fallbackPrompts.map((p: { at: number }) => ({ ...p, at: ago }));
  await Deno.writeTextFile(file, JSON.stringify(state));
  await Deno.utime(file, new Date(ago), new Date(ago));
  const start = { hook_event_name: "SessionStart", session_id: "session_next-0001", cwd: dir.path };
  await hookIn("session-start", { env, stdin: JSON.stringify({ ...start, source: "startup" }) });
  assertEquals(fake.messages(`kc-${SESSION}`).map((m) => m.content), ["where is the deploy key?"]);
  const s = await ours(env, dir.path);
  assertEquals([s.captures.turns, s.captures.sent], [1, 1], "what reached OpenViking is in the ledger");
});

Deno.test("status after `openviking-kimi replay`: the queued commit delivered by it, with or without its record", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  fake.fault({ route: "*", drop: true }); // the server is away: the turn and its commit are queued
  await sessionTurns(env, dir.path)("remember that the build runs in CI only");
  fake.clearFaults();
  assertEquals((await runIn(env, ["replay"])).code, 0);

  const [taskId] = [...fake.tasks.keys()];
  const replays = await replayLedger(dir.path);
  assertEquals(replays.map((e) => [e.replayed, e.messages, e.commitTasks]), [
    [2, 2, [{ sessionId: `kc-${SESSION}`, taskId }]],
  ], "the replay is in the replay ledger");
  const commit = async () =>
    (await ours(env, dir.path)).commits.map((
      c,
    ) => [c.outcome, c.waiting, c.replayedAt, c.taskId, c.task?.status]);
  assertEquals(
    await commit(),
    [["queued", false, replays[0].at, taskId, "completed"]],
    "no second `server` one",
  );
  const text = await statusText(env, dir.path);
  assertMatch(text, /Queue {3}empty/);
  assertMatch(
    text,
    /captured 1 turn\(s\): 2 message\(s\) delivered, 0 queued/,
    "the replay's messages counted",
  );
  assertEquals(text.includes("waits in the queue"), false, text);
  assertMatch(text, /commit \d+ s ago: queued, delivered by a replay \d+ s ago \(task task-kc-/);
  assertMatch(text, /completed → 1 memory/);

  // An older version's replay, or one whose ledger line could not be written: the session's new task is its.
  await Deno.remove(`${dir.path}/.openviking/ledger/kimicode/${REPLAY_FILE}.jsonl`);
  assertEquals(await commit(), [["queued", false, undefined, taskId, "completed"]]);
  const missed = await statusText(env, dir.path);
  assertMatch(missed, /queued, since delivered \(task task-kc-/);
  assertEquals(missed.includes("waits in the queue"), false, missed);
});

Deno.test("status: the newest commits the task list leaves out are asked by id: found, expired, or not asked", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  const turn = sessionTurns(env, dir.path);
  for (const n of ["first", "second", "third", "fourth"]) await turn(`${n} question about the deploy script`);
  // A list that does not reach them (newer tasks of the session fill it): only each task's own route has it.
  fake.fault({ route: "GET /api/v1/tasks", raw: { status: 200, body: '{"status":"ok","result":[]}' } });
  fake.requests.length = 0;
  const tasks = async () => {
    const st = await collectStatus(env, dir.path, { session: SESSION });
    return { notAsked: st.notAsked, tasks: st.sessions[0].commits.map((c) => c.task) };
  };
  const done = { status: "completed", memories: [fake.memoryAdds[0].uri] };
  // The oldest is not on the screen: not looked up.
  assertEquals(await tasks(), { notAsked: [], tasks: [undefined, done, done, done] });
  const lookups = fake.requests.filter((r) => r.path.startsWith("/api/v1/tasks/")).map((r) => r.path);
  assertEquals(lookups.sort(), [2, 3, 4].map((n) => `/api/v1/tasks/task-kc-${SESSION}-${n}`));
  // The session's one list asks for 200 (the server's default, 50, would leave a long session's out); the
  // other list is the extraction alarm's, of every session.
  const lists = fake.requestsTo("GET /api/v1/tasks").filter((r) => r.query.resource_id);
  assertEquals(lists.map((r) => r.query.limit), ["200"]);

  fake.tasks.clear(); // the server does not know them: too fresh to have expired (another key's server?)
  const unknown = { status: "not-found", memories: [] };
  assertEquals(await tasks(), { notAsked: [], tasks: [undefined, unknown, unknown, unknown] });
  const fresh = (await statusText(env, dir.path, { session: SESSION })).replace(/\s+/g, " ");
  assertTrue(!fresh.includes("expired"), fresh);
  assertEquals(fresh.match(/not known to this server \(made on another server or identity\?\)/g)?.length, 3);
  // A day later: OpenViking keeps a finished task 24 h.
  const file = `${dir.path}/.openviking/ledger/kimicode/${SESSION}.jsonl`;
  const lines = (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
  const dayAgo = (e: { at: number }) => JSON.stringify({ ...e, at: e.at - 25 * 3600_000 });
  await Deno.writeTextFile(file, `${lines.map(dayAgo).join("\n")}\n`);
  const expired = { status: "expired", memories: [] };
  assertEquals(await tasks(), { notAsked: [], tasks: [undefined, expired, expired, expired] });
  const text = await statusText(env, dir.path, { session: SESSION });
  assertEquals(text.includes("task not asked"), false, text);
  const flat = text.replace(/\s+/g, " ");
  assertEquals(
    flat.match(/expired \(the server keeps finished tasks 24 h, failed ones 7 days\)/g)?.length,
    3,
  );

  fake.fault({ route: "GET /api/v1/tasks/*", status: 503 }); // their own route busy as well
  assertEquals(await tasks(), {
    notAsked: [`the tasks of 3 commit(s) of ${SESSION}`],
    tasks: [undefined, undefined, undefined, undefined],
  });
});

Deno.test("status --session with an id nothing is known of: says so and points to --all, exit 1", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  await sessionTurns(env, dir.path)("how should I indent TypeScript here?"); // a session that does exist
  for (const args of [["--session", "nosuch-session"], ["--session", "nosuch-session", "--json"]]) {
    const r = await runIn(env, ["status", ...args]);
    assertEquals([r.code, r.stdout], [1, ""], r.stdout);
    assertMatch(r.stderr, /no ledger or state .*nosuch-session/);
    assertStringIncludes(r.stderr, `\`${commandName(env)} status --all\``);
  }
  assertEquals((await collectStatus(env, dir.path, { session: SESSION })).sessions.length, 1);
  const both = await runIn(env, ["status", "--session", SESSION, "--all"]);
  assertEquals([both.code, both.stderr], [
    2,
    "openviking-kimi status: --session and --all exclude each other; give one of them.\n",
  ]);
  // A session with state but nothing in the ledger (a start with an empty queue) is known: shown, no age.
  const other = "session_5747a705-0000-4000-8000-0000000000ff";
  const start = { hook_event_name: "SessionStart", session_id: other, cwd: dir.path, source: "startup" };
  await hookIn("session-start", { env, stdin: JSON.stringify(start) });
  const text = await statusText(env, dir.path, { session: other });
  assertMatch(text, new RegExp(`${other} — no hook run in the ledger`));
});

Deno.test("doctor after `install --url` of another server: the writes queued for the first are said to wait for it, with the replay that sends them there", async () => {
  await using dir = await tempDir();
  await using first = await FakeOpenViking.start();
  await using other = await FakeOpenViking.start();
  const env = statusEnv(dir.path, first.url);
  first.fault({ route: "*", drop: true }); // the first server is away for the turn
  await placeJournal(
    dir.path,
    SESSION,
    new JournalBuilder().simpleTurn("what is our CI", "CI only").toString(),
  );
  await runHook(env, dir.path, "stop", "Stop");
  const moved = { ...env, OPENVIKING_URL: other.url }; // as after `install --url` of the other server
  const r = await runIn(moved, ["doctor", "--json"]);
  type Check = { id: string; status: string; summary: string; fix?: string };
  const checks = Object.fromEntries((JSON.parse(r.stdout).checks as Check[]).map((c) => [c.id, c]));
  const replayThere = `\`OPENVIKING_URL=${first.url} ${commandName(moved)} replay\``;
  const { queue: q, captures: c } = checks;
  assertEquals([q.status, c.status], ["warn", "warn"], `${q.summary}\n${c.summary}`);
  assertStringIncludes(q.summary, `for another server or identity (OPENVIKING_URL=${first.url})`);
  assertTrue(!q.summary.includes(other.url), `names the server the writes are not for: ${q.summary}`);
  assertStringIncludes(q.fix ?? "", replayThere);
  assertTrue(!/nothing to do|next turn/.test(q.fix ?? ""), q.fix);
  // Said once: the captures check points to the queue's, with no fix of its own.
  assertStringIncludes(c.summary, `its writes wait for another server or identity, as the queue check says`);
  assertTrue(!c.summary.includes(other.url), c.summary);
  assertEquals(c.fix, undefined);
});

Deno.test("status: a failed queue replay is the error of the sessions whose writes still wait, of no other", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  const now = Date.now();
  const [fine, waits] = ["session_fine-0001", "session_waits-0002"];
  await ledgerLine(dir.path, fine, { at: now - 600_000, sent: 2 });
  await ledgerLine(dir.path, waits, { at: now - 900_000, sent: 2 });
  await enqueueMessages(`${dir.path}/.openviking/pending`, `kc-${waits}`, [{ role: "user", content: "hi" }]);
  // A session start's replay met a server that took the connection and hung (an older entry: no reason).
  const hung = { kind: "unreachable", status: 0, message: "", code: "TIMEOUT" } as const;
  const replay = { kind: "replay" as const, replayed: 0, messages: 0, deferred: 0, commitTasks: [] };
  await ledgerLine(dir.path, REPLAY_FILE, { ...replay, at: now - 60_000, cause: hung });
  const st = await collectStatus(env, dir.path);
  const [f, w] = [fine, waits].map((id) => st.sessions.find((s) => s.kimiSessionId === id)!);
  assertEquals([f.lastError, f.lastActivity], [undefined, now - 600_000], "nothing of it waited: untouched");
  assertEquals(w.lastActivity, now - 900_000, "a failed replay is no activity of the session");
  assertEquals([w.lastError?.at, w.lastError?.kind], [now - 60_000, "unreachable"]);
  assertMatch(w.lastError!.message, /does not answer in time: no reason was recorded$/);
  assertMatch(w.lastError!.fix, /check the server's log/);
  const text = await statusText(env, dir.path);
  assertEquals(text.match(/last error/g)?.length, 1, text);
});

Deno.test("status: a session start's replay that failed keeps why, its code and its reason, for the advice", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url);
  await enqueueMessages(`${dir.path}/.openviking/pending`, `kc-${SESSION}`, [{
    role: "user",
    content: "hi",
  }]);
  fake.fault({ route: "*", drop: true });
  await runHook(env, dir.path, "session-start", "SessionStart", { source: "startup" });
  const cause = (await replayLedger(dir.path))[0]?.cause;
  assertEquals(cause?.kind, "unreachable");
  assertTrue(cause?.code !== undefined && cause.message !== "", JSON.stringify(cause));
  fake.clearFaults();
  await ledgerLine(dir.path, SESSION, { at: 1, queued: 1 });
  const e = (await ours(env, dir.path)).lastError!;
  assertMatch(e.message, new RegExp(`^OpenViking at ${fake.url} is not reachable: ${cause.message}`));
  // A prompt's search that met the server's model down: the model's words and the server's fix, not the key's.
  fake.fault(MODEL_DOWN);
  await runHook(env, dir.path, "user-prompt-submit", "UserPromptSubmit", { prompt: "how is it built?" });
  const m = (await ours(env, dir.path)).lastError!;
  assertEquals(m.kind, "model");
  assertMatch(m.message, new RegExp(`^OpenViking at ${fake.url} answers, but its model is unreachable`));
  assertMatch(m.fix, /^on the server, check ov\.conf's embedding section/);
  assertMatch(await statusText(env, dir.path), /last error .*: OpenViking at \S+ answers, but its\s+model/);
});

Deno.test("status against another server than the one that made a commit: says so, never `expired`", async () => {
  await using dir = await tempDir();
  await using made = await FakeOpenViking.start();
  await using other = await FakeOpenViking.start();
  await sessionTurns(statusEnv(dir.path, made.url), dir.path)("how should I indent TypeScript here?");
  const env = statusEnv(dir.path, other.url); // as after `install --url` of another server
  const [c] = (await ours(env, dir.path)).commits;
  assertEquals([c.outcome, c.origin?.url, c.task], ["committed", made.url, undefined]);
  assertEquals(other.requests.filter((r) => r.path.startsWith("/api/v1/tasks/")).length, 0, "not asked");
  const text = await statusText(env, dir.path);
  assertMatch(text.replace(/\s+/g, " "), new RegExp(`made on ${made.url}, not on this server: not asked`));
  assertTrue(!text.includes("expired"), text);
  // The same server under another user: another identity.
  const carol = statusEnv(dir.path, made.url, { OPENVIKING_ACCOUNT: "acme", OPENVIKING_USER: "carol" });
  assertMatch((await statusText(carol, dir.path)).replace(/\s+/g, " "), /made on .* as another identity/);
});

Deno.test("status under balanced: captures that wait for a commit, and when the idle watch commits them", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = statusEnv(dir.path, fake.url, {
    OPENVIKING_COMMIT_POLICY: "balanced",
    OPENVIKING_IDLE_COMMIT_SECONDS: "600",
  });
  await sessionTurns(env, dir.path)("how should I indent TypeScript here?");
  assertEquals(fake.sessions.get(`kc-${SESSION}`)?.commits ?? 0, 0, "one short turn: no commit yet");
  const state = await readState(`${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`);
  const s = await ours(env, dir.path);
  assertEquals(s.uncommitted, { messages: 2, dueAt: state.lastCaptureAt! + 600_000 });
  const text = (await statusText(env, dir.path)).replace(/\s+/g, " ");
  assertMatch(text, /2 message\(s\) wait for a commit: due in (9|10) min \(idle since the last capture\)/);

  // The watch's commit is in the ledger as a capture of no turns: a commit, not a capture run.
  const idle = { at: Date.now(), event: "idle", turns: 0, commit: "committed", taskId: "task-idle" };
  await ledgerLine(dir.path, SESSION, idle);
  const after = await ours(env, dir.path);
  assertEquals([after.captures.runs, after.captures.turns, after.commits.map((c) => c.outcome)], [
    1,
    1,
    ["committed"],
  ]);
  const done = await statusText(env, dir.path);
  assertMatch(done, /commit \d+ s ago: committed \(task task-idl\)/);
});

Deno.test("status: the idle watch's commit, after `install --url` of another server, is said made on the first", async () => {
  await using dir = await tempDir();
  await using made = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, made.url, {
    OPENVIKING_COMMIT_POLICY: "balanced",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_IDLE_COMMIT_SECONDS: "1",
  });
  await placeJournal(
    dir.path,
    SESSION,
    new JournalBuilder().simpleTurn("a short question", "done").toString(),
  );
  const stdin = JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: dir.path });
  await hookIn("stop", { env: { ...env, [WORKER_ENV]: "1" }, stdin }); // its watch commits once idle
  assertEquals(made.sessions.get(`kc-${SESSION}`)?.commits, 1);
  const other = statusEnv(dir.path, "http://127.0.0.1:9");
  const [c] = (await ours(other, dir.path)).commits;
  assertEquals([c.outcome, c.origin?.url], ["committed", made.url]);
});
