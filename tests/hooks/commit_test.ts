/**
 * When a session is committed, in-process against the fake: the commit policy at each Stop, a session start's
 * catch-up, the idle watch (one per home and destination; through the entry point: detach_process_test.ts).
 */

import { assertEquals, assertTrue as assert } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { withLock } from "../../lib/lock.ts";
import { readLedger } from "../../memory/ledger.ts";
import { readState, writeState } from "../../memory/state.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { sessionDestination } from "../../memory/context.ts";
import { loadConfig } from "../../openviking/config.ts";
import { world } from "./world.ts";

const A = "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000a1";
const B = "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000b2";
const ov = (s: string) => `kc-${s}`;
/** Longer than the default idle commit time (300 s), and one a watch waits out in a tenth of a second. */
const [LONG_IDLE_MS, SHORT_IDLE] = [901_000, "0.1"];

/** A world under `policy` (idle after `idle` seconds when given). */
async function sandbox(policy: string, idle?: string) {
  const env = { OPENVIKING_COMMIT_POLICY: policy, ...(idle ? { OPENVIKING_IDLE_COMMIT_SECONDS: idle } : {}) };
  const w = await world({ env });
  const stateDir = `${w.home}/.openviking/hook-state/kimicode`;
  return Object.assign(w, {
    stateDir,
    lock: `${stateDir}/idle-watch-${await sessionDestination((await loadConfig(w.env)).config)}.lock`,
    committed: (id: string) => w.fake.sessions.get(ov(id))?.commits ?? 0,
    /** One turn more in the world's session, then its Stop. */
    async turn(user: string, assistant = "done, the tests pass") {
      await w.say(user, assistant);
      await w.hook("stop");
    },
    /** One short turn more in session `id`, then its Stop run as the detached worker (or not). */
    async stop(id: string, user: string, worker = true, more: Record<string, string> = {}) {
      await w.say(user, "done", id);
      assertEquals(await w.runAs(id, "stop", {}, { ...more, ...(worker ? { [WORKER_ENV]: "1" } : {}) }), "");
    },
  });
}
const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

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
  assertEquals([s.commits(), (await s.state()).capturedSinceCommit], [3, 0]);
});

Deno.test("a session start commits another session left uncommitted since the idle time, not a recent one; under every-turn it reads no other session's state", async () => {
  await using s = await sandbox("balanced");
  await s.turn("a question in a session that will be killed");
  assertEquals(s.commits(), 0);
  // Each start is another session's (a start of the same session within 2 s is a repeat, ignored).
  const start = (n: number) => s.hook("session-start", {}, `session_7c0a1f5e-0000-0000-0000-00000000000${n}`);
  await start(1);
  assertEquals(s.commits(), 0, "its last capture is recent: it may go on");
  await writeState(s.stateFile(), { ...await s.state(), lastCaptureAt: Date.now() - LONG_IDLE_MS });
  await start(2);
  assertEquals([s.commits(), (await s.state()).capturedSinceCommit], [1, 0]);
  await start(3);
  assertEquals(s.commits(), 1, "committed once");

  await using e = await sandbox("every-turn");
  await e.turn("a question whose commit went through");
  assertEquals(e.commits(), 1);
  await e.hook("session-start", {}, "session_7c0a1f5e-0000-0000-0000-000000000008");
  // Even a state that says "uncommitted, idle long": under every-turn a failed commit waits in the queue,
  // so the catch-up (a read of every session's state) does not run.
  const idle = { ovSession: e.ov, capturedSinceCommit: 1, lastCaptureAt: Date.now() - LONG_IDLE_MS };
  await writeState(e.stateFile(), { ...await e.state(), ...idle });
  await e.hook("session-start", {}, "session_7c0a1f5e-0000-0000-0000-000000000009");
  assertEquals(e.fake.requestsTo("POST /api/v1/sessions/:id/commit").length, 1, "no catch-up commit");
});

