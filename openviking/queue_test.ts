/** Session writes (batches, one by one, a settled prefix, the rest queued), the queues on disk and their replay. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { FakeOpenViking, userKey } from "../tests/support/fake-openviking.ts";
import { tempDir } from "../tests/support/temp.ts";
import {
  clientOf,
  contents,
  enqueueCommit,
  enqueueMessages,
  keepRefused,
  ourQueue,
  payload,
  queuedMessages,
  range,
  rejectedWrites,
  replayOpts as opts,
} from "../tests/support/queue.ts";
import { Budget, createClient, failure } from "./client.ts";
import { type Answer, type Call, fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import {
  BATCH_LIMIT,
  BATCH_MAX_BYTES,
  commitSession,
  elsewhereWords,
  hasUnsent,
  type MessagePayload,
  nextBatchEnd,
  QUEUE_SUBDIR,
  queueSummary,
  REJECTED_MAX_BYTES,
  REJECTED_MAX_ENTRIES,
  REJECTED_SUBDIR,
  replayQueue,
  sendMessages,
  SessionQueue,
  sessionQueueDir,
  unsureFrom,
} from "./queue.ts";
import { startHungServer } from "../tests/support/hung-server.ts";
import { withLock } from "../lib/lock.ts";

Deno.test("enqueue: one file per batch in a per-session dir, sequence-named (modes: security_test); queued messages dedupe", async () => {
  await using dir = await tempDir();
  assertEquals(await enqueueMessages(dir.path, "kc-s1", range(250), 1000), 250);
  const sdir = await sessionQueueDir(dir.path, "kc-s1");
  const files = [...Deno.readDirSync(sdir)].map((e) => e.name).sort();
  assertEquals(files, ["0000000001-m100.json", "0000000002-m100.json", "0000000003-m50.json"], "sizes");
  // Queueing messages already queued (a run that could not record its ack) adds nothing.
  assertEquals(await enqueueMessages(dir.path, "kc-s1", range(260), 2000), 260);
  assertEquals(
    (await queuedMessages(dir.path)).map((q) => q.payload?.content),
    range(260).map((p) => p.content),
  );
  assertEquals([...Deno.readDirSync(sdir)].length, 4);
  // The same commit again is a no-op; another capture's commit is its own.
  for (const key of ["k129", "k129", "k130"]) assertTrue(await enqueueCommit(dir.path, "kc-s1", key));
  const commits = (await ourQueue(dir.path)).filter((q) => q.kind === "commit").map((q) => q.commitKey);
  assertEquals(commits, ["k129", "k130"]);
  const summary = (await queueSummary(dir.path)).sessions.map((
    s,
  ) => [s.sessionId, s.entries, s.messages, s.commits]);
  assertEquals([summary, (await queueSummary(dir.path)).sessions[0].oldest], [[["kc-s1", 6, 260, 2]], 1000]);
});

Deno.test("replay: batches in sequence order, commits behind their messages; the queue empties", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  await enqueueMessages(dir.path, "kc-s1", range(150));
  await enqueueCommit(dir.path, "kc-s1", "k1");
  await enqueueMessages(dir.path, "kc-s1", range(3, 150));
  await enqueueCommit(dir.path, "kc-s1", "k2");
  const r = await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals([r.replayed, r.messages, r.deferred, r.commitTasks.length], [5, 153, 0, 2]);
  assertEquals(contents(fake), range(153).map((p) => p.content));
  assertEquals(fake.requestsTo("POST /api/v1/sessions/:id/messages/batch").length, 3, "one per entry");
  assertEquals(fake.sessions.get("kc-s1")?.commits, 2, "the second capture's commit is not lost");
  assertEquals(await hasUnsent(dir.path, "kc-s1"), false);
  assertEquals([...Deno.readDirSync(`${dir.path}/${QUEUE_SUBDIR}`)].length, 0, "empty session dirs go");
});

Deno.test("replay: entries queued while the clock ran ahead still replay in the order they were queued", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  await enqueueMessages(dir.path, "kc-s1", range(2), Date.now() + 3_600_000); // clock an hour ahead
  await enqueueMessages(dir.path, "kc-s1", range(2, 2), Date.now()); // clock corrected
  await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals(contents(fake), range(4).map((p) => p.content));
});

Deno.test("replay: what OpenViking refuses for good and what waited past the TTL are kept, with why and when; --rejected sends them after the fix", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const old = Date.now() - 8 * 86_400_000;
  await enqueueMessages(dir.path, "kc-old", range(2), old);
  await enqueueMessages(dir.path, "kc-s1", range(3));
  await enqueueCommit(dir.path, "kc-s1", "k1");
  // OpenViking refuses the batch, then the second message alone, then the commit (its own envelope, HTTP 400).
  const refused = { status: 400, error: { code: "INVALID_ARGUMENT", message: "content: too long" } };
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", ...refused, times: 1 });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", ...refused, times: 1, skip: 1 });
  fake.fault({
    route: "POST /api/v1/sessions/:id/commit",
    status: 404,
    error: { details: { resource: "kc-s1" } },
  });
  const before = Date.now();
  const r = await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals([r.replayed, r.rejected, r.expired], [2, 2, 1]);
  assertEquals(contents(fake), ["message 0", "message 2"]);
  assertEquals(fake.messages("kc-old").length, 0);
  assertEquals(fake.requestsTo("POST /api/v1/sessions/:id/messages/batch").length, 1, "only kc-s1 was sent");
  assertEquals((await ourQueue(dir.path)).length, 0);
  const kept = await rejectedWrites(dir.path);
  const ttl = "waited in the queue longer than 7 days";
  assertEquals(kept.map((k) => [k.sessionId, k.payload?.content ?? k.commitKey, k.rejection?.status]), [
    ["kc-old", "message 0", 0],
    ["kc-old", "message 1", 0],
    ["kc-s1", "message 1", 400],
    ["kc-s1", "k1", 404],
  ]);
  assertEquals(kept.map((k) => k.rejection?.message), [ttl, ttl, "content: too long", "injected 404"]);
  assertTrue(kept.every((k) => k.rejection!.at >= before && k.rejection!.at <= Date.now()), "when");
  for (const k of kept) assertEquals((await Deno.stat(k.file)).mode! & 0o777, 0o600, k.file);
  for (const d of [REJECTED_SUBDIR, `${REJECTED_SUBDIR}/kc-s1`]) {
    assertEquals((await Deno.stat(`${dir.path}/${d}`)).mode! & 0o777, 0o700, d);
  }
  const newest = (await queueSummary(dir.path, REJECTED_SUBDIR)).last?.message;
  assertEquals(newest, "injected 404", "the newest's words");

  // A plain replay leaves them be; fixed, `replay --rejected` sends each once, in order.
  fake.clearFaults();
  assertEquals((await replayQueue(dir.path, clientOf(fake.url), opts())).replayed, 0);
  const again = await replayQueue(dir.path, clientOf(fake.url), opts({ rejected: true }));
  assertEquals([again.replayed, again.rejected, again.expired], [3, 0, 0], "no age limit for what is kept");
  assertEquals(contents(fake), ["message 0", "message 2", "message 1"]);
  assertEquals(contents(fake, "kc-old"), ["message 0", "message 1"]);
  assertEquals(fake.sessions.get("kc-s1")?.commits, 1);
  assertEquals(await rejectedWrites(dir.path), []);
});

Deno.test("replay --rejected: refused again it stays kept with the new words; an outage puts it back whole", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  await keepRefused(dir.path, "kc-s1", range(1), { status: 400, message: "first" });
  await keepRefused(dir.path, "kc-s1", { commit: "k" }, { status: 404, message: "no session" });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", status: 400, times: 1 });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", status: 412, times: 1 });
  const r = await replayQueue(dir.path, clientOf(fake.url), opts({ rejected: true }));
  assertEquals([r.replayed, r.rejected, r.cause?.kind], [0, 0, "server"], "412 is not final: kept as it was");
  assertEquals((await rejectedWrites(dir.path)).map((k) => k.rejection?.message), ["first", "no session"]);
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", status: 400, times: 1 });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", status: 400, times: 1 });
  // Refused again: the message, and so the commit of a session that has nothing (the server's own 404).
  const r2 = await replayQueue(dir.path, clientOf(fake.url), opts({ rejected: true }));
  assertEquals([r2.replayed, r2.rejected], [2, 2]);
  const words = (await rejectedWrites(dir.path)).map((
    k,
  ) => [k.payload?.content ?? k.commitKey, k.rejection?.status]);
  assertEquals(words, [["message 0", 400], ["k", 404]]);
  const r3 = await replayQueue(dir.path, clientOf(fake.url), opts({ rejected: true }));
  const got = [r3.replayed, r3.rejected, contents(fake), fake.sessions.get("kc-s1")?.commits];
  assertEquals(got, [2, 0, ["message 0"], 1]);
  assertEquals(await rejectedWrites(dir.path), []);
});

Deno.test("the rejected place is bounded: past its count the oldest are dropped, the newest kept", async () => {
  await using dir = await tempDir();
  // The place filled by earlier runs (written directly: a durable write each would take minutes), oldest first.
  const t0 = Date.now() - 3_600_000;
  for (let i = 0; i < REJECTED_MAX_ENTRIES; i++) {
    const sid = `kc-${i % 7}`;
    const sdir = await sessionQueueDir(dir.path, sid, REJECTED_SUBDIR);
    await Deno.mkdir(sdir, { recursive: true, mode: 0o700 });
    const file = `${sdir}/${String(Math.floor(i / 7) + 1).padStart(10, "0")}-m1.json`;
    const messages = [{ key: `k${i}`, payload: payload(i) }];
    const entry = { version: 1, kind: "messages", sessionId: sid, seq: 1, createdAt: t0, messages };
    const rejection = { at: t0 + i, status: 400, message: `no ${i}` };
    await Deno.writeTextFile(file, JSON.stringify({ ...entry, rejection }), { mode: 0o600 });
    await Deno.utime(file, new Date(t0 + i * 1000), new Date(t0 + i * 1000));
  }
  for (let i = REJECTED_MAX_ENTRIES; i < REJECTED_MAX_ENTRIES + 3; i++) {
    const why = { status: 400, message: `no ${i}` };
    await keepRefused(dir.path, `kc-${i % 7}`, [payload(i)], why);
    // A refusal's time is in ms and a keep takes about one: two in one ms are equally new, and the summary
    // then names whichever session directory it lists last (the flake under --parallel).
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const s = await queueSummary(dir.path, REJECTED_SUBDIR);
  assertEquals(s.entries, REJECTED_MAX_ENTRIES);
  const kept = new Set((await rejectedWrites(dir.path)).map((k) => k.payload?.content));
  assertEquals([kept.has("message 0"), kept.has("message 2"), kept.has("message 3")], [false, false, true]);
  assertEquals(kept.has(`message ${REJECTED_MAX_ENTRIES + 2}`), true);
  assertEquals(s.last?.message, `no ${REJECTED_MAX_ENTRIES + 2}`);
  // Bytes: one write larger than the whole bound leaves only itself (the newest is never dropped).
  const big = { role: "user" as const, content: "x".repeat(REJECTED_MAX_BYTES) };
  await keepRefused(dir.path, "kc-big", [big], { status: 400, message: "too long" });
  assertEquals((await rejectedWrites(dir.path)).map((k) => k.sessionId), ["kc-big"]);
});

Deno.test("replay: progress inside an entry is kept, so a stop half-way never sends the first half again", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ noBatch: 404 });
  await enqueueMessages(dir.path, "kc-s1", range(4));
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", status: 503, times: 1, skip: 2 });
  const r1 = await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals([r1.replayed, r1.messages], [0, 2]);
  assertEquals((await queuedMessages(dir.path)).map((q) => q.payload?.content), ["message 2", "message 3"]);
  await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals(contents(fake), range(4).map((p) => p.content));
});

Deno.test("replay: bounded in entries per run; a session filter replays only that session", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  for (let i = 0; i < 7; i++) await enqueueMessages(dir.path, "kc-a", [payload(i)]);
  await enqueueMessages(dir.path, "kc-b", [payload(0)]);
  const r = await replayQueue(dir.path, clientOf(fake.url), opts({ limit: 3 }));
  assertEquals([r.replayed, r.deferred], [3, 5]);
  const only = await replayQueue(dir.path, clientOf(fake.url), opts({ sessionId: "kc-b" }));
  const left = (await queuedMessages(dir.path, "kc-a")).length;
  assertEquals([only.replayed, fake.messages("kc-b").length, left], [1, 1, 4]);
});

Deno.test("replay: a claim whose replay died is taken over at once, whatever its pid; asked about once the server had a timeout more, what it holds is not sent again", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const claimed = async (sid: string, pid: number) => {
    await enqueueMessages(dir.path, sid, range(2));
    const sdir = await sessionQueueDir(dir.path, sid);
    await Deno.rename(`${sdir}/0000000001-m2.json`, `${sdir}/0000000001-m2.${pid}.claim`);
    return sdir;
  };
  const gone = { pid: 2 ** 30 + 7 }; // beyond any pid_max: no process has it
  await claimed("kc-gone", gone.pid);
  await claimed("kc-alive-pid", Deno.pid); // a live process by that pid (reused, or a zombie) proves nothing
  await claimed("kc-committed", gone.pid);
  // The dead replays had sent the first message of each before they died; one was committed since.
  for (const sid of ["kc-gone", "kc-alive-pid", "kc-committed"]) {
    fake.sessions.set(sid, { messages: [{ ...payload(0) }], commits: 0 });
  }
  Object.assign(fake.sessions.get("kc-committed")!, { commits: 1, archived: 1, archiveEnds: [1] });
  const busy = await claimed("kc-busy", gone.pid);
  // A replay of kc-busy runs right now in another process: its lock is held.
  const replay = (now?: number) => replayQueue(dir.path, clientOf(fake.url), opts({ now }));
  const early = await withLock(`${busy}/replay.lock`, () => replay());
  assertTrue(early.acquired);
  assertEquals(fake.requests.length, 0, "its last request may still be being stored: nothing asked yet");
  assertEquals([early.value.deferred, early.value.waitUntil! - Date.now() <= 2000], [4, true]);
  const report = await withLock(`${busy}/replay.lock`, () => replay(Date.now() + 2000));
  assertEquals(
    ["kc-gone", "kc-alive-pid", "kc-committed"].map((s) => contents(fake, s)),
    [0, 1, 2].map(() => ["message 0", "message 1"]),
    "taken over at once; the message already there (or archived) not sent again",
  );
  assertEquals(contents(fake, "kc-busy"), [], "a session another replay holds waits for it");
  assertTrue(report.acquired);
  assertEquals([report.value.replayed, report.value.held, report.value.deferred], [3, 3, 1]);
  assertEquals(await hasUnsent(dir.path, "kc-busy"), true);
  assertEquals(await hasUnsent(dir.path, "kc-gone"), false, "an emptied queue directory goes");
});

Deno.test("replay: a server that cannot say what an unsure write's session holds, for no answer, is not sent it too; another failure still sends", async () => {
  const cases = [[fail("unreachable", 0, "no answer within 15000 ms"), 1], [fail("server", 500), 2]] as const;
  for (const [asked, calls] of cases) {
    await using dir = await tempDir();
    const queue = await SessionQueue.open(dir.path, "kc-s1", undefined);
    await queue.messages(range(2), { unsure: Date.now() - 1 });
    const hung = scriptedClient((_, n) => n === 0 ? asked : fail("unreachable", 0, "no answer"));
    const r = await replayQueue(dir.path, hung.client, opts());
    assertEquals(hung.calls.length, calls, hung.calls.map(route).join(", "));
    assertEquals([r.replayed, (await queuedMessages(dir.path)).length], [0, 2], "nothing lost");
  }
});

Deno.test("hasUnsent, SessionQueue.waiting: queued or claimed writes of a session hold back its new writes", async () => {
  await using dir = await tempDir();
  assertEquals(await hasUnsent(dir.path, "kc-s1"), false);
  const opened = await SessionQueue.open(dir.path, "kc-s3", undefined);
  assertEquals(opened.waiting, false);
  assertEquals(await opened.messages(range(1, 5)), 1);
  assertEquals(opened.waiting, true, "its own appends count");
  await enqueueMessages(dir.path, "kc-s1", [payload(0)]);
  await enqueueMessages(dir.path, "kc-other", [payload(1)]);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), true);
  assertEquals((await SessionQueue.open(dir.path, "kc-s1", undefined)).waiting, true);
  const other = await SessionQueue.open(dir.path, "kc-s2", undefined);
  assertEquals(other.waiting, false, "another session's queue is its own");
  const sdir = await sessionQueueDir(dir.path, "kc-s1");
  await Deno.rename(`${sdir}/0000000001-m1.json`, `${sdir}/0000000001-m1.${Deno.pid}.claim`);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), true, "a replay is sending it right now");
  await Deno.remove(`${sdir}/0000000001-m1.${Deno.pid}.claim`);
  assertEquals(await hasUnsent(dir.path, "kc-s1"), false);
});

Deno.test("replay: a write goes only to the server and identity it was queued for; another's stay queued, in order, and are named", async () => {
  await using dir = await tempDir();
  const gone = startHungServer();
  await gone.close();
  const queuedFor = createClient({ baseUrl: gone.url, userAgent: "t", timeoutMs: 2000, user: "ana" });
  const budget = new Budget(5000);
  const base = { budget, pendingDir: dir.path };
  assertEquals((await sendMessages(queuedFor, "kc-a", range(2), base)).queued, 2);
  assertEquals((await commitSession(queuedFor, "kc-a", { ...base, key: "k1" })).kind, "queued");
  await using other = await FakeOpenViking.start();
  const toOther = createClient({ baseUrl: other.url, userAgent: "t", timeoutMs: 2000, user: "ana" });
  await sendMessages(toOther, "kc-a", range(1, 2), { ...base, queueOnly: true });
  await sendMessages(toOther, "kc-b", range(1), { ...base, queueOnly: true });
  const r = await replayQueue(dir.path, toOther, opts());
  assertEquals([r.replayed, contents(other, "kc-a"), contents(other, "kc-b")], [1, [], ["message 0"]]);
  assertEquals(r.elsewhere, [{ url: gone.url, account: "", user: "ana", key: "", messages: 3, commits: 1 }]);
  assertEquals((await queuedMessages(dir.path, "kc-a")).length, 3, "nothing of kc-a went, nothing was lost");
  await using back = await FakeOpenViking.start({ port: gone.port });
  const otherUser = createClient({ baseUrl: `${gone.url}/`, userAgent: "t", timeoutMs: 2000, user: "bo" });
  assertEquals((await replayQueue(dir.path, otherUser, opts())).replayed, 0, "another user's");
  const home = await replayQueue(
    dir.path,
    createClient({ ...queuedFor.options, baseUrl: `${gone.url}/` }),
    opts(),
  );
  assertEquals([home.replayed, contents(back, "kc-a"), home.elsewhere], [2, ["message 0", "message 1"], [
    { url: other.url, account: "", user: "ana", key: "", messages: 1, commits: 0 },
  ]]);
  assertEquals((await replayQueue(dir.path, toOther, opts())).replayed, 1, "then the rest goes to its own");
  assertEquals(contents(other, "kc-a"), ["message 2"]);
});

Deno.test("replay: a write queued under one user's key never goes with another user's key of the same URL; a new key of the same user sends it", async () => {
  await using dir = await tempDir();
  const gone = startHungServer();
  await gone.close();
  const keyed = (apiKey: string) =>
    createClient({ baseUrl: gone.url, userAgent: "t", timeoutMs: 2000, apiKey });
  const [coder, other, renewed] = [userKey("acme", "coder"), userKey("acme", "bo"), userKey("acme", "coder")];
  const base = { budget: new Budget(5000), pendingDir: dir.path };
  assertEquals((await sendMessages(keyed(coder), "kc-a", range(2), base)).queued, 2);
  assertEquals((await commitSession(keyed(coder), "kc-a", { ...base, key: "k1" })).kind, "queued");
  assertEquals((await sendMessages(keyed("key-ana"), "kc-b", range(1), base)).queued, 1);
  await using back = await FakeOpenViking.start({ port: gone.port });
  const bo = await replayQueue(dir.path, keyed(other), opts());
  assertEquals([bo.replayed, contents(back, "kc-a"), contents(back, "kc-b")], [0, [], []], "nothing goes");
  assertEquals(bo.elsewhere.map((e) => [e.url, e.owner, e.messages, e.commits]), [
    [gone.url, "acme/coder", 2, 1],
    [gone.url, undefined, 1, 0],
  ]);
  const words = elsewhereWords(bo.elsewhere)!;
  assertTrue(
    words.fix.includes(`\`OPENVIKING_URL=${gone.url} OPENVIKING_API_KEY=<acme/coder's key> `) &&
      words.fix.includes(`\`OPENVIKING_URL=${gone.url} OPENVIKING_API_KEY=<the key they were queued under> `),
    words.fix,
  );
  assertEquals((await queuedMessages(dir.path)).length, 3, "it stays queued");
  const same = await replayQueue(dir.path, keyed(renewed), opts());
  const sent = [same.replayed, contents(back, "kc-a"), back.sessions.get("kc-a")?.commits];
  assertEquals(sent, [2, ["message 0", "message 1"], 1]);
  assertEquals(contents(back, "kc-b"), [], "a key that names no user: only that key sends it");
  assertEquals((await replayQueue(dir.path, keyed("key-ana"), opts())).replayed, 1);
  assertEquals(contents(back, "kc-b"), ["message 0"]);
});

Deno.test("replay: a write queued with no key (none saved yet, or refused without one) goes with the key the user then gives", async () => {
  await using dir = await tempDir();
  const gone = startHungServer();
  await gone.close();
  const base = { budget: new Budget(5000), pendingDir: dir.path };
  const keyless = createClient({ baseUrl: gone.url, userAgent: "t", timeoutMs: 2000 });
  assertEquals((await sendMessages(keyless, "kc-n", range(2), base)).queued, 2);
  await using back = await FakeOpenViking.start({ port: gone.port });
  const apiKey = userKey("acme", "coder");
  const keyed = createClient({ baseUrl: gone.url, userAgent: "t", timeoutMs: 2000, apiKey });
  const r = await replayQueue(dir.path, keyed, opts());
  assertEquals([r.messages, r.elsewhere.length, contents(back, "kc-n")], [2, 0, ["message 0", "message 1"]]);
});

Deno.test("an entry over 1 MiB (a long answer, the capture knob raised) is replayed whole, never set aside", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const answer = { ...payload(0), content: `long ${"y".repeat(1_500_000)}` };
  assertEquals(await enqueueMessages(dir.path, "kc-s1", [answer]), 1);
  const r = await replayQueue(dir.path, clientOf(fake.url), opts());
  assertEquals([r.replayed, r.messages], [1, 1]);
  assertEquals(contents(fake), [answer.content]);
  assertEquals(await ourQueue(dir.path), [], "nothing left, nothing set aside");
});

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
  return (body.messages ?? [body as MessagePayload]).map((m) => Number(m.content.split(":")[0]));
}

/**
 * Sends to a scripted server with a scratch queue behind it: the report, the calls, every settled prefix the
 * caller was told of, what was queued and which queue files are unsure.
 */
