import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { makeContext, placeJournal, sandboxEnv } from "../tests/support/hook-context.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { ourQueue } from "../tests/support/queue.ts";
import { tempDir } from "../tests/support/temp.ts";
import {
  asksToRemember,
  BALANCED_PENDING_TOKENS,
  captureMode,
  captureSession,
  commitDue,
  type CommitFacts,
  lockedMode,
  waitForTurnEnd,
} from "./capture.ts";
import { scanJournal } from "../kimi/journal/turns.ts";
import type { HookEvent } from "../kimi/hooks.ts";
import { withLock } from "../lib/lock.ts";
import { emptyState, writeState } from "./state.ts";

Deno.test("waitForTurnEnd: an open turn that does not change is scanned once, not every 100 ms", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/wire.jsonl`;
  const j = new JournalBuilder().simpleTurn("first question", "first answer");
  j.prompt("second question").stepBegin().text("half an answer");
  await Deno.writeTextFile(path, j.toString());
  let scans = 0;
  const counted: typeof scanJournal = (p, c) => (scans++, scanJournal(p, c));
  assertEquals(
    [await waitForTurnEnd(path, undefined, 700, true, counted), scans],
    [false, 1],
    "open at the deadline",
  );

  scans = 0;
  const waiting = waitForTurnEnd(path, undefined, 5000, true, counted);
  await new Promise((r) => setTimeout(r, 300));
  const before = j.lines.length;
  j.text(" and the rest").stepEnd("end_turn").ended();
  await Deno.writeTextFile(path, j.lines.slice(before).map((l) => `${l}\n`).join(""), { append: true });
  assertEquals(await waiting, true, "the end is seen once it is written");
  assertEquals(scans, 2, "once at the start, once after the write");
});

Deno.test("waitForTurnEnd: no journal yet, then one with a closed turn (Stop expects a turn)", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/wire.jsonl`;
  const waiting = waitForTurnEnd(path, undefined, 5000, true);
  await new Promise((r) => setTimeout(r, 250));
  await Deno.writeTextFile(path, new JournalBuilder().simpleTurn("a question", "an answer").toString());
  assertEquals(await waiting, true);
  assertEquals(await waitForTurnEnd(`${dir.path}/none.jsonl`, undefined, 0, false), true, "nothing expected");
});

const SESSION = "session_worker-budget";
const oneTurn = () => new JournalBuilder().simpleTurn("where do the logs go?", "to ~/logs").toString();

Deno.test("a Stop worker that waited 61 s for the lock still sends (its budget starts at the lock)", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  await placeJournal(dir.path, SESSION, oneTurn());
  const ctx = await makeContext("stop", { session_id: SESSION, cwd: "/home/user/proj" }, env);
  const realNow = Date.now;
  let capture: Promise<{ data?: Record<string, unknown> }> | undefined;
  try {
    await withLock(ctx.capturePaths!.lock, async () => {
      capture = captureSession(ctx, captureMode("stop", ctx.config, Date.now()));
      await new Promise((r) => setTimeout(r, 300)); // the worker waits for the lock…
      Date.now = () => realNow() + 61_000; // …for a minute and a second
    });
    const report = await capture!;
    assertEquals([report.data?.sent, report.data?.queued], [2, 0]);
  } finally {
    Date.now = realNow;
  }
  assertEquals(fake.messages(`kc-${SESSION}`).map((m) => m.content), ["where do the logs go?", "to ~/logs"]);
  assertEquals((await ourQueue(ctx.pendingDir)).length, 0, "nothing queued");
});

