/**
 * The idle watch (memory/idle-commit.ts): under balanced/session-end a detached Stop worker commits the home's
 * sessions once idle, one watch per home, so a session that never fires SessionEnd (`kimi -p`) is committed
 * on a server whose own idle commit is off; against the fake OpenViking, in-process (through the entry point:
 * tests/hooks/hooks_process_test.ts, "the parent has exited before the worker's first request").
 */

import { assertEquals, assertTrue as assert } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { withLock } from "../../lib/lock.ts";
import { readLedger } from "../../memory/ledger.ts";
import { readState, writeState } from "../../memory/state.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { sessionDestination } from "../../memory/context.ts";
import { loadConfig } from "../../openviking/config.ts";
import { stdinOf, world } from "./world.ts";

const A = "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000a1";
const B = "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000b2";
const ov = (s: string) => `kc-${s}`;

async function sandbox(policy = "balanced") {
  const w = await world({ env: { OPENVIKING_COMMIT_POLICY: policy, OPENVIKING_IDLE_COMMIT_SECONDS: "1" } });
  const stateDir = `${w.home}/.openviking/hook-state/kimicode`;
  const journals = new Map<string, JournalBuilder>();
  /** One short turn more in session `id`'s journal. */
  const place = async (id: string, user: string) => {
    const j = journals.get(id) ?? new JournalBuilder();
    journals.set(id, j.simpleTurn(user, "done"));
    await w.journal(j.toString(), id);
  };
  return Object.assign(w, {
    place,
    stateDir,
    lock: `${stateDir}/idle-watch-${await sessionDestination((await loadConfig(w.env)).config)}.lock`,
    commits: (id: string) => w.fake.sessions.get(ov(id))?.commits ?? 0,
    /** `place`, then the Stop run as the detached worker (or not). */
    async stop(id: string, user: string, worker = true) {
      await place(id, user);
      const env = worker ? { ...w.env, [WORKER_ENV]: "1" } : w.env;
      assertEquals((await hookIn("stop", { env, stdin: stdinOf("stop", id) })).stdout, "");
    },
  });
}

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

Deno.test("balanced: the Stop worker leaves a short turn uncommitted, then its watch commits it once idle", async () => {
  await using s = await sandbox();
  await s.stop(A, "a short question in a print-mode run");
  const [entry, idle] = await readLedger(`${s.home}/.openviking/ledger/kimicode`, A);
  assertEquals(entry?.kind === "capture" && entry.commit, "none", "the Stop itself did not commit");
  assertEquals(idle?.kind === "capture" && [idle.event, idle.commit, typeof idle.taskId], [
    "idle",
    "committed",
    "string",
  ], "the watch's commit is in the ledger, for status");
  assertEquals(s.commits(A), 1, "the watch did, once idle");
  assertEquals((await readState(`${s.stateDir}/${A}.json`)).capturedSinceCommit, 0);
  assert(!await exists(s.lock), "the watch ended: nothing waits");
});

Deno.test("one watch commits every idle session of the home, each once; a held watch is left to its holder", async () => {
  await using s = await sandbox("session-end");
  await s.stop(A, "session A, captured without its worker", false);
  assertEquals(s.commits(A), 0);
  // Another watch holds the home: this worker leaves both sessions to it.
  await withLock(s.lock, async () => await s.stop(B, "session B while a watch runs"), { waitMs: 0 });
  assertEquals([s.commits(A), s.commits(B)], [0, 0]);
  await s.stop(B, "session B again");
  assertEquals([s.commits(A), s.commits(B)], [1, 1]);
});

Deno.test("every-turn: the Stop commits and no watch runs", async () => {
  await using s = await sandbox("every-turn");
  await s.stop(A, "a question");
  assertEquals(s.commits(A), 1);
  assert(!await exists(s.lock));
});

Deno.test("a server gone before the session is idle: the watch queues the commit and ends (nothing lost)", async () => {
  await using s = await sandbox("balanced");
  s.fake.fault({ route: "POST /api/v1/sessions/:id/commit", status: 503 });
  await s.stop(A, "a question before the server goes");
  await s.fake.close();
  assertEquals((await readState(`${s.stateDir}/${A}.json`)).capturedSinceCommit, 0, "queued, not forgotten");
  const queued = await Array.fromAsync(Deno.readDir(`${s.pending}/kimicode/${ov(A)}`));
  assertEquals(queued.map((e) => e.name), ["0000000001-c.json"], "the commit waits in the queue");
  assert(!await exists(s.lock));
});

