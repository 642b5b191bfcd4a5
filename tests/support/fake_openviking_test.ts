import { assertEquals } from "./assert.ts";
import { FakeOpenViking } from "./fake-openviking.ts";

async function post(url: string, body: unknown): Promise<[number, Record<string, unknown>]> {
  const r = await fetch(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  });
  return [r.status, await r.json()];
}

Deno.test("fake OpenViking: search rejects unknown fields like the real server, session routes do not; batch ≤ 100; commit needs a session", async () => {
  const fake = await FakeOpenViking.start();
  try {
    assertEquals(
      (await post(`${fake.url}/api/v1/search/search`, { query: "q", mode: "context", nope: 1 }))[0],
      400,
    );
    assertEquals(
      (await post(`${fake.url}/api/v1/search/search`, { query: "q", dedup_turns: 5 }))[0],
      400,
      "context field without mode=context",
    );
    const extraField = { role: "user", content: "x", extra: 1 };
    assertEquals(
      (await post(`${fake.url}/api/v1/sessions/s/messages`, extraField))[0],
      200,
      "session routes accept unknown fields",
    );
    const numericTurn = { role: "user", content: "x", turn_id: 0 };
    assertEquals(
      (await post(`${fake.url}/api/v1/sessions/s/messages`, numericTurn))[0],
      400,
      "turn_id must be a string",
    );
    const many = Array.from({ length: 101 }, () => ({ role: "user", content: "x" }));
    assertEquals((await post(`${fake.url}/api/v1/sessions/s/messages/batch`, { messages: many }))[0], 400);
    assertEquals((await post(`${fake.url}/api/v1/sessions/none/commit`, {}))[0], 404);
    assertEquals(
      (await post(`${fake.url}/api/v1/sessions/s/messages`, { role: "user", content: "x" }))[0],
      200,
    );
    const [status, body] = await post(`${fake.url}/api/v1/sessions/s/commit`, {});
    assertEquals([status, (body.result as Record<string, unknown>).status], [200, "accepted"]);
  } finally {
    await fake.close();
  }
});

Deno.test("fake OpenViking: legacy search, missing batch, lost reply stores the write", async () => {
  const fake = await FakeOpenViking.start({ legacySearch: true, noBatch: 405 });
  try {
    const [status, body] = await post(`${fake.url}/api/v1/search/search`, { query: "q", mode: "context" });
    assertEquals(status, 400);
    assertEquals(JSON.stringify(body).includes("Extra inputs"), true);
    assertEquals((await post(`${fake.url}/api/v1/sessions/s/messages/batch`, { messages: [] }))[0], 405);
    fake.fault({ route: "POST /api/v1/sessions/:id/messages", lostReply: true, times: 1 });
    let failed = false;
    await post(`${fake.url}/api/v1/sessions/s/messages`, { role: "user", content: "stored" }).catch(() =>
      failed = true
    );
    assertEquals([failed, fake.messages("s").length], [true, 1]);
  } finally {
    await fake.close();
  }
});