Deno.test("balanced: the Stop worker leaves a short turn uncommitted, then its watch commits it once idle; every-turn: the Stop commits and no watch runs", async () => {
  await using s = await sandbox("balanced", SHORT_IDLE);
  await s.stop(A, "a short question in a print-mode run");
  const [entry, idle] = await readLedger(`${s.home}/.openviking/ledger/kimicode`, A);
  assertEquals(entry?.kind === "capture" && entry.commit, "none", "the Stop itself did not commit");
  const watched = idle?.kind === "capture" && [idle.event, idle.commit, typeof idle.taskId];
  assertEquals(watched, ["idle", "committed", "string"], "the watch's commit is in the ledger, for status");
  assertEquals(s.committed(A), 1, "the watch did, once idle");
  assertEquals((await readState(`${s.stateDir}/${A}.json`)).capturedSinceCommit, 0);
  assert(!await exists(s.lock), "the watch ended: nothing waits");

  await using e = await sandbox("every-turn", SHORT_IDLE);
  await e.stop(A, "a question");
  assertEquals(e.committed(A), 1);
  assert(!await exists(e.lock));
});

Deno.test("one watch commits every idle session of the home, each once; a held watch is left to its holder", async () => {
  await using s = await sandbox("session-end", SHORT_IDLE);
  await s.stop(A, "session A, captured without its worker", false);
  assertEquals(s.committed(A), 0);
  // Another watch holds the home: this worker leaves both sessions to it.
  await withLock(s.lock, async () => await s.stop(B, "session B while a watch runs"), { waitMs: 0 });
  assertEquals([s.committed(A), s.committed(B)], [0, 0]);
  await s.stop(B, "session B again");
  assertEquals([s.committed(A), s.committed(B)], [1, 1]);
});

Deno.test("a server gone before the session is idle: the watch queues the commit and ends (nothing lost)", async () => {
  await using s = await sandbox("balanced", SHORT_IDLE);
  s.fake.fault({ route: "POST /api/v1/sessions/:id/commit", status: 503 });
  await s.stop(A, "a question before the server goes");
  await s.fake.close();
  assertEquals((await readState(`${s.stateDir}/${A}.json`)).capturedSinceCommit, 0, "queued, not forgotten");
  const queued = await Array.fromAsync(Deno.readDir(`${s.pending}/kimicode/${ov(A)}`));
  assertEquals(queued.map((e) => e.name), ["0000000001-c.json"], "the commit waits in the queue");
  assert(!await exists(s.lock));
});

Deno.test("a session captured for another server or key is left to its own: never committed with ours", async () => {
  await using s = await sandbox("balanced", "1");
  await using other = await FakeOpenViking.start();
  const there = { OPENVIKING_URL: other.url };
  await s.stop(B, "session B, captured for the other server", false, there);
  await s.stop(A, "session A, whose worker watches");
  assertEquals([s.committed(A), s.committed(B)], [1, 0]);
  const commits = s.fake.requestsTo("POST /api/v1/sessions/:id/commit").length;
  assertEquals(commits, 1, "B's commit never went to A's server");
  assertEquals((await readState(`${s.stateDir}/${B}.json`)).capturedSinceCommit > 0, true, "B still waits");
  const watchA = s.stop(A, "session A again: its watch runs while B's starts");
  const watching = async () =>
    (await Array.fromAsync(Deno.readDir(s.stateDir))).some((e) => /^idle-watch/.test(e.name));
  for (let i = 0; i < 200 && !await watching(); i++) await new Promise((r) => setTimeout(r, 25));
  assertEquals(await s.runAs(B, "stop", {}, { ...there, [WORKER_ENV]: "1" }), "");
  await watchA;
  assertEquals(
    [s.committed(A), other.sessions.get(ov(B))?.commits],
    [2, 1],
    "each by a watch of its own server",
  );
});

Deno.test("a state dated ahead of the clock is due at once; a state file of gigabytes is not read: the home's watch goes on", async () => {
  await using s = await sandbox("balanced", SHORT_IDLE);
  await s.stop(B, "session B", false);
  const file = `${s.stateDir}/${B}.json`;
  await writeState(file, { ...await readState(file), lastCaptureAt: Date.now() + 86_400_000 });
  const huge = `${s.stateDir}/session_huge.json`;
  await Deno.writeFile(huge, new Uint8Array());
  await Deno.truncate(huge, 3 * 1024 ** 3); // sparse: no disk used
  assertEquals((await readState(huge)).capturedSinceCommit, 0);
  await s.stop(A, "session A");
  assertEquals([s.committed(A), s.committed(B)], [1, 1]);
});

