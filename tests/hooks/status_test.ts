/**
 * `status` in-process (collectStatus, renderStatus) after scripted sessions run in-process: prompts, captures
 * whose commits' tasks complete or fail, writes queued while the server is down, replays; the commands through
 * the command table (tests/cli/in-process.ts), doctor too.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, MODEL_DOWN } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { enqueueMessages, range } from "../support/queue.ts";
import { destinationFor, SessionQueue } from "../../openviking/queue.ts";
import { collectStatus, renderStatus } from "../../cli/status.ts";
import { WIDTH } from "../../lib/columns.ts";
import {
  appendLedger,
  type LedgerEntry,
  readLedger,
  REPLAY_FILE,
  type ReplayEntry,
} from "../../memory/ledger.ts";
import { commandName } from "../../lib/self.ts";
import { DUPLICATE_WINDOW_MS } from "../../memory/prompt.ts";
import { doctorChecks, world } from "./world.ts";

/** A world whose captures are over when their hook exits; `ask` more over its environment. */
async function statusWorld(env: Record<string, string> = {}) {
  const w = await world({ env: { OPENVIKING_TIMEOUT_MS: "1500", ...env } });
  const ledger = `${w.home}/.openviking/ledger/kimicode`;
  return Object.assign(w, {
    ledger,
    /** The status of the world's session, in `env`. */
    ours: async (e = w.env) =>
      (await collectStatus(e, w.home)).sessions.find((x) => x.kimiSessionId === w.session)!,
    /** The status screen: its lines within the screen width. */
    async text(e = w.env, choice = {}) {
      const text = renderStatus(await collectStatus(e, w.home, choice), Date.now());
      for (const line of text.split("\n")) {
        assertTrue([...line].length <= WIDTH, `wider than ${WIDTH}: ${line}`);
      }
      return text;
    },
    /** One turn: its prompt, the journal with it, then Stop (capture and commit); when its Stop ran. */
    async turn(text: string): Promise<[number, number]> {
      await w.run("user-prompt-submit", { prompt: text });
      await w.say(text);
      const from = Date.now();
      await w.hook("stop");
      return [from, Date.now()];
    },
    /** Appends `entry` to `name`'s ledger (a capture of one stopped turn unless it says otherwise). */
    async ledgerLine(name: string, entry: Partial<LedgerEntry> & { at: number }) {
      const capture = { kind: "capture", ms: 5, event: "stop", turns: 1, sent: 0, queued: 0, rejected: 0 };
      const line = { ...capture, commit: "none", ...entry } as LedgerEntry;
      assertTrue(await appendLedger(ledger, name, line, { ledgerMaxBytes: 8 << 20, ledgerMaxAgeDays: 30 }));
    },
    /** The replay entries of the replay ledger (every replay that sent something records one). */
    replays: async () =>
      (await readLedger(ledger, REPLAY_FILE)).filter((e): e is ReplayEntry => e.kind === "replay"),
  });
}
const within = (at: number | undefined, [from, to]: [number, number]) =>
  at !== undefined && from <= at && at <= to;
const flat = (text: string) => text.replace(/\s+/g, " ");

