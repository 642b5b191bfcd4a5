/**
 * The faults users hit, through the hooks and the real CLI: a server that is not OpenViking's, a redirect,
 * OpenViking's error envelopes of codes that are not final, a refused key at session end. Each once dropped
 * every captured turn for good while doctor said "✓ captures".
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { type FakeOptions, type Fault, userKey } from "../support/fake-openviking.ts";
import { enqueueMessages, ourQueue, queuedMessages, rejectedWrites } from "../support/queue.ts";
import { sessionQueueDir } from "../../openviking/queue.ts";
import { doctorCheck, doctorChecks, world as hookWorld } from "./world.ts";

/** A hook world whose `hook` (cwd: the home) must capture, and returns the capture state. */
async function world(fake: FakeOptions = {}) {
  const w = await hookWorld({ fake, env: { OPENVIKING_TIMEOUT_MS: "2000" } });
  const hook = async (event: string, extra: Record<string, unknown> = {}) => {
    const before = (await w.state()).lastCaptureAt ?? 0;
    await w.hook(event, { cwd: w.home, ...extra });
    const after = await w.state();
    assertTrue((after.lastCaptureAt ?? 0) > before, `no capture after ${event}`);
    return after;
  };
  return { ...w, hook };
}

/** A raw reply on every route, and OpenViking's own error envelope of `code` on every route. */
const raw = (status: number, more = {}): Fault => ({ route: "*", raw: { status, ...more } });
const envelope = (status: number, code: string, message: string): Fault => ({
  route: "*",
  status,
  error: { code, message },
});
const [NOT_OV, NOT_INIT] = ["not-openviking", envelope(500, "NOT_INITIALIZED", "Vikingfs not initialized.")];
const SIX = [0, 1, 2].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
const html = { headers: { "content-type": "text/html" }, body: "<html><title>Portal</title></html>" };
// One fault per kind of cause: doctor's words and the replay depend on the kind only; every reply's kind is
// openviking/client_test.ts's table (classifyReply).
const KINDS: [string, Fault, string][] = [
  ["HTML 200", raw(200, html), NOT_OV],
  ["307", raw(307, { headers: { location: "/v2/" } }), "redirect"],
  ["500 NOT_INITIALIZED", NOT_INIT, "server"],
];
/** What doctor's captures check says for each kind. */
const SAYS: Record<string, RegExp> = {
  redirect: /redirects/,
  [NOT_OV]: /not an OpenViking server/,
  server: /cannot take requests now/,
};

for (const [name, fault, kind] of KINDS) {
  Deno.test(`world: a ${name} while capturing keeps every turn queued; fixed, replay delivers 6 of 6 once`, async () => {
    await using w = await world();
    await w.turns(3);
    w.fake.fault(fault);
    const st = await w.hook("stop");
    assertEquals([w.stored().length, (await queuedMessages(w.pending)).length], [0, 6]);
    const last = st.lastCapture;
    assertEquals([last?.queued, last?.rejected, last?.cause?.kind], [6, 0, kind]);
    assertEquals((await ourQueue(w.pending)).at(-1)?.kind, "commit", "the commit waits behind its messages");
    w.fake.fault(fault);
    const { captures, server } = (await doctorChecks(w.env)).checks;
    assertEquals([captures.status, server.status], ["warn", "fail"], 'not "✓ captures"');
    assertMatch(captures.summary, SAYS[kind]);
    assertTrue(Boolean(captures.fix), "names the fix");
    w.fake.clearFaults();
    const replay = await w.cli("replay");
    assertEquals(replay.code, 0, replay.stderr);
    assertEquals([w.stored(), w.commits()], [SIX, 1]);
    await w.hook("stop");
    assertEquals(w.stored().length, 6, "the next Stop sends nothing again");
  });
}