async function deliver(script: (c: Call, n: number) => Answer, payloads: MessagePayload[]) {
  await using dir = await tempDir();
  const { client, calls } = scriptedClient(script);
  const settledSeen: number[] = [];
  const r = await sendMessages(client, "kc-s", payloads, {
    budget: new Budget(5000),
    pendingDir: dir.path,
    onAcked: (n) => Promise.resolve(void settledSeen.push(n)),
  });
  const d = { settled: r.acked - r.queued, sent: r.sent, rejections: r.rejections, stop: r.cause };
  const number = (m: { payload?: { content: string } }) => Number(m.payload!.content.split(":")[0]);
  const queued = (await queuedMessages(dir.path, "kc-s")).map(number);
  const unsure = (await ourQueue(dir.path)).map((q) => q.file).filter((f, i, all) => all.indexOf(f) === i)
    .map((f) => typeof JSON.parse(Deno.readTextFileSync(f)).unsure === "number");
  return { r, d, calls, settledSeen, queued, unsure };
}

/** Sends with a 5 s budget and the queue under `pendingDir`. */
const send = (
  client: Parameters<typeof sendMessages>[0],
  payloads: MessagePayload[],
  pendingDir: string,
  extra: Partial<Parameters<typeof sendMessages>[3]> = {},
) => sendMessages(client, "kc-s", payloads, { budget: new Budget(5000), pendingDir, ...extra });
const upTo = (n: number, from = 0) => Array.from({ length: n - from }, (_, i) => from + i);

