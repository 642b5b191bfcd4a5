/**
 * Found by the fault campaign: a replay running while an older write of the same session is claimed by
 * another run (in flight right now, or abandoned by a run killed with -9) sent that session's later writes
 * first. Later writes of such a session now wait for the claimed one; other sessions go on.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";
import { Budget, createClient } from "../../openviking/client.ts";
import { listShared, replayShared } from "../../openviking/queue.ts";
import { enqueueShared as enqueueAll, type PendingWrite } from "../support/queue.ts";

const msg = (i: number, sessionId: string): PendingWrite => ({
  type: "addMessage",
  sessionId,
  payload: { role: "user", content: `message ${i}`, turn_id: String(i) },
});
const options = () => ({ limit: 50, maxRetries: 3, ttlDays: 7, budget: new Budget(10_000) });

Deno.test("replay: while an older write of a session is claimed elsewhere, its later writes wait", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    const q = `${dir.path}/pending`;
    const now = Date.now();
    await enqueueAll(q, [msg(0, "kc-a"), msg(1, "kc-a"), msg(2, "kc-a")], now - 1000);
    await enqueueAll(q, [msg(0, "kc-b")], now);
    // Another run claimed the oldest write of kc-a (and is sending it, or was killed while doing so).
    const [oldest] = await listShared(q);
    await Deno.rename(`${q}/${oldest.name}`, `${q}/${oldest.name.replace(/\.json$/, ".processing")}`);
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    const report = await replayShared(q, client, options());
    assertEquals(fake.messages("kc-a").map((m) => m.content), [], "kc-a's later writes wait");
    assertEquals(fake.messages("kc-b").map((m) => m.content), ["message 0"], "other sessions go on");
    assertEquals([report.replayed, report.deferred], [1, 2]);

    // The claim is given up (the run finished without sending, or its claim aged out): order is kept.
    await Deno.rename(`${q}/${oldest.name.replace(/\.json$/, ".processing")}`, `${q}/${oldest.name}`);
    await replayShared(q, client, options());
    assertEquals(fake.messages("kc-a").map((m) => m.content), ["message 0", "message 1", "message 2"]);
  } finally {
    await fake.close();
  }
});