Deno.test("a request the server took whose reply was never recorded: settled, not resent, and committed", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  await placeJournal(dir.path, SESSION, oneTurn());
  const stop = await makeContext("stop", { session_id: SESSION, cwd: "/home/user/proj" }, env);
  await captureSession(stop, captureMode("stop", stop.config, Date.now())); // the server holds the turn
  const keys = ["0:user", "0:assistant"]; // …but the worker died before it recorded (and counted) them
  await writeState(stop.capturePaths!.file, { ...emptyState(), inflight: { keys, at: 0 } });
  const end = await makeContext("session-end", { session_id: SESSION, cwd: "/home/user/proj" }, env);
  const report = await captureSession(end, captureMode("session-end", end.config, Date.now()));
  const { settledElsewhere, commit } = report.data ?? {};
  assertEquals([fake.messages(`kc-${SESSION}`).length, settledElsewhere, commit], [2, 2, "committed"]);
});

Deno.test("lockedMode: a worker's budget starts at the lock; an interrupt's keeps running from the hook's start", () => {
  const config = { captureWaitMs: 0 };
  const interrupt = captureMode("interrupt", config, Date.now() - 1500);
  assertEquals(lockedMode(interrupt).budget, interrupt.budget, "Kimi's 2 s do not restart");
  const stop = captureMode("stop", config, Date.now());
  const realNow = Date.now;
  try {
    Date.now = () => realNow() + 61_000;
    assertEquals(stop.budget.remaining(), 0, "the minute it had at the start is gone");
    const left = lockedMode(stop).budget.remaining();
    assertTrue(left > 59_000 && left <= 60_000, `a fresh minute, not ${left} ms`);
  } finally {
    Date.now = realNow;
  }
});

Deno.test("commitDue: every policy, every event, by what the capture knows", () => {
  const facts = (f: Partial<CommitFacts>): CommitFacts => ({ since: 2, sent: 2, remember: false, ...f });
  const small = facts({ pendingTokens: 300 });
  const big = facts({ pendingTokens: BALANCED_PENDING_TOKENS });
  const forced: HookEvent[] = ["pre-compact", "session-end", "interrupt", "stop-failure"];
  const atStop = (policy: Parameters<typeof commitDue>[0], f: Partial<CommitFacts>) =>
    commitDue(policy, "stop", facts(f));
  for (const policy of ["every-turn", "balanced", "session-end"] as const) {
    assertEquals(atStop(policy, { since: 0, pendingTokens: 1e6 }), false, `${policy}: nothing new`);
    for (const event of forced) {
      assertEquals(commitDue(policy, event, small), true, `${policy} ${event}`);
      assertEquals(commitDue(policy, event, facts({ since: 0 })), false, `${policy} ${event}: nothing new`);
    }
  }
  assertEquals(commitDue("every-turn", "stop", small), true);
  assertEquals(atStop("every-turn", { sent: 0 }), true, "an earlier capture left it uncommitted");
  assertEquals(commitDue("balanced", "stop", small), false, "too little text for an extraction");
  assertEquals(commitDue("balanced", "stop", facts({ pendingTokens: BALANCED_PENDING_TOKENS - 1 })), false);
  assertEquals(commitDue("balanced", "stop", big), true, "enough gathered");
  assertEquals(atStop("balanced", { pendingTokens: 300, remember: true }), true, "asked to remember");
  assertEquals(commitDue("balanced", "stop", facts({})), true, "a server that does not count: every turn");
  assertEquals(commitDue("balanced", "stop", facts({ sent: 0 })), false, "nothing delivered (queued): later");
  assertEquals(commitDue("session-end", "stop", big), false);
  assertEquals(commitDue("session-end", "stop", facts({ pendingTokens: 300, remember: true })), false);
});

Deno.test("asksToRemember: a user's words, not the assistant's", () => {
  const user = (content: string) => ({ role: "user", content });
  const asks = [
    "Remember: staging is 6543",
    "please don't forget the key",
    "dont forget that",
    "memorize this",
  ];
  for (const words of asks) assertTrue(asksToRemember([user(words)]), words);
  assertEquals(asksToRemember([user("the remembered value"), user("fix the build")]), false);
  assertEquals(asksToRemember([{ role: "assistant", content: "I will remember that" }]), false);
});
