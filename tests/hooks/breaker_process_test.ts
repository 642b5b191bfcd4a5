/**
 * The recall breaker through the real entry point: a server that never answers costs one prompt its budget,
 * once; later prompts ask it nothing, the session is told once, and a probe brings recall back.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FAKE_DIGEST, FakeOpenViking } from "../support/fake-openviking.ts";
import { startHungServer } from "../support/hung-server.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { readLedger } from "../../memory/ledger.ts";
import { JournalBuilder } from "../support/journal.ts";
import { doctorCheck, stdinOf, waitFor, world } from "./world.ts";
import { runIn } from "../cli/in-process.ts";

const PAUSED_LINE =
  /^openviking-kimi: memory paused — OpenViking at http:\/\/127\.0\.0\.1:\d+ did not answer; `[^`\n]+ status` says why\n$/;

/** The environment of a home `home` whose server is `url`, with a prompt budget of `budgetMs`. */
const envFor = (home: string, url: string, budgetMs: number): Record<string, string> => ({
  HOME: home,
  KIMI_CODE_HOME: `${home}/.kimi-code`,
  OPENVIKING_URL: url,
  OPENVIKING_PROMPT_BUDGET_MS: String(budgetMs),
  PATH: Deno.env.get("PATH") ?? "/usr/bin",
});

/** Runs one prompt hook of `session`; its stdout. */
async function prompt(env: Record<string, string>, session: string, text: string): Promise<string> {
  const stdin = stdinOf("user-prompt-submit", session, { prompt: [{ type: "text", text }] });
  const r = await runCli(["hook", "user-prompt-submit"], { env, clearEnv: true, stdin });
  assertEquals(r.code, 0, r.stderr);
  return r.stdout;
}

const prompts = async (home: string, session: string) =>
  (await readLedger(`${home}/.openviking/ledger/kimicode`, session)).filter((e) => e.kind === "prompt");

/** The breaker files in the home's state directory, parsed. */
async function breakers(home: string): Promise<{ path: string; value: Record<string, number> }[]> {
  const dir = `${home}/.openviking/state`;
  const names = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  return await Promise.all(
    names.filter((e) => /^kimicode-breaker-[^.]+\.json$/.test(e.name)).map(async (e) => ({ // no temp file
      path: `${dir}/${e.name}`,
      value: JSON.parse(await Deno.readTextFile(`${dir}/${e.name}`)),
    })),
  );
}

/** Moves the breaker's latest failure and probe a minute into the past: the probe interval has gone by. */
async function ageBreaker(home: string): Promise<void> {
  const [b] = await breakers(home);
  const back = (t: number | undefined) => t === undefined ? undefined : t - 60_000;
  const aged = { ...b.value, at: back(b.value.at), probedAt: back(b.value.probedAt) };
  await Deno.writeTextFile(b.path, JSON.stringify(aged));
}

const searches = (requests: string[]) => requests.filter((r) => r.startsWith("POST /api/v1/search/")).length;

Deno.test("a hung server: the first prompt waits its budget once and says so in one line; the next asks nothing", async () => {
  await using dir = await tempDir();
  const hung = startHungServer();
  try {
    const budget = 6000;
    const env = envFor(dir.path, hung.url, budget);
    const line = await prompt(env, "session_a", "how should I indent this file?");
    assertMatch(line, PAUSED_LINE);
    const [first] = await prompts(dir.path, "session_a");
    assertEquals([first.path, first.printedChars], ["paused", line.length], "the ledger says what was shown");
    assertEquals(first.failure?.kind, "unreachable");
    assertMatch(first.failure?.message ?? "", /no answer from .* within/);
    assertTrue(first.ms >= budget * 0.9, `the first prompt waited for the server (${first.ms} ms)`);
    const asked = searches(hung.requests);
    assertTrue(asked > 0, "the first prompt asked the server");

    // The same session again: nothing asked, nothing printed (it was told), no wait.
    assertEquals(await prompt(env, "session_a", "and where do the tests go?"), "");
    const second = (await prompts(dir.path, "session_a"))[1];
    assertEquals(searches(hung.requests), asked, "the second prompt asked the server nothing, nor probed it");
    assertEquals(second.path, "paused");
    assertTrue(second.ms < budget / 10, `the second prompt waited for nothing (${second.ms} ms)`);

    // Another session is told once too, and waits for nothing either.
    assertMatch(await prompt(env, "session_b", "what is the release process?"), PAUSED_LINE);
    assertEquals(await prompt(env, "session_b", "and the changelog?"), "");
    assertEquals(searches(hung.requests), asked, "no later prompt asked the server");

    // status and doctor say since when, why, and when the server is probed.
    const status = await runIn(env, ["status", "--json"]);
    const paused = JSON.parse(status.stdout).paused;
    assertEquals([paused.reason, paused.failures], [first.failure?.message, 1]);
    assertTrue(paused.since >= first.at && paused.nextProbeAt > paused.since, JSON.stringify(paused));
    const text = await runIn(env, ["status"]);
    assertMatch(
      text.stdout,
      /\nMemory {2}PAUSED: prompts do not ask the server since \d+ s ago\n +no answer from /,
    );
    await Deno.mkdir(`${dir.path}/.kimi-code`, { recursive: true });
    const recall = await doctorCheck(env, "recall");
    assertEquals(recall.status, "warn");
    assertMatch(recall.summary, /^PAUSED: prompts do not ask the server since \d+ s ago$/); // status's words
    assertMatch(recall.detail![0], /^no answer from /);
    assertMatch(recall.fix ?? "", /probes it \(a search\); recall resumes/);
  } finally {
    await hung.close();
  }
});

