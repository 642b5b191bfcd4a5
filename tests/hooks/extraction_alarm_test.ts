/**
 * The extraction alarm: found by SessionStart's worker, told once on the next session's first prompt, named
 * with the server's words and the fix by `status` and `doctor`; a commit that makes memory again ends it.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FAKE_DIGEST_FIRST, type FakeTask } from "../support/fake-openviking.ts";
import { type World, world } from "./world.ts";

const SERVER_WORDS = "VLM call failed: Error code: 401 - invalid api key for model gpt-4o-mini";
const ALARM_LINE =
  /^openviking-kimi: OpenViking makes no memory \(the last 3 extractions failed\); `[^`\n]+ doctor` says why$/;

/** A finished commit task of session `sid`, `ageS` seconds old. */
function task(sid: string, n: number, status: "failed" | "completed", ageS: number): FakeTask {
  const now = Date.now() / 1000;
  return {
    task_id: `task-${sid}-${n}`,
    task_type: "session_commit",
    status,
    resource_id: sid,
    created_at: now - ageS,
    updated_at: now - ageS,
    result: status === "completed" ? { session_id: sid, memories_extracted: { events: 1 } } : null,
    error: status === "failed" ? SERVER_WORDS : null,
  };
}

/** SessionStart of `session` (its worker runs in the hook, in-process: over when it returns); its stdout. */
const start = (w: World, session: string, more = {}) =>
  w.runAs(session, "session-start", { source: "startup" }, more);
/** The prompt hook of `session` for `text`; its stdout. */
const prompt = (w: World, session: string, text: string, more = {}) =>
  w.runAs(session, "user-prompt-submit", { prompt: text }, more);

Deno.test("three failed extractions: the next session's first prompt says so once; status and doctor quote the server", async () => {
  await using w = await world();
  const { fake } = w;
  await Deno.mkdir(`${w.home}/.kimi-code`, { recursive: true });
  for (
    const [i, t] of [
      task("kc-old", 1, "completed", 40),
      ...[3, 2, 1].map((n) => task("kc-old", n + 1, "failed", n * 10)),
    ].entries()
  ) {
    fake.tasks.set(`${i}-${t.task_id}`, t);
  }

  assertEquals(await start(w, "session_new"), "", "SessionStart prints nothing");
  assertEquals(fake.requestsTo("GET /api/v1/tasks").length, 1, "its worker asked the tasks once");
  const asked = fake.requests.length;
  const first = await prompt(w, "session_new", "how should I indent this file?");
  const lines = first.trimEnd().split("\n");
  assertEquals(lines.slice(0, -1).join("\n"), FAKE_DIGEST_FIRST, "the digest comes first, unchanged");
  assertMatch(lines.at(-1)!, ALARM_LINE);
  assertEquals(fake.requestsTo("GET /api/v1/tasks").length, 1, "the prompt asked the server no task");
  assertTrue(fake.requests.length > asked, "the prompt recalled");
  assertEquals(await prompt(w, "session_new", "and where do the tests go?"), "", "told once a session");
  const recallOff = await prompt(w, "session_c", "and the docs?", { OPENVIKING_AUTO_RECALL: "false" });
  assertMatch(
    recallOff,
    new RegExp(ALARM_LINE.source.replace("$", "\n$")),
    "recall off, capture on: told too",
  );
  // A server that cannot be asked at the next session start leaves the alarm as it was.
  fake.fault({ route: "GET /api/v1/tasks", status: 503, times: 1 });
  await start(w, "session_d");
  assertMatch((await prompt(w, "session_d", "and the linter?")).trimEnd().split("\n").at(-1)!, ALARM_LINE);

  const cli = w.cli;
  const status = JSON.parse((await cli("status", "--json")).stdout);
  assertEquals([status.extraction.commits, status.extraction.failed], [3, 3]);
  assertEquals(
    status.extraction.message,
    `the last 3 memory extractions on the server failed: ${SERVER_WORDS}`,
  );
  assertStringIncludes(status.extraction.fix, "ov.conf");
  const text = (await cli("status")).stdout;
  assertMatch(text, /\nMemory {2}NOT MADE: the last 3 memory extractions on the server failed: VLM call/);
  const doctor = await cli("doctor", "--json");
  const check = JSON.parse(doctor.stdout).checks.find((c: { id: string }) => c.id === "extraction");
  assertEquals([check.status, check.summary], ["fail", status.extraction.message]);
  assertEquals(doctor.code, 1);

  // The model fixed: a commit makes memory again; the next session start ends the alarm.
  fake.tasks.set("9-new", task("kc-session_new", 1, "completed", 0));
  await start(w, "session_next");
  assertEquals(await prompt(w, "session_next", "how should I indent this file?"), `${FAKE_DIGEST_FIRST}\n`);
  assertEquals(JSON.parse((await cli("status", "--json")).stdout).extraction, undefined);
  const healthy = await cli("doctor", "--json");
  assertEquals(JSON.parse(healthy.stdout).checks.some((c: { id: string }) => c.id === "extraction"), false);
});

Deno.test("strict scope: a memory this workspace's commits made is recalled here, another workspace's is not", async () => {
  await using w = await world();
  const { fake } = w;
  const made = {
    "kc-a1": "viking://user/default/memories/events/atlas-release.md",
    "kc-b1": "viking://user/default/memories/events/borealis-release.md",
  };
  const inProject = (peer: string) => ({ OPENVIKING_PEER_ID: peer, OPENVIKING_RECALL_PEER_SCOPE: "strict" });
  // Each session's start records its workspace; their commits' memory diffs name what each made.
  await start(w, "a1", inProject("project-a"));
  await start(w, "b1", inProject("project-b"));
  for (const [sid, uri] of Object.entries(made)) {
    const t = task(sid, 1, "completed", 5);
    const diff = `viking://user/default/sessions/${sid}/history/archive_001/memory_diff.json`;
    t.result = { ...t.result, memory_diff_uri: diff };
    fake.tasks.set(t.task_id, t);
    fake.files.set(diff, JSON.stringify({ operations: { adds: [{ uri }], updates: [], deletes: [] } }));
  }
  await start(w, "a2", inProject("project-a")); // this worker reads the diffs
  fake.context = {
    entries: [...Object.values(made), "viking://user/default/memories/preferences/tabs.md"].map((uri) => ({
      uri,
      text: `about ${uri.split("/").at(-1)}`,
      score: 0.9,
    })),
  };
  const inA = await prompt(w, "a2", "what did the last release ship?", inProject("project-a"));
  assertStringIncludes(inA, made["kc-a1"]);
  assertStringIncludes(inA, "preferences/tabs.md");
  assertEquals(inA.includes(made["kc-b1"]), false, inA);
  const inB = await prompt(w, "b2", "what did the last release ship?", inProject("project-b"));
  assertEquals([inB.includes(made["kc-a1"]), inB.includes(made["kc-b1"])], [false, true], inB);
});
