/**
 * The extraction alarm: found by SessionStart's worker, told once on the next session's first prompt, named
 * with the server's words and the fix by `status` and `doctor`; a commit that makes memory again ends it.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FAKE_DIGEST_FIRST, FakeOpenViking, type FakeTask } from "../support/fake-openviking.ts";
import { hookIn, sandboxEnv } from "../support/hook-context.ts";
import { runIn } from "../cli/in-process.ts";
import { tempDir } from "../support/temp.ts";
import { stdinOf } from "./world.ts";

const SERVER_WORDS = "VLM call failed: Error code: 401 - invalid api key for model gpt-4o-mini";
const ALARM_LINE =
  /^openviking-kimi: OpenViking makes no memory \(the last 3 extractions failed\); `[^`\n]+ doctor` says why$/;

/** SessionStart's worker runs in the hook (in-process, detaching off): over when it returns. */
const envFor = (home: string, url: string) => sandboxEnv(home, url);

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

const hook = async (
  env: Record<string, string>,
  event: string,
  session: string,
  extra: Record<string, unknown>,
) => (await hookIn(event, { env, stdin: stdinOf(event, session, extra) })).stdout;
const start = (env: Record<string, string>, session: string) =>
  hook(env, "session-start", session, { source: "startup" });
const prompt = (env: Record<string, string>, session: string, text: string) =>
  hook(env, "user-prompt-submit", session, { prompt: text });

Deno.test("three failed extractions: the next session's first prompt says so once; status and doctor quote the server", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = envFor(dir.path, fake.url);
  await Deno.mkdir(`${dir.path}/.kimi-code`, { recursive: true });
  for (
    const [i, t] of [
      task("kc-old", 1, "completed", 40),
      ...[3, 2, 1].map((n) => task("kc-old", n + 1, "failed", n * 10)),
    ].entries()
  ) {
    fake.tasks.set(`${i}-${t.task_id}`, t);
  }

  assertEquals(await start(env, "session_new"), "", "SessionStart prints nothing");
  assertEquals(fake.requestsTo("GET /api/v1/tasks").length, 1, "its worker asked the tasks once");
  const asked = fake.requests.length;
  const first = await prompt(env, "session_new", "how should I indent this file?");
  const lines = first.trimEnd().split("\n");
  assertEquals(lines.slice(0, -1).join("\n"), FAKE_DIGEST_FIRST, "the digest comes first, unchanged");
  assertMatch(lines.at(-1)!, ALARM_LINE);
  assertEquals(fake.requestsTo("GET /api/v1/tasks").length, 1, "the prompt asked the server no task");
  assertTrue(fake.requests.length > asked, "the prompt recalled");
  assertEquals(await prompt(env, "session_new", "and where do the tests go?"), "", "told once a session");
  const recallOff = await prompt({ ...env, OPENVIKING_AUTO_RECALL: "false" }, "session_c", "and the docs?");
  assertMatch(
    recallOff,
    new RegExp(ALARM_LINE.source.replace("$", "\n$")),
    "recall off, capture on: told too",
  );

  const cli = (...args: string[]) => runIn(env, args);
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
  await start(env, "session_next");
  assertEquals(await prompt(env, "session_next", "how should I indent this file?"), `${FAKE_DIGEST_FIRST}\n`);
  assertEquals(JSON.parse((await cli("status", "--json")).stdout).extraction, undefined);
  const healthy = await cli("doctor", "--json");
  assertEquals(JSON.parse(healthy.stdout).checks.some((c: { id: string }) => c.id === "extraction"), false);
});

Deno.test("a server that cannot be asked leaves the alarm as it was and costs the prompt nothing", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = envFor(dir.path, fake.url);
  for (const n of [1, 2, 3]) fake.tasks.set(`t${n}`, task("kc-old", n, "failed", n));
  await start(env, "session_a");
  fake.fault({ route: "GET /api/v1/tasks", status: 503, times: 1 });
  await start(env, "session_b");
  assertMatch(
    (await prompt(env, "session_b", "how should I indent this file?")).trimEnd().split("\n").at(-1)!,
    ALARM_LINE,
  );
});

Deno.test("strict scope: a memory this workspace's commits made is recalled here, another workspace's is not", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const made = {
    "kc-a1": "viking://user/default/memories/events/atlas-release.md",
    "kc-b1": "viking://user/default/memories/events/borealis-release.md",
  };
  const inProject = (peer: string) => ({
    ...envFor(dir.path, fake.url),
    OPENVIKING_PEER_ID: peer,
    OPENVIKING_RECALL_PEER_SCOPE: "strict",
  });
  // Each session's start records its workspace; their commits' memory diffs name what each made.
  await start(inProject("project-a"), "a1");
  await start(inProject("project-b"), "b1");
  for (const [sid, uri] of Object.entries(made)) {
    const t = task(sid, 1, "completed", 5);
    const diff = `viking://user/default/sessions/${sid}/history/archive_001/memory_diff.json`;
    t.result = { ...t.result, memory_diff_uri: diff };
    fake.tasks.set(t.task_id, t);
    fake.files.set(diff, JSON.stringify({ operations: { adds: [{ uri }], updates: [], deletes: [] } }));
  }
  await start(inProject("project-a"), "a2"); // this worker reads the diffs
  fake.context = {
    entries: [...Object.values(made), "viking://user/default/memories/preferences/tabs.md"].map((uri) => ({
      uri,
      text: `about ${uri.split("/").at(-1)}`,
      score: 0.9,
    })),
  };
  const inA = await prompt(inProject("project-a"), "a2", "what did the last release ship?");
  assertStringIncludes(inA, made["kc-a1"]);
  assertStringIncludes(inA, "preferences/tabs.md");
  assertEquals(inA.includes(made["kc-b1"]), false, inA);
  const inB = await prompt(inProject("project-b"), "b2", "what did the last release ship?");
  assertEquals([inB.includes(made["kc-a1"]), inB.includes(made["kc-b1"])], [false, true], inB);
});
