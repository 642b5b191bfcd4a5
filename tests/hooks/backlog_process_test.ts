/**
 * A long backlog captured while the server is down, through the real entry point: bounded steps that record
 * their progress (a run killed while it writes a queue file resumes, and leaves no temp file), a batch per
 * queue file, and only the session's own queue replayed.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import type { StoredMessage } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { waitUntil } from "../support/kimi.ts";
import { ourQueue, QUEUE_FILE } from "../support/queue.ts";
import { startCli } from "../support/run.ts";
import { hookIn } from "../support/hook-context.ts";
import { runIn } from "../cli/in-process.ts";
import { QUEUE_SUBDIR } from "../../openviking/queue.ts";
import { pathsUnder, stdinOf, world } from "./world.ts";

/** Turns a capture plans and sends per step (memory/capture.ts): the backlog is many steps long. */
const TURNS_PER_STEP = 200;
const [TURNS, MESSAGES] = [25 * TURNS_PER_STEP, 50 * TURNS_PER_STEP];
const SESSION = "session_12b4c6d8-back-4log-9a0b-5000turns0012";
const OTHER = "session_12b4c6d8-othr-4e5f-8a9b-quickstop012";

const question = (i: number) => `question ${i} about the build`;
const answer = (i: number) => `answer ${i}: run the tests first`;

/** How many queue entries (batches, commits, claims) wait, from the directory listing alone. */
const queueEntries = (pending: string) =>
  pathsUnder(`${pending}/${QUEUE_SUBDIR}`, (_, e) => e.isFile && QUEUE_FILE.test(e.name)).length;

const tempFiles = (dir: string) => pathsUnder(dir, (p) => p.endsWith(".tmp"));

/** Which stored message of a `turns`-turn backlog is not where it belongs (-1: each in its place, once). */
function misplacedAt(stored: StoredMessage[], turns: number): number {
  if (stored.length !== 2 * turns) return Math.min(stored.length, 2 * turns);
  return stored.findIndex((m, k) => {
    const i = Math.floor(k / 2);
    const [role, content] = k % 2 ? ["assistant", answer(i)] : ["user", question(i)];
    return m.turn_id !== String(i) || m.role !== role || m.content !== content;
  });
}

/** The `done` records of the Stop runs of `session` that finished, from the hooks' debug log. */
async function stopRuns(home: string, session: string): Promise<{ turns: number; steps: number }[]> {
  const log = await Deno.readTextFile(`${home}/.openviking/logs/kimicode-hooks.log`).catch(() => "");
  return log.split("\n").filter((l) => l.includes('"stage":"done"')).map((l) => JSON.parse(l))
    .filter((r) => r.event === "stop" && r.session === session);
}

Deno.test("hook stop: a 5,000-turn backlog with the server down queues in bounded steps and batches, resumes after a kill mid-write, never holds up another session; replay delivers all 10,000 once", async () => {
  const env = { OPENVIKING_TIMEOUT_MS: "2000", OPENVIKING_DEBUG: "1" };
  await using w = await world({ session: SESSION, env });
  const { fake, pending, state } = w;
  const j = new JournalBuilder();
  for (let i = 0; i < TURNS; i++) j.simpleTurn(question(i), answer(i));
  await w.journal(j.toString());
  const worker = { ...w.env, OPENVIKING_KIMI_HOOK_WORKER: "1" };
  fake.fault({ route: "*", status: 503 }); // the server is down

  // A Stop worker cut short part-way through the backlog, killed while a queue file is being written (its
  // temporary sibling exists).
  const cut = await startCli(["hook", "stop"], worker, stdinOf("stop", SESSION));
  const writing = () => queueEntries(pending) >= 20 && tempFiles(pending).length > 0;
  await waitUntil(writing, 60_000, "a queue file being written after the first batches", 1);
  cut.kill("SIGKILL");
  await cut.status;
  const atCut = await state();
  const filesAtCut = queueEntries(pending);
  assertTrue(
    atCut.ackedBelow > 0 && atCut.ackedBelow < TURNS,
    `cut part-way (acked below ${atCut.ackedBelow})`,
  );

  // The next Stop resumes where the last recorded step ended. Once it queues again (its replay of the backlog
  // met the outage), the server is back and another session's Stop runs meanwhile.
  const resumed = await startCli(["hook", "stop"], worker, stdinOf("stop", SESSION));
  await waitUntil(() => queueEntries(pending) > filesAtCut, 60_000, "the resumed run's batches", 10);
  fake.clearFaults();
  const other = [["0", "user", "where do the logs go?"], ["0", "assistant", "To ~/.openviking/logs."]];
  await w.journal(new JournalBuilder().simpleTurn(other[0][2], other[1][2]).toString(), OTHER);
  assertEquals((await hookIn("stop", { env: w.env, stdin: stdinOf("stop", OTHER) })).stdout, "");
  assertEquals(fake.messages(`kc-${OTHER}`).map((m) => [m.turn_id, m.role, m.content]), other);
  assertEquals(fake.sessions.get(`kc-${OTHER}`)?.commits, 1);
  assertEquals(fake.messages(`kc-${SESSION}`).length, 0, "the other Stop replayed nothing of the backlog");

  assertEquals((await resumed.status).code, 0, "the resumed run finished on its own");
  const st = await state();
  assertEquals([st.ackedBelow, st.lastCapture?.sent, st.lastCapture?.commit], [TURNS, 0, "queued"]);
  // The resumed run went on from the cut (what the killed run queued after its last record is settled, not
  // planned again), in steps of at most TURNS_PER_STEP turns.
  const [run] = await stopRuns(w.home, SESSION);
  assertTrue(run && run.turns > 0 && run.turns <= TURNS - atCut.ackedBelow, JSON.stringify(run));
  assertTrue(run.steps >= Math.ceil(run.turns / TURNS_PER_STEP), `${run.steps} steps for ${run.turns} turns`);
  const queued = await ourQueue(pending);
  const messages = queued.filter((q) => q.kind === "message");
  const keys = new Set(messages.map((q) => `${q.payload?.turn_id}:${q.payload?.role}`));
  assertEquals([keys.size, messages.length], [MESSAGES, MESSAGES]);
  assertEquals(queued.filter((q) => q.kind === "commit").length, 1);
  const files = queueEntries(pending);
  // A batch of 100 per file, the commit, and at most one short batch where the killed run stopped.
  assertTrue(files <= MESSAGES / 100 + 2, `${files} queue files for ${MESSAGES} messages`);

  // The server is back: `replay` delivers every message exactly once, in order, then the commit.
  const replay = await runIn(w.env, ["replay"]);
  assertEquals(replay.code, 0, replay.stderr);
  const stored = fake.messages(`kc-${SESSION}`);
  const storedKeys = new Set(stored.map((m) => `${m.turn_id}:${m.role}`));
  assertEquals([storedKeys.size, stored.length], [MESSAGES, MESSAGES], "each message exactly once");
  const misplaced = misplacedAt(stored, TURNS);
  assertEquals(misplaced, -1, `message ${misplaced} out of order: ${JSON.stringify(stored[misplaced])}`);
  assertEquals(fake.sessions.get(`kc-${SESSION}`)?.commits, 1);
  assertEquals([(await ourQueue(pending)).length, queueEntries(pending)], [0, 0], "the queue is empty");
  assertEquals(tempFiles(`${w.home}/.openviking`), [], "no temporary file left under ~/.openviking");
});
