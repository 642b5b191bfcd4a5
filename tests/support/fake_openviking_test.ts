import { assertEquals } from "./assert.ts";
import { FakeOpenViking, type FakeOptions } from "./fake-openviking.ts";

/** A POST to the fake: its status and reply. */
async function post(url: string, body: unknown): Promise<[number, Record<string, unknown>]> {
  const r = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  });
  return [r.status, await r.json()];
}

const user = { role: "user", content: "x" };

/** [what, fake options, path, body, status]: what the fake answers, in order, as the real server does. */
const CASES: [string, FakeOptions, string, unknown, number][] = [
  ["search: an unknown field", {}, "/search/search", { query: "q", mode: "context", nope: 1 }, 400],
  ["search: a context field without mode=context", {}, "/search/search", { query: "q", dedup_turns: 5 }, 400],
  ["session routes accept unknown fields", {}, "/sessions/s/messages", { ...user, extra: 1 }, 200],
  ["turn_id must be a string", {}, "/sessions/s/messages", { ...user, turn_id: 0 }, 400],
  ["a batch holds at most 100", {}, "/sessions/s/messages/batch", { messages: Array(101).fill(user) }, 400],
  ["a commit needs a session", {}, "/sessions/none/commit", {}, 404],
  ["a server without the batch route", { noBatch: 405 }, "/sessions/s/messages/batch", { messages: [] }, 405],
];

Deno.test("fake OpenViking: search rejects unknown fields like the real server, session routes do not; batch ≤ 100; commit needs a session", async () => {
  for (const [what, options, path, body, status] of CASES) {
    await using fake = await FakeOpenViking.start(options);
    const [got, reply] = await post(`${fake.url}/api/v1${path}`, body);
    assertEquals(got, status, `${what}: ${JSON.stringify(reply)}`);
  }
  await using fake = await FakeOpenViking.start();
  await post(`${fake.url}/api/v1/sessions/s/messages`, user);
  const [status, body] = await post(`${fake.url}/api/v1/sessions/s/commit`, {});
  assertEquals([status, (body.result as Record<string, unknown>).status], [200, "accepted"]);
});

Deno.test("fake OpenViking: a lost reply stores the write", async () => {
  await using fake = await FakeOpenViking.start();
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", lostReply: true, times: 1 });
  const failed = await post(`${fake.url}/api/v1/sessions/s/messages`, { role: "user", content: "stored" })
    .then(() => false, () => true);
  assertEquals([failed, fake.messages("s").length], [true, 1]);
});