Deno.test("world: every message write refused for good is kept and shown as refused, never delivered; fixed, `replay --rejected` delivers 6 of 6", async () => {
  await using w = await world();
  const refuse = () => {
    w.fake.clearFaults();
    for (const route of ["POST /api/v1/sessions/:id/messages/batch", "POST /api/v1/sessions/:id/messages"]) {
      w.fake.fault({ route, status: 400, error: { code: "INVALID_ARGUMENT", message: "content: too long" } });
    }
  };
  refuse();
  await w.turns(2);
  await w.hook("stop"); // turns 0–1 refused as they are sent
  w.fake.clearFaults();
  w.fake.fault({ route: "*", drop: true });
  await w.turns(1);
  await w.hook("stop"); // turn 2 queued while the server is away…
  refuse();
  const replay = await w.cli("replay");
  assertEquals(replay.code, 0, "…and refused when the queue is replayed: the queue is empty");
  assertEquals([w.stored().length, (await queuedMessages(w.pending)).length], [0, 0]);
  const kept = await rejectedWrites(w.pending);
  assertEquals(
    kept.filter((k) => k.kind === "message").map((k) => `${k.payload?.turn_id}:${k.payload?.role}`),
    SIX,
  );

  const status = await w.cli("status");
  assertMatch(status.stdout, /captured 3 turn\(s\): 0 message\(s\) delivered, 2 queued, 4 refused/);
  assertMatch(status.stdout, /refused and kept: 6 message\(s\), 2 commit\(s\)/);
  assertMatch(status.stdout, /commit \d+ s ago: refused by OpenViking\n/);
  assertMatch(status.stdout, /Rejected 6 message\(s\), 2 commit\(s\) of 1 session\(s\)/);
  assertMatch(status.stdout.replace(/\s+/g, " "), / replay --rejected`/); // wrapped at 80 columns where it falls
  assertTrue(!/[1-9]\d* message\(s\) delivered/.test(status.stdout), status.stdout);
  const json = JSON.parse((await w.cli("status", "--json")).stdout);
  assertEquals(json.sessions[0].rejected, { entries: 8, messages: 6, commits: 2 });
  assertEquals([json.rejected.messages, json.rejected.commits, json.rejected.sessions], [6, 2, 1]);

  const check = await doctorCheck(w.env, "rejected");
  assertEquals(check.status, "warn");
  assertMatch(check.summary, /^6 message\(s\), 2 commit\(s\) of 1 session\(s\), kept in /); // status's words
  assertMatch(check.detail![0], /\(HTTP 404\): Session not found/, "the server's words for the newest");
  assertMatch(check.fix ?? "", / replay --rejected`/);

  // The server is fixed: every kept write goes out once, in order; nothing is left.
  w.fake.clearFaults();
  const again = await w.cli("replay", "--rejected");
  assertEquals(again.code, 0, again.stderr);
  assertEquals(w.stored(), SIX);
  assertEquals([w.commits(), await rejectedWrites(w.pending)], [2, []]);
  assertEquals((await doctorCheck(w.env, "rejected")).status, "ok");
});

Deno.test("world: a refused key while the session ends queues everything; with the key fixed all 6 arrive", async () => {
  // An expired key and its replacement: two keys of the same user, as OpenViking makes them.
  const [right, expired] = [userKey("acme", "coder"), userKey("acme", "coder")];
  await using w = await world({ apiKey: right });
  w.env.OPENVIKING_API_KEY = expired;
  await w.turns(3);
  const st = await w.hook("session-end", { reason: "exit" });
  assertEquals([w.stored().length, (await queuedMessages(w.pending)).length], [0, 6]);
  assertEquals(st.lastCapture?.cause?.kind, "auth");
  const commits = (await ourQueue(w.pending)).filter((q) => q.kind === "commit");
  assertEquals(commits.length, 1, "SessionEnd's commit too");
  w.env.OPENVIKING_API_KEY = right;
  // The next session's start replays the queue.
  assertEquals(await w.runAs("session_next", "session-start"), "");
  assertEquals([w.stored().length, w.commits()], [6, 1]);
});

Deno.test("world: writes queued under coder's key never go with another user's key for the same URL; coder's sends them", async () => {
  await using w = await world({ rootKey: "the-root-key" });
  const admin = async (path: string, body: Record<string, string>) => {
    const headers = { authorization: "Bearer the-root-key", "content-type": "application/json" };
    const init = { method: "POST", headers, body: JSON.stringify(body) };
    return (await (await fetch(`${w.fake.url}/api/v1/admin/accounts${path}`, init)).json()).result
      .user_key as string;
  };
  const coder = await admin("", { account_id: "acme", admin_user_id: "coder" });
  const bo = await admin("/acme/users", { user_id: "bo" });
  w.env.OPENVIKING_API_KEY = coder;
  await w.turns(1);
  w.fake.fault({ route: "*", status: 503 });
  await w.hook("stop"); // the turn's 2 messages and their commit, queued
  w.fake.clearFaults();
  w.env.OPENVIKING_API_KEY = bo;
  const from = w.fake.requests.length;
  const r = await w.cli("replay");
  const sent = w.fake.requests.slice(from).filter((q) => q.path.startsWith("/api/v1/sessions"));
  const left = (await queuedMessages(w.pending)).length;
  assertEquals([sent.length, w.stored(), left], [0, [], 2], "none with bo's key");
  for (const out of [r.stderr, (await w.cli("status")).stdout]) {
    assertTrue(out.includes("OPENVIKING_API_KEY=<acme/coder's key> "), out);
  }
  w.env.OPENVIKING_API_KEY = coder;
  assertEquals((await w.cli("replay")).code, 0);
  assertEquals([w.stored().length, w.commits()], [2, 1]);
});

