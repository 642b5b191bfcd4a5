/**
 * The commit policy (`OPENVIKING_COMMIT_POLICY`) through the hooks: what each Stop commits, and that a session
 * start commits sessions left.
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { writeState } from "../../memory/state.ts";
import { SESSION, world } from "./world.ts";

const OV = `kc-${SESSION}`;
/** Longer than the default idle commit time (300 s). */
const LONG_IDLE_MS = 901_000;

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

Deno.test("balanced: a Stop commits once enough text has gathered, short turns wait, a turn that asks to remember commits at once; SessionEnd commits", async () => {
  await using s = await sandbox("balanced");
  const long = "The retry counter now resets after every success; the backoff reads it. ".repeat(250);
  await s.turn("first long change", long);
  assertEquals(s.commits(), 0, "one long turn is not enough yet");
  await s.turn("second long change", long);
  assertEquals(s.commits(), 1, "two are");
  for (let i = 0; i < 3; i++) await s.turn(`question ${i} about the build`);
  assertEquals([s.stored().length, s.commits()], [10, 1], "three short turns: no extraction yet");
  await s.turn("Remember that we review every migration in pairs");
  assertEquals(s.commits(), 2, "the user asked to remember");
  await s.turn("a short one");
  await s.hook("session-end");
  assertEquals(s.commits(), 3);
  assertEquals((await s.state()).capturedSinceCommit, 0);
});

Deno.test("session-end: no Stop commits, however long; PreCompact and a failed turn do", async () => {
  await using s = await sandbox("session-end");
  const long = "A long explanation of the change and the tests that cover it. ".repeat(300);
  for (let i = 0; i < 3; i++) await s.turn(`long change ${i}`, long);
  await s.turn("Remember the staging port is 6543");
  assertEquals(s.commits(), 0);
  await s.hook("pre-compact");
  assertEquals(s.commits(), 1);
  await s.turn("one more question");
  await s.hook("stop-failure");
  assertEquals(s.commits(), 2);
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
  await writeState(s.stateFile(), { ...left, lastCaptureAt: Date.now() - LONG_IDLE_MS });
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
  const idle = Date.now() - LONG_IDLE_MS;
  await writeState(s.stateFile(), { ...left, ovSession: OV, capturedSinceCommit: 1, lastCaptureAt: idle });
  await s.hook("session-start", {}, "session_7c0a1f5e-0000-0000-0000-000000000009");
  assertEquals(s.fake.requestsTo("POST /api/v1/sessions/:id/commit").length, 1, "no catch-up commit");
});
