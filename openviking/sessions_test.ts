/** Delivery: batches, one by one when the server has no batch route or refuses a batch, a settled prefix. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { type Answer, type Call, fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import { tempDir } from "../tests/support/temp.ts";
import { queuedMessages, rejectedWrites } from "../tests/support/queue.ts";
import { Budget, failure } from "./client.ts";
import { deliverMessages, sendMessages, unsureFrom } from "./sessions.ts";
import { BATCH_LIMIT, BATCH_MAX_BYTES, type MessagePayload, nextBatchEnd, sessionQueueDir } from "./queue.ts";

const BATCH = "POST /api/v1/sessions/kc-s/messages/batch";
const ONE = "POST /api/v1/sessions/kc-s/messages";

const msg = (i: number, size = 10): MessagePayload => ({
  role: i % 2 ? "assistant" : "user",
  content: `${i}:${"x".repeat(size)}`,
  turn_id: String(i >> 1),
});
const msgs = (n: number, size = 10) => Array.from({ length: n }, (_, i) => msg(i, size));

/** The message numbers a call carried. */
function carried(c: Call): number[] {
  const body = c.body as { messages?: MessagePayload[]; content?: string };
  const list = body.messages ?? [body as MessagePayload];
  return list.map((m) => Number(m.content.split(":")[0]));
}

/** Delivers with a recorder of every settled prefix reported. */
async function deliver(script: (c: Call, n: number) => Answer, payloads: MessagePayload[]) {
  const { client, calls } = scriptedClient(script);
  const settledSeen: number[] = [];
  const d = await deliverMessages(client, "kc-s", payloads, {
    budget: new Budget(5000),
    onSettled: (n) => Promise.resolve(void settledSeen.push(n)),
  });
  return { d, calls, settledSeen };
}

/** Sends with a 5 s budget and the queue under `pendingDir`. */
const send = (
  client: Parameters<typeof sendMessages>[0],
  payloads: MessagePayload[],
  pendingDir: string,
  extra: Partial<Parameters<typeof sendMessages>[3]> = {},
) => sendMessages(client, "kc-s", payloads, { budget: new Budget(5000), pendingDir, ...extra });

Deno.test("batches: at most 100 messages and 512 KB each, never empty, a giant message alone", () => {
  assertEquals(nextBatchEnd(msgs(250), 0), BATCH_LIMIT);
  assertEquals(nextBatchEnd(msgs(250), 200), 250);
  const big = msgs(10, 200 * 1024);
  assertEquals(nextBatchEnd(big, 0), 2, "two of 200 KB fit under 512 KB, three do not");
  const giant = [msg(0, BATCH_MAX_BYTES * 2), msg(1)];
  assertEquals(nextBatchEnd(giant, 0), 1, "a message over the bound still goes, alone");
  assertEquals(nextBatchEnd(giant, 1), 2);
});

Deno.test("deliver: batches in order, each settled prefix reported before the next request", async () => {
  const { d, calls, settledSeen } = await deliver(() => ok({}), msgs(230));
  assertEquals(calls.map(route), [BATCH, BATCH, BATCH]);
  assertEquals(calls.map((c) => carried(c).length), [100, 100, 30]);
  assertEquals(calls.flatMap(carried), msgs(230).map((_, i) => i), "every message once, in order");
  assertEquals(settledSeen, [100, 200, 230]);
  assertEquals([d.settled, d.sent, d.rejections, d.stop], [230, 230, [], undefined]);
  assertTrue(calls.every((c) => c.peerId === null), "session writes carry no actor peer");
});

