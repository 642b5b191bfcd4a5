/** Replay across processes: two replays of one queue, each a real process, send each message exactly once. */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { prodRunArgs, ROOT } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { clientOf, contents, enqueueMessages, payload, replayOpts } from "../support/queue.ts";
import { replayQueue } from "../../openviking/replay.ts";

Deno.test("two processes replaying one queue send each message exactly once", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const n = 40;
  for (let i = 0; i < n; i++) await enqueueMessages(dir.path, `kc-s${i % 4}`, [payload(i)]);
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", delayMs: 5 });
  const prodArgs = await prodRunArgs();
  const run = () =>
    new Deno.Command(Deno.execPath(), {
      args: [...prodArgs, `${ROOT}/tests/support/replay-worker.ts`, dir.path, fake.url],
      stdout: "piped",
      stderr: "inherit",
    }).output();
  const outs = await Promise.all([run(), run()]);
  const reports = outs.map((o) => JSON.parse(new TextDecoder().decode(o.stdout)));
  let total = reports[0].replayed + reports[1].replayed;
  // A session busy in the other process waits for it: a last run picks up what was left.
  total += (await replayQueue(dir.path, clientOf(fake.url), replayOpts())).replayed;
  assertEquals(total, n);
  const all = [0, 1, 2, 3].flatMap((s) => contents(fake, `kc-s${s}`));
  assertEquals([all.length, new Set(all).size], [n, n]);
  for (let s = 0; s < 4; s++) {
    const mine = contents(fake, `kc-s${s}`).map((c) => Number(String(c).split(" ")[1]));
    assertEquals(mine, [...mine].sort((a, b) => a - b), "each session in order");
  }
});
