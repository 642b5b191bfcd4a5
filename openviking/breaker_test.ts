/** The recall breaker: what opens it, what closes it, when a probe is due, and its file. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { fail, ok, route, scriptedClient } from "../tests/support/scripted-client.ts";
import { tempDir } from "../tests/support/temp.ts";
import {
  type Breaker,
  isOpen,
  isUnanswered,
  nextProbeAt,
  noteAnswered,
  noteRecall,
  probe,
  PROBE_INTERVAL_MS,
  PROBE_MAX_MS,
  probeIfDue,
  readBreaker,
} from "./breaker.ts";
import { Budget, createClient, failure } from "./client.ts";
import { startHungServer } from "../tests/support/hung-server.ts";

const URL_A = "http://127.0.0.1:1933";
const timeout = failure("unreachable", 0, {
  code: "TIMEOUT",
  message: `no answer from ${URL_A} within 8000 ms`,
});
const refused = failure("unreachable", 0, { code: "NETWORK", message: `cannot reach ${URL_A}: refused` });
const spent = failure("unreachable", 0, { code: "BUDGET_SPENT", message: "time budget spent" });
const http500 = failure("server", 500, { message: "HTTP 500" });

Deno.test("breaker: only a request the server took and never answered in time opens it", () => {
  const opens = [timeout, refused, spent, http500, undefined].map(isUnanswered);
  assertEquals(opens, [true, false, false, false, false]);
});

Deno.test("breaker: a probe is due the interval after the latest failure or probe, doubled per failure, capped", () => {
  const b: Breaker = { origin: URL_A, since: 0, at: 1000, reason: "", failures: 1 };
  assertEquals(nextProbeAt(b), 1000 + PROBE_INTERVAL_MS);
  assertEquals(nextProbeAt({ ...b, probedAt: 5000 }), 5000 + PROBE_INTERVAL_MS);
  assertEquals(nextProbeAt({ ...b, failures: 3 }), 1000 + 4 * PROBE_INTERVAL_MS);
  assertEquals(nextProbeAt({ ...b, failures: 40 }), 1000 + PROBE_MAX_MS);
});

Deno.test("breaker: opened by an unanswered recall, kept by the next, closed by an answer; a refusal changes nothing", async () => {
  await using dir = await tempDir();
  const asked = (failure?: typeof timeout) => ({ asked: true, failure });
  const first = await noteRecall(dir.path, `${URL_A}/`, undefined, asked(timeout), 1000);
  assertEquals(first, { origin: URL_A, since: 1000, at: 1000, reason: timeout.error.message, failures: 1 });
  assertEquals(await readBreaker(dir.path, `${URL_A}/some/path`), first, "one breaker per origin");
  assertEquals(await readBreaker(dir.path, "http://127.0.0.1:1934"), undefined, "another server's");
  assertTrue(isOpen(first!));

  assertEquals(await noteRecall(dir.path, URL_A, first, asked(refused), 2000), first, "refused: no change");
  assertEquals(await noteRecall(dir.path, URL_A, first, { asked: false }, 2000), first, "nothing asked");
  assertEquals(await readBreaker(dir.path, URL_A), first);

  await noteAnswered(dir.path, URL_A, 999);
  assertEquals(await readBreaker(dir.path, URL_A), first, "an answer to an older question says nothing");
  await noteAnswered(dir.path, URL_A, 3000);
  const answered = await readBreaker(dir.path, URL_A);
  assertEquals([answered?.answeredAt, isOpen(answered!)], [3000, false], "the next prompt asks");
  const again = await noteRecall(dir.path, URL_A, answered, asked(timeout), 4000);
  assertEquals([again?.since, again?.at, again?.failures, isOpen(again!)], [1000, 4000, 2, true]);

  assertEquals(
    await noteRecall(dir.path, URL_A, again, asked(http500), 5000),
    undefined,
    "an error page answers",
  );
  assertEquals(await readBreaker(dir.path, URL_A), undefined);
  assertEquals(await Array.fromAsync(Deno.readDir(dir.path)), [], "nothing left behind");
});

Deno.test("breaker: a damaged file reads as closed; without a home there is no breaker", async () => {
  await using dir = await tempDir();
  await noteRecall(dir.path, URL_A, undefined, { asked: true, failure: timeout }, 1000);
  const [file] = await Array.fromAsync(Deno.readDir(dir.path));
  for (
    const text of [
      "",
      "{",
      "[]",
      JSON.stringify({ origin: URL_A, since: "x", at: 1, failures: 1, reason: "" }),
    ]
  ) {
    await Deno.writeTextFile(`${dir.path}/${file.name}`, text);
    assertEquals(await readBreaker(dir.path, URL_A), undefined, JSON.stringify(text));
  }
  assertEquals(await noteRecall("", URL_A, undefined, { asked: true, failure: timeout }), undefined);
  assertEquals(await readBreaker("", URL_A), undefined);
});

Deno.test("breaker: a probe's answer, even an error, marks the server answering; its silence does not", async () => {
  await using dir = await tempDir();
  const probes = [[ok({}), true], [fail("server", 502), true], [fail("unreachable", 0), false]] as const;
  for (const [answer, answers] of probes) {
    await noteRecall(dir.path, URL_A, undefined, { asked: true, failure: timeout }, 1000);
    const { client, calls } = scriptedClient(() => answer, { baseUrl: URL_A });
    assertEquals(await probe(client, dir.path), answers);
    assertEquals(calls.map(route), ["POST /api/v1/search/search"]);
    assertEquals(isOpen((await readBreaker(dir.path, URL_A))!), !answers);
  }
});

Deno.test("breaker: probeIfDue probes only an open breaker whose probe is due, and records the probe", async () => {
  await using dir = await tempDir();
  const { client, calls } = scriptedClient(() => fail("unreachable", 0), { baseUrl: URL_A });
  await probeIfDue(client, dir.path, 1000);
  assertEquals(calls.length, 0, "closed: nothing to probe");
  await noteRecall(dir.path, URL_A, undefined, { asked: true, failure: timeout }, 1000);
  await probeIfDue(client, dir.path, 1000 + PROBE_INTERVAL_MS - 1);
  assertEquals(calls.length, 0, "not due yet");
  await probeIfDue(client, dir.path, 1000 + PROBE_INTERVAL_MS);
  assertEquals(calls.length, 1);
  assertEquals((await readBreaker(dir.path, URL_A))?.probedAt, 1000 + PROBE_INTERVAL_MS);
  await probeIfDue(client, dir.path, 1000 + PROBE_INTERVAL_MS + 1);
  assertEquals(calls.length, 1, "the next probe waits for the interval after this one");
});

Deno.test("breaker: a due probe of a server that never answers ends with the budget it is given", async () => {
  await using dir = await tempDir();
  const hung = startHungServer();
  const client = createClient({ baseUrl: hung.url, userAgent: "t", timeoutMs: 15_000 });
  await noteRecall(dir.path, hung.url, undefined, { asked: true, failure: timeout }, 0);
  const budget = new Budget(1000);
  await probeIfDue(client, dir.path, Date.now(), budget).finally(() => hung.close());
  assertEquals(hung.requests.map((r) => r.split(" ").slice(0, 2).join(" ")), ["POST /api/v1/search/search"]);
  const late = Date.now() - budget.deadline;
  assertTrue(late < 500, `the probe ended ${late} ms after its budget`);
});