Deno.test("world: the last turns of a session that ends during an outage are committed after recovery", async () => {
  await using w = await world();
  await w.turns(2);
  w.fake.fault({ route: "*", status: 503 });
  await w.hook("stop"); // turns 0–1 and their commit, queued
  await w.turns(1);
  await w.hook("session-end", { reason: "exit" }); // turn 2 and its own commit, queued
  const queued = (await ourQueue(w.pending)).map((q) =>
    q.kind === "commit" ? "COMMIT" : `${q.payload?.turn_id}:${q.payload?.role[0]}`
  );
  assertEquals(queued, ["0:u", "0:a", "1:u", "1:a", "COMMIT", "2:u", "2:a", "COMMIT"]);
  w.fake.clearFaults();
  const from = w.fake.requests.length;
  assertEquals((await w.cli("replay")).code, 0);
  const seen = w.fake.requests.slice(from).filter((r) => r.method === "POST").flatMap((r) =>
    r.path.endsWith("/commit")
      ? ["COMMIT"]
      : ((r.body as { messages?: { turn_id: string; role: string }[] }).messages ?? []).map((m) =>
        `${m.turn_id}:${m.role[0]}`
      )
  );
  assertEquals(seen, queued, "the server saw every write, in order: turn 2 is committed too");
  assertEquals(w.commits(), 2);
});

Deno.test("world: doctor and replay never print a key the server quotes back, nor user:KEY@ of a URL", async () => {
  await using w = await world({ apiKey: "right-key-789" });
  const key = "sk-leaky-0123456789abcdef";
  w.env.OPENVIKING_API_KEY = key;
  const error = { code: "UNAUTHENTICATED", message: `invalid api key: Bearer ${key}` };
  w.fake.fault({ route: "POST /api/v1/search/find", status: 401, error });
  for (const url of [w.env.OPENVIKING_URL, `http://someone:${key}@${new URL(w.fake.url).host}`]) {
    w.env.OPENVIKING_URL = url;
    for (const args of [["doctor"], ["doctor", "--json"], ["replay"]]) {
      const r = await w.cli(...args);
      const out = `${r.stdout}${r.stderr}`;
      assertTrue(!out.includes(key) && !out.includes("someone:"), `${args.join(" ")} printed a key`);
    }
  }
});

Deno.test("world: FIFOs in one session's queue are never opened: another session's capture, doctor (it counts them unread) and status finish, replay sets them aside", async () => {
  if (Deno.build.os === "windows") return;
  await using w = await world();
  // Session A's queue: one real entry, then 300 "entries" that are FIFOs — reading one would hang forever.
  const other = "kc-session_backlog-a";
  await enqueueMessages(w.pending, other, [{ role: "user", content: "queued while offline", turn_id: "0" }]);
  const dir = await sessionQueueDir(w.pending, other);
  for (let i = 2; i <= 301; i++) {
    const fifo = `${dir}/${String(i).padStart(10, "0")}-m100.json`;
    assertEquals((await new Deno.Command("mkfifo", { args: ["-m", "600", fifo] }).output()).code, 0);
  }
  await w.turns(3);
  await w.hook("stop");
  assertEquals(w.stored().length, 6, "session B captured, A's backlog untouched");
  const queue = await doctorCheck(w.env, "queue");
  assertMatch(queue.summary, /30001 message\(s\)/, `counted from the file names alone: ${queue.summary}`);
  assertEquals((await w.cli("status")).code, 0, "status finishes");
  // Replay sets the FIFOs aside, as they were, and delivers the real entry.
  assertEquals((await w.cli("replay")).code, 0);
  assertEquals(w.fake.messages(other).map((m) => m.content), ["queued while offline"]);
  assertTrue((await Deno.lstat(`${dir}/0000000002-m100.json.unreadable`)).isFifo, "kept aside, a FIFO");
});