Deno.test("a session whose worker was killed mid-send (an unsettled intent) is settled before it is committed; one whose journal is gone, committed as the server holds it", async () => {
  for (const journalGone of [false, true]) {
    await using s = await sandbox("session-end", SHORT_IDLE);
    // Session B as a Stop worker killed mid-send leaves it: turn two stored, its intent unsettled.
    const file = `${s.stateDir}/${B}.json`;
    await s.stop(B, "turn one", false);
    const before = await readState(file);
    await s.stop(B, "turn two: stored, its reply never recorded", false);
    const keys = (await readState(file)).capturedKeys.filter((k) => !before.capturedKeys.includes(k));
    await writeState(file, { ...before, inflight: { keys, at: Date.now(), askFrom: 0 } });
    if (journalGone) {
      await Deno.remove(`${s.home}/.kimi-code/sessions/wd_proj_000000000000/${B}`, { recursive: true });
    }
    await s.stop(A, "session A, whose watch commits B too");
    if (journalGone) {
      assertEquals(s.committed(B), 1);
      continue;
    }
    await s.stop(B, "turn three", false);
    const texts = s.fake.messages(ov(B)).map((m) => m.content);
    assertEquals([s.committed(B), texts.filter((t, i) => texts.indexOf(t) !== i)], [1, []]);
  }
});

Deno.test("the watch ends within a second or two of its directory going (a purge), not at the idle time", async () => {
  await using s = await sandbox("balanced", "1");
  await s.say("a question, then the user purges", "done", A);
  const worker = s.runAs(A, "stop", {}, { OPENVIKING_IDLE_COMMIT_SECONDS: "120", [WORKER_ENV]: "1" });
  for (let i = 0; i < 200 && !await exists(s.lock); i++) await new Promise((r) => setTimeout(r, 25));
  assert(await exists(s.lock), "the watch is waiting");
  const gone = Date.now();
  await Deno.remove(s.stateDir, { recursive: true });
  assertEquals(await worker, "");
  assert(Date.now() - gone < 3000, `it ended ${Date.now() - gone} ms after`);
  assertEquals(s.committed(A), 0, "it committed nothing after the purge");
});

Deno.test("a session captured on one server and ended on another: each server commits only what it was sent, with its own key", async () => {
  await using s = await sandbox("balanced", "1");
  await using other = await FakeOpenViking.start();
  const [keyA, keyB] = [{ OPENVIKING_API_KEY: "key-of-a" }, { OPENVIKING_API_KEY: "key-of-b" }];
  await s.stop(A, "a short question on the first server", false, keyA);
  const was = (await readState(`${s.stateDir}/${A}.json`)).capturedSinceCommit;
  assertEquals([s.committed(A), was > 0], [0, true], "under balanced a short turn waits");
  // The user moves to the other server: one turn there, then the session ends there.
  await s.say("one more question, on the second server", "done", A);
  const there = { OPENVIKING_URL: other.url, ...keyB, [WORKER_ENV]: "1" };
  assertEquals(await s.runAs(A, "session-end", {}, there), "");
  assertEquals(other.sessions.get(ov(A))?.commits, 1, "the second server commits its own turn");
  assertEquals(other.messages(ov(A)).map((m) => m.content)[0], "one more question, on the second server");
  assertEquals(s.committed(A), 0, "the first server's captures wait for a run of its own");
  // The first server's own watch (a Stop of another session there) commits what it holds.
  await s.stop(B, "a question on the first server again", true, keyA);
  assertEquals(s.committed(A), 1, "the first server's captures are committed there");
  const auth = (f: FakeOpenViking) => new Set(f.requests.map((r) => r.headers.authorization).filter(Boolean));
  assertEquals([[...auth(s.fake)], [...auth(other)]], [["Bearer key-of-a"], ["Bearer key-of-b"]]);
});