Deno.test("a session captured for another server or key is left to its own: never committed with ours", async () => {
  await using s = await sandbox();
  await using other = await FakeOpenViking.start();
  const stdin = stdinOf("stop", B);
  await s.place(B, "session B, captured for the other server");
  await hookIn("stop", { env: { ...s.env, OPENVIKING_URL: other.url }, stdin });
  await s.stop(A, "session A, whose worker watches");
  assertEquals([s.commits(A), s.commits(B)], [1, 0]);
  assertEquals(
    s.fake.requestsTo("POST /api/v1/sessions/:id/commit").length,
    1,
    "B's commit never went to A's server",
  );
  assertEquals((await readState(`${s.stateDir}/${B}.json`)).capturedSinceCommit > 0, true, "B still waits");
  const watchA = s.stop(A, "session A again: its watch runs while B's starts");
  const watching = async () =>
    (await Array.fromAsync(Deno.readDir(s.stateDir))).some((e) => /^idle-watch/.test(e.name));
  for (let i = 0; i < 200 && !await watching(); i++) await new Promise((r) => setTimeout(r, 25));
  await hookIn("stop", { env: { ...s.env, OPENVIKING_URL: other.url, [WORKER_ENV]: "1" }, stdin });
  await watchA;
  assertEquals(
    [s.commits(A), other.sessions.get(ov(B))?.commits],
    [2, 1],
    "each by a watch of its own server",
  );
});

Deno.test("a state dated ahead of the clock is due at once; the watch does not sleep on it", async () => {
  await using s = await sandbox();
  await s.stop(B, "session B", false);
  const file = `${s.stateDir}/${B}.json`;
  await writeState(file, { ...await readState(file), lastCaptureAt: Date.now() + 86_400_000 });
  await s.stop(A, "session A");
  assertEquals([s.commits(A), s.commits(B)], [1, 1]);
});

/** Session B as a Stop worker killed mid-send leaves it: turn two stored, its intent unsettled. */
async function killedMidSend(s: Awaited<ReturnType<typeof sandbox>>) {
  const file = `${s.stateDir}/${B}.json`;
  await s.stop(B, "turn one", false);
  const before = await readState(file);
  await s.stop(B, "turn two: stored, its reply never recorded", false);
  const keys = (await readState(file)).capturedKeys.filter((k) => !before.capturedKeys.includes(k));
  await writeState(file, { ...before, inflight: { keys, at: Date.now(), askFrom: 0 } });
}

Deno.test("a session whose worker was killed mid-send (an unsettled intent) is settled before it is committed", async () => {
  await using s = await sandbox("session-end");
  await killedMidSend(s);
  await s.stop(A, "session A, whose watch commits B too");
  await s.stop(B, "turn three", false);
  const texts = s.fake.messages(ov(B)).map((m) => m.content);
  assertEquals([s.commits(B), texts.filter((t, i) => texts.indexOf(t) !== i)], [1, []]);
});

Deno.test("one whose journal is gone can never be settled: what the server holds is committed", async () => {
  await using s = await sandbox("session-end");
  await killedMidSend(s);
  await Deno.remove(`${s.home}/.kimi-code/sessions/wd_proj_000000000000/${B}`, { recursive: true });
  await s.stop(A, "session A, whose watch commits B too");
  assertEquals(s.commits(B), 1);
});

Deno.test("a state file of gigabytes is not read: a fresh state, the home's watch goes on", async () => {
  await using s = await sandbox();
  const huge = `${s.stateDir}/${B}.json`;
  await Deno.mkdir(s.stateDir, { recursive: true });
  const f = await Deno.open(huge, { create: true, write: true });
  await f.truncate(3 * 1024 ** 3); // sparse: no disk used
  f.close();
  assertEquals((await readState(huge)).capturedSinceCommit, 0);
  await s.stop(A, "session A");
  assertEquals(s.commits(A), 1);
});

Deno.test("the watch ends within a second or two of its directory going (a purge), not at the idle time", async () => {
  await using s = await sandbox();
  const env = { ...s.env, OPENVIKING_IDLE_COMMIT_SECONDS: "120" };
  await s.place(A, "a question, then the user purges");
  const worker = hookIn("stop", { env: { ...env, [WORKER_ENV]: "1" }, stdin: stdinOf("stop", A) });
  for (let i = 0; i < 200 && !await exists(s.lock); i++) await new Promise((r) => setTimeout(r, 25));
  assert(await exists(s.lock), "the watch is waiting");
  const gone = Date.now();
  await Deno.remove(s.stateDir, { recursive: true });
  assertEquals((await worker).stdout, "");
  assert(Date.now() - gone < 3000, `it ended ${Date.now() - gone} ms after`);
  assertEquals(s.commits(A), 0, "it committed nothing after the purge");
});