Deno.test("status: every field after a scripted session, with the server down and back (its backlog replayed)", async () => {
  // The configured account and user: status shows them while the server cannot be asked.
  await using w = await statusWorld({ OPENVIKING_ACCOUNT: "acme", OPENVIKING_USER: "carol" });
  const { fake, session } = w;
  const stops = [await w.turn("how should I indent TypeScript here?")]; // commit → task completed, one memory
  fake.taskOutcome = "failed";
  stops.push(await w.turn("and what about the tests folder?")); // commit → task failed
  fake.fault({ route: "*", drop: true }); // the server goes away
  stops.push(await w.turn("remember that the build runs in CI only")); // queued, with its commit

  const down = await collectStatus(w.env, w.home);
  const c = down.connection;
  const asked = [c.reachable, c.authenticated, c.account, c.user, c.serverVersion];
  assertEquals(asked, [false, null, "acme", "carol", undefined]);
  assertMatch(c.problem!.fix, /start the server|install --url/);
  assertEquals(c.peer, { id: w.home.replace(/[^A-Za-z0-9]/g, "-"), source: "cwd" });
  assertTrue(down.notAsked.includes("whether the key is accepted"));
  assertTrue(down.notAsked.some((x) => x.includes(session)), "says it could not ask for the tasks");
  const d = down.sessions.find((s) => s.kimiSessionId === session)!;
  // The first prompt shows the fake's one memory; the second finds it again and leaves it out; the third
  // (server down) gets nothing.
  assertEquals(d.prompts, { seen: 3, injected: 1, suppressed: 1, lastPath: "failed" });
  assertEquals([d.captures.runs, d.captures.turns, d.captures.sent, d.captures.queued], [3, 3, 4, 2]);
  const outcomes = [["committed", undefined], ["committed", undefined], ["queued", undefined]];
  assertEquals(d.commits.map((c) => [c.outcome, c.task?.status]), outcomes);
  assertEquals(d.commits.map((c, i) => within(c.at, stops[i])), [true, true, true], "each commit's time");
  assertEquals(d.queue, { entries: 2, messages: 2, commits: 1 });
  assertEquals(d.lastError?.kind, "unreachable");
  assertTrue(within(d.lastError?.at, stops[2]), "the error of the third turn's capture");
  assertMatch(d.lastError!.message, new RegExp(`^OpenViking at ${fake.url} is not reachable`));
  assertMatch(d.lastError!.fix, /writes wait in the queue/);
  const q = down.queue;
  assertEquals([q.entries, q.messages, q.commits, q.sessions], [2, 2, 1, 1]);
  assertTrue(within(q.oldest, stops[2]), "the oldest queued write is the third turn's");
  assertStringIncludes(q.nextReplay, `; now: \`${commandName(w.env)} replay\``);

  fake.clearFaults(); // back
  fake.taskOutcome = "completed";
  // Doctor names the replay (or the next turn), not the server.
  const { server, captures } = (await doctorChecks(w.env)).checks;
  assertEquals([server.status, captures.status], ["ok", "warn"]);
  assertMatch(
    captures.summary,
    /the server answers now, and 2 message\(s\), 1 commit\(s\) wait in the queue/,
  );
  assertTrue(!/start the server/.test(captures.fix ?? ""), captures.fix);
  assertMatch(captures.fix!, /next turn/);
  assertStringIncludes(captures.fix!, `\`${commandName(w.env)} replay\``);
  const up = await collectStatus(w.env, w.home);
  const u = up.connection;
  // Asked: the server's version, and the user its key belongs to (the fake's is "default").
  const known = [u.reachable, u.authenticated, u.account, u.user, u.serverVersion, up.notAsked];
  assertEquals(known, [true, true, "acme", "default", "0.5.2-fake", []]);
  assertEquals(
    (await w.ours()).commits.map((c) => [c.outcome, c.task?.status, c.task?.error, c.task?.memories]),
    [
      ["committed", "completed", undefined, [fake.memoryAdds[0].uri]],
      ["committed", "failed", fake.taskError, []],
      ["queued", undefined, undefined, undefined],
    ],
  );
  // The next turn's capture replays the session's backlog first (the queued commit goes out with a task of its
  // own), then sends and commits its own; tasks OpenViking has not finished: their state as it is, no memories.
  fake.taskOutcome = "running";
  stops.push(await w.turn("is the cache shared between jobs?"));
  fake.taskOutcome = "pending";
  stops.push(await w.turn("and between branches?"));
  const replayed = [...fake.tasks.keys()][2];
  assertEquals((await w.replays()).map((e) => e.commitTasks), [[{ sessionId: w.ov, taskId: replayed }]]);
  const busy = await collectStatus(w.env, w.home);
  assertEquals([busy.queue.entries, busy.queue.oldest], [0, undefined]);
  const b = busy.sessions.find((s) => s.kimiSessionId === session)!;
  const running = { status: "running", memories: [] };
  assertEquals(b.commits.slice(2).map((c) => [c.outcome, c.waiting, c.replayedAt !== undefined, c.task]), [
    ["queued", false, true, running],
    ["committed", undefined, false, running],
    ["committed", undefined, false, { status: "pending", memories: [] }],
  ]);
  assertEquals(b.commits.map((c) => c.taskId === replayed), [false, false, true, false, false]);
  assertEquals([b.captures.queued, b.lastError], [0, undefined], "the error is over once a capture worked");
  const delivered = (await doctorChecks(w.env)).checks.captures;
  assertEquals(delivered.status, "ok", delivered.summary);
  assertEquals(b.commits.slice(-2).map((c, i) => within(c.at, stops[3 + i])), [true, true]);
  const text = await w.text();
  assertMatch(text, new RegExp(session));
  assertMatch(text, /queued, delivered by a replay/);
  assertTrue(!text.includes("waits in the queue") && !text.includes("last error"), text);
  assertMatch(text, /captured 5 turn\(s\): 10 message\(s\) delivered, 0 queued/);
  assertMatch(text, /\(task task-kc-\), running\n.*\(task task-kc-\), pending\n/);
});

