/** Replay beside another, and through the entry points: the worker's budget, writes for another server. */

import { REPLAY_BUDGET_MS } from "../../memory/session-start.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { clientOf, contents, enqueueMessages, payload, replayOpts } from "../support/queue.ts";
import { destinationOf, replayQueue, SessionQueue } from "../../openviking/queue.ts";
import { sandboxEnv } from "../support/hook-context.ts";
import { readLedger, REPLAY_FILE } from "../../memory/ledger.ts";
import { startHungServer } from "../support/hung-server.ts";
import { stdinOf } from "../hooks/world.ts";

Deno.test("two replays of one queue at once send each message exactly once, each session in order", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const n = 40;
  for (let i = 0; i < n; i++) await enqueueMessages(dir.path, `kc-s${i % 4}`, [payload(i)]);
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", delayMs: 5 });
  // Each under its own kernel lock (a lock file opened apart is held apart, as across processes).
  const run = () => replayQueue(dir.path, clientOf(fake.url), replayOpts({ limit: 1000 }));
  let total = (await Promise.all([run(), run()])).reduce((sum, r) => sum + r.replayed, 0);
  // A session busy in the other replay waits for it: a last run picks up what was left.
  total += (await run()).replayed;
  assertEquals(total, n);
  const all = [0, 1, 2, 3].flatMap((s) => contents(fake, `kc-s${s}`));
  assertEquals([all.length, new Set(all).size], [n, n]);
  for (let s = 0; s < 4; s++) {
    const mine = contents(fake, `kc-s${s}`).map((c) => Number(String(c).split(" ")[1]));
    assertEquals(mine, [...mine].sort((a, b) => a - b), "each session in order");
  }
});

Deno.test("SessionStart's worker against a server that never answers stays within the replay budget, extraction check included", async () => {
  await using dir = await tempDir();
  const hung = startHungServer();
  const budget = REPLAY_BUDGET_MS;
  for (let i = 0; i < 4; i++) {
    await enqueueMessages(`${dir.path}/.openviking/pending`, `kc-s${i}`, [payload(i)]);
  }
  const env = {
    HOME: dir.path,
    KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
    OPENVIKING_URL: hung.url,
    OPENVIKING_KIMI_HOOK_WORKER: "1",
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const stdin = stdinOf("session-start", "session_b", { source: "startup" });
  const r = await runCli(["hook", "session-start"], { env, clearEnv: true, stdin }).finally(() =>
    hung.close()
  );
  assertEquals([r.code, r.stdout], [0, ""]);
  const [entry] = await readLedger(`${dir.path}/.openviking/ledger/kimicode`, REPLAY_FILE);
  assertEquals(entry?.kind === "replay" && entry.replayed, 0, "nothing delivered to a hung server");
  assertTrue(entry.ms < budget + 1000, `the worker took ${entry.ms} ms for a ${budget} ms budget`);
});

Deno.test("replay sends writes queued for another server only there: here they stay, named, with the command that delivers them", async () => {
  await using dir = await tempDir();
  const gone = startHungServer();
  await gone.close();
  const pending = `${dir.path}/.openviking/pending`;
  const queue = await SessionQueue.open(pending, "kc-s1", destinationOf({ baseUrl: gone.url }));
  assertEquals(await queue.messages([payload(0), payload(1)]), 2);
  await using saved = await FakeOpenViking.start();
  const plain = await runCli(["replay"], { env: sandboxEnv(dir.path, saved.url), clearEnv: true });
  const nothing = `Replayed nothing to ${saved.url}: 1 write(s) are still queued.\n`;
  assertEquals([plain.code, plain.stdout, saved.messages("kc-s1")], [1, nothing, []]);
  assertStringIncludes(
    plain.stderr,
    `2 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${gone.url})`,
  );
  assertMatch(
    plain.stderr,
    new RegExp(`\n  fix: run \`OPENVIKING_URL=${gone.url} .+ replay\``),
  );
  // A second server's writes too: status names a command for each place and promises no replay here.
  const other = startHungServer();
  await other.close();
  const second = await SessionQueue.open(pending, "kc-s2", destinationOf({ baseUrl: other.url }));
  assertEquals(await second.messages([payload(2)]), 1);
  const status = await runCli(["status"], { env: sandboxEnv(dir.path, saved.url), clearEnv: true });
  const flat = status.stdout.replace(/\s+/g, " ");
  // In the queue line's units: messages and commits, not writes.
  assertStringIncludes(flat, "Queue 3 message(s), 0 commit(s) of 2 session(s)");
  assertStringIncludes(
    flat,
    ` 2 message(s), 0 commit(s) are for another server or identity (OPENVIKING_URL=${gone.url})`,
  );
  for (const url of [gone.url, other.url]) {
    assertMatch(flat, new RegExp(`\`OPENVIKING_URL=${url} [^\`]+ replay\``), `a command for ${url}`);
  }
  assertMatch(flat, /next replay: none here — every queued write is for another server or identity/);
});
