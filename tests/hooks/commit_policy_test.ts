/**
 * The commit policy (`OPENVIKING_COMMIT_POLICY`) through the hooks: what each Stop commits, that the server is
 * asked once per session to commit an idle session itself, and that a session start commits sessions left.
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { writeState } from "../../memory/state.ts";
import { IDLE_COMMIT_SECONDS } from "../../openviking/sessions.ts";
import { SESSION, world } from "./world.ts";

const OV = `kc-${SESSION}`;
const CONFIG = "PATCH /api/v1/sessions/:id/config";

/** A world under `policy`, and `turn`: one turn more in the journal, then its Stop. */
async function sandbox(policy: string) {
  const w = await world({ env: { OPENVIKING_COMMIT_POLICY: policy } });
  const journal = new JournalBuilder();
  const turn = async (user: string, assistant = "done, the tests pass") => {
    await w.journal(journal.simpleTurn(user, assistant).toString());
    await w.hook("stop");
  };
  return Object.assign(w, { turn });
}

Deno.test("balanced: short turns wait; the server is asked once to commit the idle session; SessionEnd commits", async () => {
  await using s = await sandbox("balanced");
  for (let i = 0; i < 3; i++) await s.turn(`question ${i} about the build`);
  assertEquals([s.stored().length, s.commits()], [6, 0], "three short turns: no extraction yet");
  const asked = s.fake.requestsTo(CONFIG);
  assertEquals(asked.length, 1, "once per session");
  assertEquals(asked[0].body, {
    auto_commit_policy: {
      idle_timeout_seconds: IDLE_COMMIT_SECONDS,
      pending_token_threshold: 0,
      message_count_threshold: 0,
    },
  });
  assertEquals(s.fake.sessions.get(OV)?.autoCommitPolicy?.idle_timeout_seconds, IDLE_COMMIT_SECONDS);
  await s.hook("session-end");
  assertEquals(s.commits(), 1);
  assertEquals((await s.state()).capturedSinceCommit, 0);
});

Deno.test("balanced: a Stop commits once enough text has gathered, and a turn that asks to remember at once", async () => {
  await using s = await sandbox("balanced");
  const long = "The retry counter now resets after every success; the backoff reads it. ".repeat(250);
  await s.turn("first long change", long);
  assertEquals(s.commits(), 0, "one long turn is not enough yet");
  await s.turn("second long change", long);
  assertEquals(s.commits(), 1, "two are");
  await s.turn("a short one");
  assertEquals(s.commits(), 1);
  await s.turn("Remember that we review every migration in pairs");
  assertEquals(s.commits(), 2, "the user asked to remember");
});

Deno.test("session-end: no Stop commits, however long; PreCompact and a failed turn do", async () => {
  await using s = await sandbox("session-end");
  const long = "A long explanation of the change and the tests that cover it. ".repeat(300);
  for (let i = 0; i < 3; i++) await s.turn(`long change ${i}`, long);
  await s.turn("Remember the staging port is 6543");
  assertEquals(s.commits(), 0);
  assertEquals(s.fake.requestsTo(CONFIG).length, 1, "the idle commit is still asked for");
  await s.hook("pre-compact");
  assertEquals(s.commits(), 1);
  await s.turn("one more question");
  await s.hook("stop-failure");
  assertEquals(s.commits(), 2);
});

Deno.test("every-turn: every Stop commits, and the server is never asked to commit by itself", async () => {
  await using s = await sandbox("every-turn");
  for (let i = 0; i < 2; i++) await s.turn(`question ${i}`);
  assertEquals(s.commits(), 2);
  assertEquals(s.fake.requestsTo(CONFIG).length, 0);
});

Deno.test("a server without the session config route: asked once, never again; the commits go on", async () => {
  await using s = await sandbox("balanced");
  s.fake.fault({ route: CONFIG, status: 405 });
  await s.turn("question one");
  await s.turn("question two");
  assertEquals(s.fake.requestsTo(CONFIG).length, 1);
  assertEquals((await s.state()).idleCommit, "unsupported");
  await s.hook("session-end");
  assertEquals(s.commits(), 1);
});

Deno.test("a session start commits another session left uncommitted since the idle time, not a recent one", async () => {
  await using s = await sandbox("balanced");
  await s.turn("a question in a session that will be killed");
  assertEquals(s.commits(), 0);
  // Each start is another session's (a start of the same session within 2 s is a repeat, ignored).
  const start = (n: number) => s.hook("session-start", {}, `session_7c0a1f5e-0000-0000-0000-00000000000${n}`);
  await start(1);
  assertEquals(s.commits(), 0, "its last capture is recent: it may go on");
  const left = await s.state();
  await writeState(s.stateFile(), { ...left, lastCaptureAt: Date.now() - IDLE_COMMIT_SECONDS * 1000 - 1000 });
  await start(2);
  assertEquals(s.commits(), 1);
  assertEquals((await s.state()).capturedSinceCommit, 0);
  await start(3);
  assertEquals(s.commits(), 1, "committed once");
});

Deno.test("every-turn: a session start reads no other session's state (its cost does not grow with the history)", async () => {
  await using s = await sandbox("every-turn");
  await s.turn("a question whose commit went through");
  assertEquals(s.commits(), 1);
  await s.hook("session-start", {}, "session_7c0a1f5e-0000-0000-0000-000000000008");
  // Even a state that says "uncommitted, idle long": under every-turn a failed commit waits in the queue,
  // so the catch-up (a read of every session's state) does not run.
  const left = await s.state();
  const idle = Date.now() - IDLE_COMMIT_SECONDS * 1000 - 1000;
  await writeState(s.stateFile(), { ...left, ovSession: OV, capturedSinceCommit: 1, lastCaptureAt: idle });
  await s.hook("session-start", {}, "session_7c0a1f5e-0000-0000-0000-000000000009");
  assertEquals(s.fake.requestsTo("POST /api/v1/sessions/:id/commit").length, 1, "no catch-up commit");
});

Deno.test("an interrupt commits and leaves the idle-commit request to a later capture (its budget is short)", async () => {
  await using s = await sandbox("balanced");
  const j = new JournalBuilder().prompt("first question, interrupted").stepBegin().text("half an answer");
  await s.journal(j.toString());
  await s.hook("interrupt");
  assertEquals([s.stored().length, s.commits()], [2, 1], "the open turn, committed");
  assertEquals(s.fake.requestsTo(CONFIG).length, 0, "not asked from the interrupt");
  await s.journal(j.ended("cancelled").simpleTurn("second question", "ok").toString());
  await s.hook("stop");
  assertEquals(s.fake.requestsTo(CONFIG).length, 1, "asked by the next Stop");
});