Deno.test("status: a turn still open at one Stop and captured at the next is counted once; kept prompts (no journal) count too, refused ones as refused", async () => {
  await using w = await statusWorld();
  const j = new JournalBuilder().simpleTurn("first question about the deploy script", "the first answer");
  j.prompt("second question about the deploy script").stepBegin().text("the second answer").stepEnd(
    "end_turn",
  );
  for (const text of [j.toString(), j.ended().toString(), j.toString()]) { // its end not on disk yet; then nothing new
    await w.journal(text);
    await w.hook("stop");
  }
  const s = await w.ours();
  assertEquals(w.stored().length, 4, "both turns stored");
  assertEquals([s.captures.turns, s.captures.sent], [2, 4], "each turn counted once, when it is captured");

  await using k = await statusWorld();
  await k.run("user-prompt-submit", { prompt: "where does the deploy script live?" });
  await k.hook("stop"); // no wire.jsonl anywhere: the kept prompt is the turn
  assertEquals(k.fake.messages(k.ov).map((m) => m.content), ["where does the deploy script live?"]);
  const kept = (await k.ours()).captures;
  assertEquals([kept.runs, kept.turns, kept.sent], [1, 1, 1]);
  // Refused for good, a kept prompt is counted as refused (and kept), not as delivered nor left out.
  k.fake.fault({
    route: "POST /api/v1/sessions/:id/*",
    status: 400,
    error: { message: "content: too long" },
  });
  await k.run("user-prompt-submit", { prompt: "and the staging one?" });
  await k.hook("stop");
  const after = await k.ours();
  const a = after.captures;
  assertEquals([a.runs, a.turns, a.sent, a.rejected], [2, 2, 1, 1]);
  assertEquals(after.rejected, { entries: 2, messages: 1, commits: 1 });
});

Deno.test("status: the prompts of a session that never reached a Stop, delivered by another session's start, are counted as its capture", async () => {
  await using w = await statusWorld();
  await w.run("user-prompt-submit", { prompt: "where is the deploy key?" });
  // Its Kimi died before the turn reached a Stop (`kimi -p … | head`), minutes ago.
  const file = w.stateFile(`${w.session}.prompt`);
  const state = JSON.parse(await Deno.readTextFile(file));
  const ago = Date.now() - 10 * 60_000;
  state.fallbackPrompts = state.fallbackPrompts.map((p: { at: number }) => ({ ...p, at: ago }));
  await Deno.writeTextFile(file, JSON.stringify(state));
  await Deno.utime(file, new Date(ago), new Date(ago));
  await w.hook("session-start", { source: "startup" }, "session_next-0001");
  assertEquals(w.fake.messages(w.ov).map((m) => m.content), ["where is the deploy key?"]);
  const s = await w.ours();
  assertEquals([s.captures.turns, s.captures.sent], [1, 1], "what reached OpenViking is in the ledger");
});