Deno.test("deliver: no batch route (missing route, or a foreign 404/405) → one by one, from then on", async () => {
  for (
    const refusal of [fail("missing-route", 404), fail("missing-route", 405), fail("not-openviking", 404)]
  ) {
    const { d, calls, settledSeen } = await deliver((c) => route(c) === BATCH ? refusal : ok({}), msgs(150));
    assertEquals(calls.filter((c) => route(c) === BATCH).length, 1, "the batch route is tried once");
    assertEquals(calls.filter((c) => route(c) === ONE).flatMap(carried), msgs(150).map((_, i) => i));
    assertEquals([d.settled, d.sent], [150, 150]);
    assertEquals(settledSeen, msgs(150).map((_, i) => i + 1), "settled after every message");
  }
});

Deno.test("deliver: a refused batch (rejected, or 413) goes one by one; only what OpenViking refuses is dropped", async () => {
  for (const refusal of [fail("rejected", 400, "bad batch"), fail("server", 413, "too large")]) {
    const { d, calls } = await deliver((c) => {
      if (route(c) === BATCH) return carried(c)[0] === 0 ? refusal : ok({});
      return carried(c)[0] === 3 ? fail("rejected", 422, "message 3 refused") : ok({});
    }, msgs(105));
    // The first batch (0..99) one by one, then the next batch as a batch again.
    assertEquals(calls.map(route), [BATCH, ...Array(100).fill(ONE), BATCH]);
    assertEquals([d.settled, d.sent], [105, 104]);
    assertEquals(d.rejections, [{ index: 3, status: 422, message: "message 3 refused" }]);
  }
});

Deno.test("deliver: any other failure stops at the settled prefix (nothing after it sent)", async () => {
  const kinds: Answer[] = [
    fail("server", 503),
    fail("unreachable", 0),
    fail("auth", 401),
    fail("redirect", 302),
    fail("not-openviking", 200),
    fail("too-large", 200),
  ];
  for (const stop of kinds) {
    const { d, calls, settledSeen } = await deliver((_, n) => n === 1 ? stop : ok({}), msgs(250));
    assertEquals(calls.length, 2, JSON.stringify(stop));
    assertEquals([d.settled, d.sent, d.stop?.kind], [100, 100, (stop as { fail: string }).fail]);
    assertEquals(settledSeen, [100]);
  }
  // One by one, the prefix is exact: a failure at message 7 of a refused batch settles 0..6.
  const { d } = await deliver((c) => {
    if (route(c) === BATCH) return fail("rejected", 400);
    return carried(c)[0] === 7 ? fail("server", 500) : ok({});
  }, msgs(20));
  assertEquals([d.settled, d.sent, d.stop?.status], [7, 7, 500]);
});

Deno.test("sendMessages: what delivery could not send is queued in order behind the settled prefix", async () => {
  await using dir = await tempDir();
  const { client, calls } = scriptedClient((c, n) =>
    n === 0 ? ok({}) : route(c) === BATCH ? fail("server", 502) : ok({})
  );
  const acked: number[] = [];
  const r = await send(client, msgs(130), dir.path, { onAcked: (n) => Promise.resolve(void acked.push(n)) });
  assertEquals(calls.length, 2);
  assertEquals([r.acked, r.sent, r.queued, r.rejected, r.cause?.status], [130, 100, 30, 0, 502]);
  assertEquals(acked, [100], "the caller records the sent prefix before anything is queued");
  assertEquals(
    (await queuedMessages(dir.path, "kc-s")).map((m) => m.payload?.content),
    msgs(130).slice(100).map((m) => m.content),
  );
});

