/**
 * What a session start's and a commit's detached workers (in-process) do besides the queue: the extraction
 * alarm, the strict scope's record, the plugin's system prompt, the ledger pruned at most once a day.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FAKE_DIGEST, type FakeTask } from "../support/fake-openviking.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { type World, world } from "./world.ts";
import { dirName } from "../../lib/paths.ts";

const SERVER_WORDS = "VLM call failed: Error code: 401 - invalid api key for model gpt-4o-mini";
const ALARM_LINE =
  /^openviking-kimi: OpenViking makes no memory \(the last 3 extractions failed\); `[^`\n]+ doctor` says why$/;

/** A finished commit task of session `sid`, `ageS` seconds old. */
function task(sid: string, n: number, status: "failed" | "completed", ageS: number): FakeTask {
  const at = Date.now() / 1000 - ageS;
  const [done, failed] = [status === "completed", status === "failed"];
  return {
    ...{ task_id: `task-${sid}-${n}`, task_type: "session_commit", status, resource_id: sid, created_at: at },
    ...{ updated_at: at, error: failed ? SERVER_WORDS : null },
    result: done ? { session_id: sid, memories_extracted: { events: 1 } } : null,
  };
}

/** SessionStart of `session` (its worker runs in the hook, in-process: over when it returns); its stdout. */
const start = (w: World, session: string, more = {}) =>
  w.runAs(session, "session-start", { source: "startup" }, more);
const prompt = (w: World, session: string, text: string, more = {}) =>
  w.runAs(session, "user-prompt-submit", { prompt: text }, more);

Deno.test("three failed extractions: the next session's first prompt says so once; status and doctor quote the server", async () => {
  await using w = await world();
  const { fake } = w;
  await Deno.mkdir(`${w.home}/.kimi-code`, { recursive: true });
  const tasks = [
    task("kc-old", 1, "completed", 40),
    ...[3, 2, 1].map((n) => task("kc-old", n + 1, "failed", n * 10)),
  ];
  tasks.forEach((t, i) => fake.tasks.set(`${i}-${t.task_id}`, t));

  assertEquals(await start(w, "session_new"), "", "SessionStart prints nothing");
  assertEquals(fake.requestsTo("GET /api/v1/tasks").length, 1, "its worker asked the tasks once");
  const asked = fake.requests.length;
  const first = await prompt(w, "session_new", "how should I indent this file?");
  const lines = first.trimEnd().split("\n");
  assertEquals(lines.slice(0, -1).join("\n"), FAKE_DIGEST, "the digest comes first, unchanged");
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
  assertEquals(await prompt(w, "session_next", "how should I indent this file?"), `${FAKE_DIGEST}\n`);
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
  const uris = [...Object.values(made), "viking://user/default/memories/preferences/tabs.md"];
  fake.context = {
    entries: uris.map((uri) => ({ uri, text: `about ${uri.split("/").at(-1)}`, score: 0.9 })),
  };
  const inA = await prompt(w, "a2", "what did the last release ship?", inProject("project-a"));
  assertStringIncludes(inA, made["kc-a1"]);
  assertStringIncludes(inA, "preferences/tabs.md");
  assertEquals(inA.includes(made["kc-b1"]), false, inA);
  const inB = await prompt(w, "b2", "what did the last release ship?", inProject("project-b"));
  assertEquals([inB.includes(made["kc-a1"]), inB.includes(made["kc-b1"])], [false, true], inB);
});

Deno.test("plugin mode: the SessionStart and commit workers put the profile into the system prompt; the first prompt prints none", async () => {
  await using w = await world();
  const root = `${w.home}/.kimi-code/plugins/managed/openviking-memory`;
  await Deno.mkdir(root, { recursive: true });
  w.env.KIMI_PLUGIN_ROOT = root;
  const file = `${root}/system-prompt.md`;
  const initial = await Deno.readTextFile(new URL("../../system-prompt.md", import.meta.url));
  const worker = { [WORKER_ENV]: "1" };
  const refreshed = async () => {
    const t = await Deno.readTextFile(file);
    assertStringIncludes(t, "Name: Test User");
    return t;
  };
  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  assertEquals(await w.run("session-start", { source: "startup" }, worker), "");
  assertStringIncludes(await refreshed(), '<user-profile uri="viking://user/default/memories/profile.md">');
  assertEquals((await Deno.stat(file)).mode! & 0o777, 0o600);
  const prompt = await w.run("user-prompt-submit", { prompt: "how should I indent this?" });
  assertEquals(prompt, `${FAKE_DIGEST}\n`, "the memory, and no profile: it is in the system prompt");
  assertEquals(w.fake.requestsTo("GET /api/v1/content/read").length, 1, "profile.md read by the worker only");

  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  const old = new Date(Date.now() - 60 * 60_000);
  await Deno.utime(file, old, old);
  await w.say("remember I like tabs", "Noted.");
  assertEquals(await w.run("stop", {}, worker), "");
  assertEquals(w.commits(), 1);
  assertStringIncludes(await refreshed(), "## The user's profile");
});

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
const FORTY_DAYS = 40 * 86_400_000;

/** Writes a ledger file of the home `home` last touched `ageMs` ago; its path. */
async function ledgerFile(home: string, name: string, ageMs: number): Promise<string> {
  const ledger = `${home}/.openviking/ledger/kimicode`;
  await Deno.mkdir(ledger, { recursive: true, mode: 0o700 });
  const file = `${ledger}/${name}.jsonl`;
  await Deno.writeTextFile(file, "{}\n", { mode: 0o600 });
  const t = new Date(Date.now() - ageMs);
  await Deno.utime(file, t, t);
  return file;
}

Deno.test("session start sweeps the whole home (ledger, states' strays, temp files) at most once a day, inline too", async () => {
  await using w = await world({ env: { OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  const stamp = `${w.home}/.openviking/state/kimicode-housekeeping.json`;
  const stray = `${w.home}/.openviking/hook-state/kimicode/killed.json.lock`;
  const temp = `${w.home}/.openviking/state/kimicode-made.json.1.0123abcd.tmp`;
  await Deno.mkdir(`${w.home}/.openviking/state`, { recursive: true, mode: 0o700 });
  await Deno.mkdir(dirName(stray), { recursive: true, mode: 0o700 });
  const start = async (session: string) => {
    const old = await ledgerFile(w.home, "session_old", FORTY_DAYS);
    await Deno.writeTextFile(stray, "");
    await Deno.writeTextFile(temp, "");
    for (const f of [stray, temp]) {
      await Deno.utime(f, new Date(Date.now() - FORTY_DAYS), new Date(Date.now() - FORTY_DAYS));
    }
    await w.hook("session-start", { source: "startup" }, session);
    assertEquals(await exists(stray), await exists(old), "the states' strays go in the same sweep");
    assertEquals(
      await exists(temp),
      await exists(old),
      "as do killed writes' temp files in the shared state",
    );
    return await exists(old);
  };
  const swept = async (ago: number) => {
    const t = new Date(Date.now() - ago);
    await Deno.writeTextFile(stamp, `{"at":${t.getTime()}}\n`, { mode: 0o600 });
    await Deno.utime(stamp, t, t);
  };
  await swept(3600_000);
  assertEquals(await start("session_a"), true, "swept an hour ago: not again");
  await swept(25 * 3600_000);
  assertEquals(await start("session_b"), false, "swept a day ago: the 40-day-old file goes now");
  assertEquals(await start("session_c"), true, "and then not again for a day");
});