Deno.test("status after `openviking-kimi replay`: the queued commit delivered by it, with or without its record", async () => {
  await using w = await statusWorld();
  w.fake.fault({ route: "*", drop: true }); // the server is away: the turn and its commit are queued
  await w.turn("remember that the build runs in CI only");
  w.fake.clearFaults();
  assertEquals((await w.cli("replay")).code, 0);
  const [taskId] = [...w.fake.tasks.keys()];
  const replays = await w.replays();
  const ledgered = [[2, 2, [{ sessionId: w.ov, taskId }]]];
  assertEquals(replays.map((e) => [e.replayed, e.messages, e.commitTasks]), ledgered, "in the replay ledger");
  const commit = async () =>
    (await w.ours()).commits.map((c) => [c.outcome, c.waiting, c.replayedAt, c.taskId, c.task?.status]);
  assertEquals(
    await commit(),
    [["queued", false, replays[0].at, taskId, "completed"]],
    "no second `server` one",
  );
  const text = await w.text();
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
  await Deno.remove(`${w.ledger}/${REPLAY_FILE}.jsonl`);
  assertEquals(await commit(), [["queued", false, undefined, taskId, "completed"]]);
  const missed = await w.text();
  assertMatch(missed, /queued, since delivered \(task task-kc-/);
  assertEquals(missed.includes("waits in the queue"), false, missed);
});

Deno.test("status asks a session's task list once: a commit it leaves out is one the server no longer lists", async () => {
  await using w = await statusWorld();
  const { fake, session } = w;
  for (const n of ["first", "second"]) await w.turn(`${n} question about the deploy script`);
  fake.requests.length = 0;
  const tasks = async () => {
    const st = await collectStatus(w.env, w.home, { session });
    return { notAsked: st.notAsked, tasks: st.sessions[0].commits.map((c) => c.task) };
  };
  const done = { status: "completed", memories: [fake.memoryAdds[0].uri] };
  assertEquals(await tasks(), { notAsked: [], tasks: [done, done] });
  // The session's one list asks for 200 (the server's default, 50, would leave a long session's out); the
  // other list is the extraction alarm's, of every session; no task is asked by its id.
  const lists = fake.requestsTo("GET /api/v1/tasks").filter((r) => r.query.resource_id);
  assertEquals(lists.map((r) => r.query.limit), ["200"]);
  assertEquals(fake.requests.filter((r) => r.path.startsWith("/api/v1/tasks/")), []);

  fake.fault({ route: "GET /api/v1/tasks", raw: { status: 200, body: '{"status":"ok","result":[]}' } });
  const unlisted = { status: "unlisted", memories: [] };
  assertEquals(await tasks(), { notAsked: [], tasks: [unlisted, unlisted] });
  const text = flat(await w.text(w.env, { session }));
  assertEquals(text.match(/the server no longer lists it/g)?.length, 2, text);
  assertEquals(text.includes("task not asked"), false, text);
});

Deno.test("status --session with an id nothing is known of: says so and points to status, exit 1", async () => {
  await using w = await statusWorld();
  await w.turn("how should I indent TypeScript here?"); // a session that does exist
  for (const args of [["--session", "nosuch-session"], ["--session", "nosuch-session", "--json"]]) {
    const r = await w.cli("status", ...args);
    assertEquals([r.code, r.stdout], [1, ""], r.stdout);
    assertMatch(r.stderr, /no ledger or state .*nosuch-session/);
    assertStringIncludes(r.stderr, `\`${commandName(w.env)} status\` lists the newest sessions`);
  }
  assertEquals((await collectStatus(w.env, w.home, { session: w.session })).sessions.length, 1);
  // A session with state but nothing in the ledger (a start with an empty queue) is known: shown, no age.
  const other = "session_5747a705-0000-4000-8000-0000000000ff";
  await w.hook("session-start", { source: "startup" }, other);
  assertMatch(await w.text(w.env, { session: other }), new RegExp(`${other} — no hook run in the ledger`));
});

Deno.test("doctor after `install --url` of another server: the writes queued for the first are said to wait for it, with the replay that sends them there", async () => {
  await using w = await statusWorld();
  await using other = await FakeOpenViking.start();
  w.fake.fault({ route: "*", drop: true }); // the first server is away for the turn
  await w.say("what is our CI", "CI only");
  await w.hook("stop");
  const moved = { OPENVIKING_URL: other.url }; // as after `install --url` of the other server
  const { queue: q, captures: c } = (await doctorChecks({ ...w.env, ...moved })).checks;
  const replayThere = `\`OPENVIKING_URL=${w.fake.url} ${commandName({ ...w.env, ...moved })} replay\``;
  assertEquals([q.status, c.status], ["warn", "warn"], `${q.summary}\n${c.summary}`);
  assertStringIncludes(q.summary, `for another server or identity (OPENVIKING_URL=${w.fake.url})`);
  assertTrue(!q.summary.includes(other.url), `names the server the writes are not for: ${q.summary}`);
  assertStringIncludes(q.fix ?? "", replayThere);
  assertTrue(!/nothing to do|next turn/.test(q.fix ?? ""), q.fix);
  // Said once: the captures check points to the queue's, with no fix of its own.
  assertStringIncludes(c.summary, `its writes wait for another server or identity, as the queue check says`);
  assertTrue(!c.summary.includes(other.url), c.summary);
  assertEquals(c.fix, undefined);
});

Deno.test("status: a failed queue replay is the error of the sessions whose writes still wait, of no other", async () => {
  await using w = await statusWorld();
  const now = Date.now();
  const [fine, waits] = ["session_fine-0001", "session_waits-0002"];
  await w.ledgerLine(fine, { at: now - 600_000, sent: 2 });
  await w.ledgerLine(waits, { at: now - 900_000, sent: 2 });
  await enqueueMessages(w.pending, `kc-${waits}`, [{ role: "user", content: "hi" }]);
  // A session start's replay met a server that took the connection and hung (an older entry: no reason).
  const hung = { kind: "unreachable", status: 0, message: "", code: "TIMEOUT" } as const;
  const replay = { kind: "replay" as const, replayed: 0, messages: 0, deferred: 0, commitTasks: [] };
  await w.ledgerLine(REPLAY_FILE, { ...replay, at: now - 60_000, cause: hung });
  const st = await collectStatus(w.env, w.home);
  const [f, s] = [fine, waits].map((id) => st.sessions.find((s) => s.kimiSessionId === id)!);
  assertEquals([f.lastError, f.lastActivity], [undefined, now - 600_000], "nothing of it waited: untouched");
  assertEquals(s.lastActivity, now - 900_000, "a failed replay is no activity of the session");
  assertEquals([s.lastError?.at, s.lastError?.kind], [now - 60_000, "unreachable"]);
  assertMatch(s.lastError!.message, /does not answer in time: no reason was recorded$/);
  assertMatch(s.lastError!.fix, /check the server's log/);
  assertEquals((await w.text()).match(/last error/g)?.length, 1);
});

Deno.test("status: a session start's replay that failed keeps why, its code and its reason, for the advice", async () => {
  await using w = await statusWorld();
  await enqueueMessages(w.pending, w.ov, [{ role: "user", content: "hi" }]);
  w.fake.fault({ route: "*", drop: true });
  await w.hook("session-start", { source: "startup" });
  const cause = (await w.replays())[0]?.cause;
  assertEquals(cause?.kind, "unreachable");
  assertTrue(cause?.code !== undefined && cause.message !== "", JSON.stringify(cause));
  w.fake.clearFaults();
  await w.ledgerLine(w.session, { at: 1, queued: 1 });
  const e = (await w.ours()).lastError!;
  assertMatch(e.message, new RegExp(`^OpenViking at ${w.fake.url} is not reachable: ${cause.message}`));
  // A prompt's search that met the server's model down: the model's words and the server's fix, not the key's.
  w.fake.fault(MODEL_DOWN);
  await w.run("user-prompt-submit", { prompt: "how is it built?" });
  const m = (await w.ours()).lastError!;
  assertEquals(m.kind, "model");
  assertMatch(m.message, new RegExp(`^OpenViking at ${w.fake.url} answers, but its model is unreachable`));
  assertMatch(m.fix, /^on the server, check ov\.conf's embedding section/);
  assertMatch(await w.text(), /last error .*: OpenViking at \S+ answers, but its\s+model/);
});

Deno.test("status against another server than the one that made a commit: says so, never unlisted", async () => {
  await using w = await statusWorld();
  await using other = await FakeOpenViking.start();
  await w.turn("how should I indent TypeScript here?");
  const env = { ...w.env, OPENVIKING_URL: other.url }; // as after `install --url` of another server
  const [c] = (await w.ours(env)).commits;
  assertEquals([c.outcome, c.origin?.url, c.task], ["committed", w.fake.url, undefined]);
  assertEquals(other.requests.filter((r) => r.path.startsWith("/api/v1/tasks/")).length, 0, "not asked");
  const listed = other.requests.filter((r) => r.path === "/api/v1/tasks" && r.query.resource_id);
  assertEquals(listed.length, 0, "nor its task list: it holds none of the session's commits");
  // That other server down: what it could not be asked never names the commits it would not be asked anyway.
  const gone = await FakeOpenViking.start();
  await gone.close();
  const down = await collectStatus({ ...w.env, OPENVIKING_URL: gone.url }, w.home);
  assertEquals(down.notAsked.filter((x) => x.includes(w.session)), [], down.notAsked.join("; "));
  const text = await w.text(env);
  assertMatch(flat(text), new RegExp(`made on ${w.fake.url}, not on this server: not asked`));
  assertTrue(!text.includes("no longer lists"), text);
  // The same server under another user: another identity.
  const carol = { ...w.env, OPENVIKING_ACCOUNT: "acme", OPENVIKING_USER: "carol" };
  assertMatch(flat(await w.text(carol)), /made on .* as another identity/);
});

Deno.test("status under balanced: captures that wait for a commit, by server after a move from A to B, and when the idle watch commits them", async () => {
  await using w = await statusWorld({
    OPENVIKING_COMMIT_POLICY: "balanced",
    OPENVIKING_IDLE_COMMIT_SECONDS: "600",
  });
  await using b = await FakeOpenViking.start();
  await w.turn("how should I indent TypeScript here?"); // on A: 2 messages, uncommitted
  assertEquals(w.commits(), 0, "one short turn: no commit yet");
  const state = await w.state();
  assertEquals((await w.ours()).uncommitted, { messages: 2, dueAt: state.lastCaptureAt! + 600_000 });
  const due = /2 message\(s\) wait for a commit: due in (9|10) min \(idle since the last capture\)/;
  assertMatch(flat(await w.text()), due);

  const onB = { ...w.env, OPENVIKING_URL: b.url }; // as after `install --url` of B
  await w.say("and which line width?");
  w.fake.fault({ route: "*", drop: true }); // A unreachable from now on: its queue waits
  await w.run("stop", {}, { OPENVIKING_URL: b.url });
  assertEquals(b.messages(w.ov).length, 2, "B took the second turn");
  const u = (await w.ours(onB)).uncommitted!;
  assertEquals(u.messages, 4);
  assertEquals(u.elsewhere, [{ messages: 2, where: `OPENVIKING_URL=${w.fake.url}` }]);
  const text = flat(await w.text(onB));
  assertMatch(text, /4 message\(s\) wait for a commit: due in/);
  assertStringIncludes(
    text,
    `2 of them are for another server or identity (OPENVIKING_URL=${w.fake.url}): a session there commits them`,
  );

  // The watch's commit is in the ledger as a capture of no turns: a commit, not a capture run.
  await w.ledgerLine(w.session, {
    at: Date.now(),
    event: "idle",
    turns: 0,
    commit: "committed",
    taskId: "task-idle",
  });
  const after = await w.ours(onB);
  assertEquals([after.captures.runs, after.captures.turns, after.commits.map((c) => c.outcome)], [2, 2, [
    "committed",
  ]]);
  assertMatch(await w.text(onB), /commit \d+ s ago: committed \(task task-idl\)/);
});

Deno.test("status: a prompt whose recall failed says why in its ledger line and in status", async () => {
  const key = "sk-quoted-back-4711";
  await using w = await world({ env: { OPENVIKING_API_KEY: key } });
  const { fake } = w;
  const prompt = (text: string, more = {}) => w.run("user-prompt-submit", { prompt: text }, more);
  const ledgerFile = `${w.home}/.openviking/ledger/kimicode/${w.session}.jsonl`;
  const ledger = async () =>
    (await Deno.readTextFile(ledgerFile)).trim().split("\n").map((l) => JSON.parse(l));
  const lastError = async () => {
    const r = await w.cli("status", "--json");
    assertEquals(r.code, 0, r.stderr);
    return JSON.parse(r.stdout).sessions.find((s: { kimiSessionId: string }) => s.kimiSessionId === w.session)
      ?.lastError;
  };

  // Every route answers 503, its message quoting the key back: the ledger keeps the failure, not the key.
  fake.fault({ route: "*", status: 503, error: { message: `overloaded, key ${key}` } });
  assertEquals(await prompt("how should I indent this file?"), "");
  fake.clearFaults();
  // The server is not there at all.
  assertEquals(await prompt("and the tests folder?", { OPENVIKING_URL: "http://127.0.0.1:9" }), "");
  const [busy, gone] = await ledger();
  assertEquals([busy.path, busy.failure?.kind, busy.failure?.status], ["none", "server", 503]);
  assertMatch(busy.failure.message, /overloaded, key \*\*\*/);
  assertEquals([gone.path, gone.failure?.kind, gone.failure?.status], ["none", "unreachable", 0]);
  assertMatch(gone.failure.message, /127\.0\.0\.1:9/);
  const error = await lastError();
  assertEquals(error?.kind, "unreachable");
  assertMatch(error?.fix ?? "", /start the server|install --url/);

  // The same prompt again, recall answering now: the failed recall was not kept for it, the memory prints.
  await new Promise((r) => setTimeout(r, DUPLICATE_WINDOW_MS)); // not the same hook fired twice
  assertMatch(await prompt("and the tests folder?"), /User prefers tabs/);
  assertEquals((await ledger())[2].failure, undefined);
  assertEquals((await Deno.readTextFile(ledgerFile)).includes(key), false);
});

Deno.test("status: a session's queue with server A's writes, then B's behind them, says which are whose", async () => {
  await using w = await statusWorld();
  const a = "http://127.0.0.1:9"; // the server before `install --url` of the world's
  await w.ledgerLine(w.session, { at: Date.now(), queued: 4 });
  const open = async (url: string) =>
    await SessionQueue.open(w.pending, w.ov, await destinationFor({ baseUrl: url }));
  await (await open(a)).messages(range(2));
  await (await open(w.fake.url)).messages(range(2, 2));

  const st = await collectStatus(w.env, w.home);
  const s = st.sessions.find((x) => x.kimiSessionId === w.session)!;
  assertEquals(s.queue, {
    entries: 2,
    messages: 4,
    commits: 0,
    elsewhere: [{ messages: 2, commits: 0, where: `OPENVIKING_URL=${a}` }],
  });
  assertEquals(
    st.queue.elsewhere?.summary,
    `2 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${a}); ` +
      "2 message(s), 0 commit(s) for this server wait behind them",
  );
  const text = flat(await w.text());
  assertStringIncludes(text, "waiting: 4 message(s), 0 commit(s) in the queue");
  assertStringIncludes(
    text,
    `2 message(s), 0 commit(s) of them for another server or identity (OPENVIKING_URL=${a}), sent only there`,
  );
});