Deno.test("sendMessages: queueOnly sends nothing; a failing intent record or progress record stops with nothing lost", async () => {
  await using dir = await tempDir();
  const silent = scriptedClient(() => ok({}));
  const queued = await send(silent.client, msgs(3), dir.path, { queueOnly: true });
  assertEquals([silent.calls.length, queued.acked, queued.queued, queued.sent], [0, 3, 3, 0]);

  const intent = scriptedClient(() => ok({}));
  const noIntent = await sendMessages(intent.client, "kc-t", msgs(3), {
    budget: new Budget(5000),
    pendingDir: dir.path,
    beforeRequest: () => Promise.reject(new Error("state is read-only")),
  });
  assertEquals([intent.calls.length, noIntent.acked, noIntent.stoppedBy?.code], [0, 0, "STATE"]);

  const progress = scriptedClient(() => ok({}));
  const noProgress = await sendMessages(progress.client, "kc-u", msgs(150), {
    budget: new Budget(5000),
    pendingDir: dir.path,
    onAcked: () => Promise.reject(new Error("disk full")),
  });
  assertEquals(progress.calls.length, 1, "no request after a prefix that could not be recorded");
  assertEquals([noProgress.stoppedBy?.code, noProgress.queued], ["STATE", 0]);
});

Deno.test("sendMessages: a queue that cannot be written stops it with nothing acknowledged; rejections are kept aside, not queued", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/kimicode`, "a file where the queue directory goes\n");
  const down = scriptedClient(() => fail("unreachable", 0));
  const r = await send(down.client, msgs(2), dir.path);
  assertEquals([r.acked, r.queued, r.stoppedBy !== undefined], [0, 0, true], "stopped, nothing acknowledged");

  await using ok2 = await tempDir();
  const picky = scriptedClient((c) =>
    route(c) === BATCH ? fail("rejected", 400) : carried(c)[0] === 1 ? fail("rejected", 400, "no") : ok({})
  );
  const s = await send(picky.client, msgs(3), ok2.path);
  assertEquals([s.acked, s.sent, s.rejected, s.queued, s.rejections.map((x) => x.index)], [3, 2, 1, 0, [1]]);
  assertEquals(await queuedMessages(ok2.path, "kc-s"), []);
  assertEquals(
    (await rejectedWrites(ok2.path)).map((
      k,
    ) => [k.sessionId, k.payload, k.rejection?.status, k.rejection?.message]),
    [["kc-s", msg(1), 400, "no"]],
    "the refused message is kept with the server's words",
  );

  // Where the rejected place cannot be written, the refused message is not acknowledged: sending stops before it.
  await using full = await tempDir();
  await Deno.writeTextFile(`${full.path}/kimicode-rejected`, "a file where the rejected place goes\n");
  const stuck = await send(picky.client, msgs(3), full.path);
  assertEquals([stuck.acked, stuck.stoppedBy?.code], [1, "STATE"]);
});

Deno.test("unsureFrom: a write that went out without a reply (or met a 5xx) may be stored, asked about after a timeout more", () => {
  const f = (kind: Parameters<typeof failure>[0], status: number, code?: string) =>
    unsureFrom(failure(kind, status, { code, message: "" }), 1000, 5);
  assertEquals(
    [f("unreachable", 0, "TIMEOUT"), f("server", 504), f("unreachable", 0, "NETWORK"), f("server", 500)],
    [1005, 1005, 5, 5],
  );
  assertEquals(
    [f("unreachable", 0, "CONNECT"), f("unreachable", 0, "BUDGET_SPENT"), f("server", 429), f("auth", 401)],
    [undefined, undefined, undefined, undefined],
  );
});

Deno.test("sendMessages: the batch whose request got no reply is queued unsure, the ones behind it are not", async () => {
  await using dir = await tempDir();
  const { client } = scriptedClient((c) => route(c) === BATCH ? fail("unreachable", 0) : ok({}));
  const r = await send(client, msgs(130), dir.path);
  assertEquals([r.acked, r.sent, r.queued], [130, 0, 130]);
  const entries = await Array.fromAsync(Deno.readDir(await sessionQueueDir(dir.path, "kc-s")));
  const unsure = await Promise.all(
    entries.map((e) => e.name).sort().map(async (name) =>
      typeof JSON.parse(await Deno.readTextFile(`${await sessionQueueDir(dir.path, "kc-s")}/${name}`))
        .unsure === "number"
    ),
  );
  assertEquals(unsure, [true, false]);
});
