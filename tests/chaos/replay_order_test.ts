/**
 * Found by the fault campaign: a replay running while an older write of the same session is claimed by
 * another run (in flight right now, or abandoned by a run killed with -9) sent that session's later writes
 * first.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";
import { Budget, createClient } from "../../openviking/client.ts";
import { replayQueue, sendMessages } from "../../openviking/queue.ts";
import { rejectedWrites } from "../support/queue.ts";

Deno.test("replay: a write its client gave up on is asked about only once the server has had as long again", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const pendingDir = `${dir.path}/pending`;
  const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 400 });
  const turn = (i: number) => ({ role: "user" as const, content: `turn ${i}`, turn_id: String(i) });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", delayMs: 600, times: 1 });
  const sent = await sendMessages(client, "kc-s", [turn(0), turn(1)], {
    budget: new Budget(5000),
    pendingDir,
  });
  assertEquals([sent.sent, sent.queued], [0, 2], "no answer in time: queued, unsure");
  fake.fault({ route: "POST /api/v1/sessions/:id/messages*", status: 400, times: 3 });
  const options = { limit: 50, ttlDays: 7, budget: new Budget(5000), sessionId: "kc-s" };
  const asked = fake.requests.length;
  const early = await replayQueue(pendingDir, client, options);
  assertEquals([early.replayed, early.deferred, early.messages], [0, 1, 0], "too early to ask: it waits");
  assertEquals(
    fake.requests.length,
    asked,
    "nothing asked or sent while the server may still be storing it",
  );

  await new Promise((r) => setTimeout(r, 500)); // the server stores it now (600 ms), then the window ends
  fake.clearFaults();
  const later = await replayQueue(pendingDir, client, options);
  assertEquals(
    [later.replayed, later.held, later.messages],
    [1, 2, 0],
    "found on the server: not sent again",
  );
  assertEquals(fake.messages("kc-s").map((m) => m.content), ["turn 0", "turn 1"]);
  assertEquals((await rejectedWrites(pendingDir)).length, 0);
});
