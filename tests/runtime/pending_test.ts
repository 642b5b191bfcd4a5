import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { tempDir } from "../support/temp.ts";
import { prodRunArgs, ROOT } from "../support/run.ts";
import { Budget, createClient } from "../../runtime/http.ts";
import {
  countPending,
  dedupKey,
  enqueueAll,
  hasUnsent,
  listPending,
  type PendingWrite,
  replayPending,
} from "../../runtime/pending.ts";
import { sha256Hex, stableStringify } from "../../runtime/hash.ts";

const msg = (i: number, sid = "kc-s1"): PendingWrite => ({
  type: "addMessage",
  sessionId: sid,
  payload: {
    role: i % 2 ? "assistant" : "user",
    content: `message ${i}`,
    turn_id: String(Math.floor(i / 2)),
  },
});
const opts = (extra: Partial<Parameters<typeof replayPending>[2]> = {}) => ({
  limit: 50,
  maxRetries: 3,
  ttlDays: 7,
  budget: new Budget(20_000),
  ...extra,
});

Deno.test("enqueue: upstream file format, 0600 files in a 0700 dir, dedupe on key", async () => {
  await using dir = await tempDir();
  const q = `${dir.path}/pending`;
  assertEquals(await enqueueAll(q, [msg(0), msg(1), msg(0)], 1000), 3);
  const files = [...Deno.readDirSync(q)].map((e) => e.name).sort();
  assertEquals(files.length, 2);
  for (const f of files) {
    assertTrue(/^[0-9a-f]{64}_0\.json$/.test(f), f);
    assertEquals((await Deno.stat(`${q}/${f}`)).mode! & 0o777, 0o600);
  }
  assertEquals((await Deno.stat(q)).mode! & 0o777, 0o700);
  const key = await dedupKey("addMessage", "kc-s1", msg(0).payload);
  assertEquals(key, await sha256Hex(`addMessage\nkc-s1\n${stableStringify(msg(0).payload)}`));
  const entry = JSON.parse(await Deno.readTextFile(`${q}/${key}_0.json`));
  assertEquals(entry, {
    type: "addMessage",
    sessionId: "kc-s1",
    payload: msg(0).payload,
    createdAt: 1000,
    retries: 0,
    dedupKey: key,
  });
  assertEquals(await enqueueAll(q, [msg(1)], 5000), 1, "re-queueing a queued write is a no-op");
  assertEquals((await listPending(q)).map((f) => f.entry.createdAt), [1000, 1001]);
});

Deno.test("replay: sends oldest first and empties the queue", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, [msg(0), msg(1), msg(2), {
      type: "commitSession",
      sessionId: "kc-s1",
      payload: {},
    }]);
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    const report = await replayPending(dir.path, client, opts());
    assertEquals(report, { replayed: 4, failed: 0, dropped: 0, deferred: 0, skipped: 0 });
    assertEquals(fake.messages("kc-s1").map((m) => m.content), ["message 0", "message 1", "message 2"]);
    assertEquals(fake.sessions.get("kc-s1")?.commits, 1);
    assertEquals(await countPending(dir.path), 0);
  } finally {
    await fake.close();
  }
});

Deno.test("replay: order kept across a retryable failure; unreachable server burns no retries", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, [0, 1, 2, 3, 4].map((i) => msg(i)));
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    let sent = 0;
    const r1 = await replayPending(dir.path, client, opts({ limit: 2 }));
    sent += r1.replayed;
    fake.fault({ route: "POST /api/v1/sessions/:id/messages", status: 500, times: 1 });
    const r2 = await replayPending(dir.path, client, opts());
    assertEquals([r1.replayed, r2.replayed, r2.failed, r2.deferred], [2, 0, 1, 2]);
    const left = await listPending(dir.path);
    assertEquals(left.map((f) => [f.entry.payload, f.entry.retries]), [[msg(2).payload, 1], [
      msg(3).payload,
      0,
    ], [msg(4).payload, 0]]);
    // server unreachable: nothing sent, retries unchanged
    const dead = createClient({ baseUrl: "http://127.0.0.1:9", userAgent: "t", timeoutMs: 500 });
    const r3 = await replayPending(dir.path, dead, opts());
    assertEquals([r3.failed, r3.deferred], [1, 2]);
    assertEquals((await listPending(dir.path)).map((f) => f.entry.retries), [1, 0, 0]);
    const r4 = await replayPending(dir.path, client, opts());
    sent += r4.replayed;
    assertEquals(sent, 5);
    assertEquals(fake.messages("kc-s1").map((m) => m.content), [0, 1, 2, 3, 4].map((i) => `message ${i}`));
  } finally {
    await fake.close();
  }
});

Deno.test("replay: non-retryable rejections, max retries and TTL drop entries", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    await enqueueAll(dir.path, [msg(0)], Date.now() - 8 * 86_400_000); // too old
    await enqueueAll(dir.path, [{
      type: "addMessage",
      sessionId: "kc-s1",
      payload: { role: "user", content: "x", turn_id: 7 },
    }]);
    const first = await replayPending(dir.path, client, opts());
    assertEquals([first.dropped, first.replayed], [2, 0], "too old + rejected with 400");
    await enqueueAll(dir.path, [msg(5)]);
    fake.fault({ route: "POST /api/v1/sessions/:id/messages", status: 500, times: 3 });
    const reports = [];
    for (let i = 0; i < 3; i++) reports.push(await replayPending(dir.path, client, opts()));
    assertEquals(
      reports.map((r) => [r.failed, r.dropped]),
      [[1, 0], [1, 0], [0, 1]],
      "the third 500 reaches maxRetries=3",
    );
    assertEquals(await countPending(dir.path), 0);
    assertEquals(fake.messages("kc-s1").length, 0);
  } finally {
    await fake.close();
  }
});