Deno.test("batches: at most 100 messages and 512 KB each, never empty, a giant message alone", () => {
  assertEquals([nextBatchEnd(msgs(250), 0), nextBatchEnd(msgs(250), 200)], [BATCH_LIMIT, 250]);
  assertEquals(nextBatchEnd(msgs(10, 200 * 1024), 0), 2, "two of 200 KB fit under 512 KB, three do not");
  const giant = [msg(0, BATCH_MAX_BYTES * 2), msg(1)];
  assertEquals(
    [nextBatchEnd(giant, 0), nextBatchEnd(giant, 1)],
    [1, 2],
    "a message over the bound goes alone",
  );
});

Deno.test("send: batches in order, each settled prefix reported before the next request", async () => {
  const { d, calls, settledSeen } = await deliver(() => ok({}), msgs(230));
  assertEquals(calls.map(route), [BATCH, BATCH, BATCH]);
  assertEquals(calls.map((c) => carried(c).length), [100, 100, 30]);
  assertEquals(calls.flatMap(carried), upTo(230), "every message once, in order");
  assertEquals(settledSeen, [100, 200, 230]);
  assertEquals([d.settled, d.sent, d.rejections, d.stop], [230, 230, [], undefined]);
  assertTrue(calls.every((c) => c.peerId === null), "session writes carry no actor peer");
});