Deno.test("only search hangs: a capture that delivers says nothing of recall, so the next prompt asks nothing", async () => {
  await using w = await world({ env: { OPENVIKING_PROMPT_BUDGET_MS: "1500" } });
  w.fake.fault({ route: "POST /api/v1/search/search", delayMs: 1600, times: 1 });
  const ask = { prompt: [{ type: "text", text: "how should I indent this file?" }] };
  assertMatch(await w.run("user-prompt-submit", ask), /^openviking-kimi: memory paused/);
  await w.journal(new JournalBuilder().simpleTurn("how should I indent this file?", "with tabs").toString());
  await w.hook("stop");
  assertTrue(w.stored().length > 0, "the capture delivered");
  assertEquals(await w.run("user-prompt-submit", ask), "");
  assertEquals(searches(w.fake.requests.map((r) => r.route)), 1, "the next prompt asked no search");
});

for (const by of ["a due probe", "SessionStart's worker"]) {
  Deno.test(`a hung server that comes back: ${by} probes it, the breaker closes and recall resumes`, async () => {
    await using dir = await tempDir();
    const hung = startHungServer();
    const env = envFor(dir.path, hung.url, 1500);
    assertMatch(await prompt(env, "session_a", "how should I indent this file?"), PAUSED_LINE);
    await hung.close();
    await using fake = await FakeOpenViking.start({ port: hung.port });
    const session = by === "a due probe" ? "session_a" : "session_b";
    if (session === "session_a") {
      // Not due yet: paused, and no probe.
      assertEquals(await prompt(env, session, "how should I indent this file, again?"), "");
      assertEquals(fake.requests.length, 0, "a paused prompt before the probe is due asks nothing");
      await ageBreaker(dir.path);
      assertEquals(await prompt(env, session, "how should I indent this file, once more?"), "");
    } else {
      await ageBreaker(dir.path);
      const stdin = stdinOf("session-start", session, { source: "startup" });
      const start = await runCli(["hook", "session-start"], { env, clearEnv: true, stdin });
      assertEquals([start.code, start.stdout], [0, ""]);
    }
    const answered = async () => (await breakers(dir.path))[0]?.value.answeredAt !== undefined;
    await waitFor("the probe's answer", answered);
    assertEquals(fake.requestsTo("POST /api/v1/search/search").length, 1, "the probe is one search");
    if (session === "session_a") assertEquals(fake.requests.length, 1, "the probe asked what recall asks");
    assertEquals(await prompt(env, session, "how should I indent this file?"), `${FAKE_DIGEST}\n`);
    assertEquals(await breakers(dir.path), [], "the answer closed the breaker");
    const paths = (await prompts(dir.path, "session_a")).map((p) => p.path);
    assertEquals(paths, session === "session_a" ? ["paused", "paused", "paused", "context"] : ["paused"]);
  });
}

Deno.test("a hung server with memory paused: a capture asks /health briefly, then queues, waiting no request's timeout", async () => {
  await using w = await world({
    env: { OPENVIKING_PROMPT_BUDGET_MS: "1500", OPENVIKING_TIMEOUT_MS: "8000" },
  });
  w.fake.fault({ route: "POST /api/v1/search/search", delayMs: 20_000 });
  const ask = { prompt: [{ type: "text", text: "how should I indent this file?" }] };
  assertMatch(await w.run("user-prompt-submit", ask), /openviking-kimi: memory paused/);
  w.fake.fault({ route: "*", delayMs: 20_000 }); // the whole server hangs now
  const before = w.fake.requests.length;
  await w.journal(new JournalBuilder().simpleTurn("how should I indent this file?", "with tabs").toString());
  const started = Date.now();
  await w.hook("stop");
  const took = Date.now() - started;
  assertTrue(took < 4000, `the capture waited ${took} ms for a server memory knows is silent`);
  const routes = w.fake.requests.slice(before).map((r) => r.route);
  assertEquals(routes, ["GET /health"], "only /health was asked");
  const queued = await Array.fromAsync(Deno.readDir(`${w.pending}/kimicode/${w.ov}`), (e) => e.name);
  assertTrue(queued.some((n) => /-m2\.json$/.test(n)), queued.join());
  const [entry] = queued.filter((n) => n.endsWith(".json"));
  const parsed = JSON.parse(await Deno.readTextFile(`${w.pending}/kimicode/${w.ov}/${entry}`));
  assertEquals(parsed.unsure, undefined, "nothing was sent: no later replay waits to ask about it");
  // A session start's replay meanwhile waits for no request either (its /health answer is the capture's).
  const start = Date.now();
  await w.hook("session-start", { source: "startup" });
  assertTrue(Date.now() - start < 4000, `the session start waited ${Date.now() - start} ms`);
  assertEquals(w.fake.requests.slice(before).map((r) => r.route), ["GET /health"], "asked nothing more");
  // The session's last error names a server that takes connections and says nothing, not one to start.
  const status = JSON.parse((await runIn(w.env, ["status", "--json"])).stdout);
  const { lastError } = status.sessions.find((s: { kimiSessionId: string }) => s.kimiSessionId === w.session);
  assertMatch(lastError.message, /takes connections but does not answer in time/);
  assertMatch(lastError.fix, /^check the server's log/);
});