Deno.test("replay: bounded in count per run", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, Array.from({ length: 7 }, (_, i) => msg(i)));
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    const r = await replayPending(dir.path, client, opts({ limit: 3 }));
    assertEquals([r.replayed, r.deferred], [3, 4]);
    assertEquals(await countPending(dir.path), 4);
  } finally {
    await fake.close();
  }
});

Deno.test("replay: abandoned .processing files (> 10 min) are recovered; fresh ones are left alone", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, [msg(0), msg(1)]);
    const [a, b] = await listPending(dir.path);
    await Deno.rename(`${dir.path}/${a.name}`, `${dir.path}/${a.name.replace(".json", ".processing")}`);
    await Deno.rename(`${dir.path}/${b.name}`, `${dir.path}/${b.name.replace(".json", ".processing")}`);
    const old = new Date(Date.now() - 11 * 60_000);
    await Deno.utime(`${dir.path}/${a.name.replace(".json", ".processing")}`, old, old);
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    const r = await replayPending(dir.path, client, opts());
    assertEquals(r.replayed, 1);
    assertEquals(fake.messages("kc-s1").map((m) => m.content), ["message 0"]);
  } finally {
    await fake.close();
  }
});

Deno.test("replay: an entry written by another OpenViking plugin (Claude Code, no dedupKey field) is replayed", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    const payload = { role: "user", content: "from claude code" };
    const key = await sha256Hex(`addMessage\ncc-abc\n${JSON.stringify(payload)}`);
    await Deno.writeTextFile(
      `${dir.path}/${key}_1.json`,
      JSON.stringify({
        type: "addMessage",
        sessionId: "cc-abc",
        payload,
        createdAt: Date.now() - 1000,
        retries: 1,
      }),
      { mode: 0o600 },
    );
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    const r = await replayPending(dir.path, client, opts());
    assertEquals(r.replayed, 1);
    assertEquals(fake.messages("cc-abc"), [payload]);
  } finally {
    await fake.close();
  }
});

Deno.test("replay: a session filter replays only that session", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, [msg(0, "kc-a"), msg(1, "kc-b")]);
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    assertEquals((await replayPending(dir.path, client, opts({ sessionId: "kc-b" }))).replayed, 1);
    assertEquals([fake.messages("kc-a").length, fake.messages("kc-b").length], [0, 1]);
    assertEquals(await countPending(dir.path, "kc-a"), 1);
  } finally {
    await fake.close();
  }
});

Deno.test("two processes replaying one queue send each entry exactly once", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    const n = 40;
    await enqueueAll(dir.path, Array.from({ length: n }, (_, i) => msg(i)));
    fake.fault({ route: "POST /api/v1/sessions/:id/messages", delayMs: 5 });
    const prodArgs = await prodRunArgs();
    const run = () =>
      new Deno.Command(Deno.execPath(), {
        args: [...prodArgs, `${ROOT}/tests/support/replay-worker.ts`, dir.path, fake.url],
        stdout: "piped",
        stderr: "inherit",
      }).output();
    const outs = await Promise.all([run(), run()]);
    const reports = outs.map((o) => JSON.parse(new TextDecoder().decode(o.stdout)));
    assertEquals(reports[0].replayed + reports[1].replayed, n);
    const contents = fake.messages("kc-s1").map((m) => m.content);
    assertEquals(contents.length, n);
    assertEquals(new Set(contents).size, n);
    assertEquals(await countPending(dir.path), 0);
  } finally {
    await fake.close();
  }
});

Deno.test("enqueue: a later call in the same millisecond still sorts after an earlier batch", async () => {
  await using dir = await tempDir();
  const now = Date.now() + 60_000;
  await enqueueAll(dir.path, [msg(0), msg(1), msg(2)], now);
  await enqueueAll(dir.path, [{ type: "commitSession", sessionId: "kc-s1", payload: {} }], now);
  const entries = (await listPending(dir.path)).map((f) => f.entry);
  assertEquals(entries.map((e) => e.type), ["addMessage", "addMessage", "addMessage", "commitSession"]);
  assertEquals(entries.map((e) => e.createdAt - now), [0, 1, 2, 3], "strictly increasing, no ties");
});

Deno.test("hasUnsent: queued or in-flight (.processing) writes of a session hold back its new writes", async () => {
  await using dir = await tempDir();
  assertEquals(await hasUnsent(dir.path, "kc-s1"), false);
  await enqueueAll(dir.path, [msg(0), msg(1, "kc-other")]);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), true);
  const [mine] = (await listPending(dir.path)).filter((f) => f.entry.sessionId === "kc-s1");
  await Deno.rename(`${dir.path}/${mine.name}`, `${dir.path}/${mine.name.replace(".json", ".processing")}`);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), true, "a replay is sending it right now");
  await Deno.remove(`${dir.path}/${mine.name.replace(".json", ".processing")}`);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), false);
});

Deno.test("replay: an outage answered with 503/502/504/429 never burns retries, however long it lasts", async () => {
  await using dir = await tempDir();
  const fake = await FakeOpenViking.start();
  try {
    await enqueueAll(dir.path, [msg(0)]);
    const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
    for (const status of [503, 502, 504, 429, 503, 503]) {
      fake.fault({ route: "POST /api/v1/sessions/:id/messages", status, times: 1 });
      assertEquals((await replayPending(dir.path, client, opts())).failed, 1);
    }
    assertEquals((await listPending(dir.path)).map((f) => f.entry.retries), [0]);
    assertEquals((await replayPending(dir.path, client, opts())).replayed, 1);
  } finally {
    await fake.close();
  }
});