Deno.test("send: no batch route (missing route, or a foreign 404/405) → one by one, from then on", async () => {
  for (const no of [fail("missing-route", 404), fail("missing-route", 405), fail("not-openviking", 404)]) {
    const { d, calls, settledSeen } = await deliver((c) => route(c) === BATCH ? no : ok({}), msgs(150));
    assertEquals(calls.filter((c) => route(c) === BATCH).length, 1, "the batch route is tried once");
    assertEquals(calls.filter((c) => route(c) === ONE).flatMap(carried), upTo(150));
    assertEquals([d.settled, d.sent, settledSeen], [150, 150, upTo(151, 1)], "settled after every message");
  }
});

Deno.test("send: a refused batch (rejected, or 413) goes one by one; only what OpenViking refuses is dropped", async () => {
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

Deno.test("send: any other failure stops at the settled prefix; the rest is queued in order behind it, unsure when it may have arrived", async () => {
  const kinds: [Answer, boolean][] = [
    [fail("server", 503), true],
    [fail("unreachable", 0), true], // NETWORK: the request went out
    [fail("auth", 401), false],
    [fail("redirect", 302), false],
    [fail("not-openviking", 200), false],
    [fail("too-large", 200), false],
  ];
  for (const [stop, unsure] of kinds) {
    const { r, d, calls, settledSeen, queued, ...q } = await deliver(
      (_, n) => n === 1 ? stop : ok({}),
      msgs(250),
    );
    assertEquals(calls.length, 2, JSON.stringify(stop));
    assertEquals([d.settled, d.sent, d.stop?.kind], [100, 100, (stop as { fail: string }).fail]);
    assertEquals(
      [settledSeen, r.acked, r.queued],
      [[100], 250, 150],
      "the sent prefix is told before the queue",
    );
    assertEquals(queued, upTo(250, 100));
    assertEquals(q.unsure, [unsure, false], "only the batch that got no verdict is unsure");
  }
  // One by one, the prefix is exact: a failure at message 7 of a refused batch settles 0..6.
  const { d } = await deliver((c) => {
    if (route(c) === BATCH) return fail("rejected", 400);
    return carried(c)[0] === 7 ? fail("server", 500) : ok({});
  }, msgs(20));
  assertEquals([d.settled, d.sent, d.stop?.status], [7, 7, 500]);
});

Deno.test("sendMessages: queueOnly sends nothing; a failing intent record or progress record stops with nothing lost", async () => {
  await using dir = await tempDir();
  const silent = scriptedClient(() => ok({}));
  const queued = await send(silent.client, msgs(3), dir.path, { queueOnly: true });
  assertEquals([silent.calls.length, queued.acked, queued.queued, queued.sent], [0, 3, 3, 0]);
  const intent = scriptedClient(() => ok({}));
  const noIntent = await send(intent.client, msgs(3), `${dir.path}/t`, {
    beforeRequest: () => Promise.reject(new Error("state is read-only")),
  });
  assertEquals([intent.calls.length, noIntent.acked, noIntent.stoppedBy?.code], [0, 0, "STATE"]);
  const progress = scriptedClient(() => ok({}));
  const noProgress = await send(progress.client, msgs(150), `${dir.path}/u`, {
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
  assertEquals([s.acked, s.sent, s.queued, s.rejections.map((x) => x.index)], [3, 2, 0, [1]]);
  assertEquals(await queuedMessages(ok2.path, "kc-s"), []);
  const kept = (await rejectedWrites(ok2.path)).map((k) => [k.sessionId, k.payload, k.rejection?.status]);
  assertEquals(kept, [["kc-s", msg(1), 400]], "the refused message is kept with the server's words");
  assertEquals((await rejectedWrites(ok2.path))[0].rejection?.message, "no");

  // Where the rejected place cannot be written, the refused message is not acknowledged: sending stops before it.
  await using full = await tempDir();
  await Deno.writeTextFile(`${full.path}/kimicode-rejected`, "a file where the rejected place goes\n");
  const stuck = await send(picky.client, msgs(3), full.path);
  assertEquals([stuck.acked, stuck.stoppedBy?.code], [1, "STATE"]);
});

Deno.test("unsureFrom: a write that went out without a reply (or met a 5xx) may be stored, asked about after a timeout more", () => {
  const f = (kind: Parameters<typeof failure>[0], status: number, code?: string) =>
    unsureFrom(failure(kind, status, { code, message: "" }), 1000, 5);
  const sure = [
    f("unreachable", 0, "CONNECT"),
    f("unreachable", 0, "BUDGET_SPENT"),
    f("server", 429),
    f("auth", 401),
  ];
  assertEquals(
    [
      f("unreachable", 0, "TIMEOUT"),
      f("server", 504),
      f("unreachable", 0, "NETWORK"),
      f("server", 500),
      ...sure,
    ],
    [1005, 1005, 5, 5, undefined, undefined, undefined, undefined],
  );
});
