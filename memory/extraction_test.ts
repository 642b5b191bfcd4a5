import { assertEquals, assertStringIncludes } from "../tests/support/assert.ts";
import { fail, ok, scriptedClient } from "../tests/support/scripted-client.ts";
import { tempDir } from "../tests/support/temp.ts";
import {
  alarmOf,
  alarmWords,
  checkExtraction,
  EMPTY_IN_A_ROW,
  FAILED_IN_A_ROW,
  madeIn,
  readAlarm,
} from "./extraction.ts";

const ORIGIN = "http://127.0.0.1:1933";
const failed = (error = "model: 401 invalid api key") => ({ resource_id: "kc-s", status: "failed", error });
const empty = () => ({ resource_id: "kc-s", status: "completed", result: { memories_extracted: {} } });
const made = (n = 1) => ({
  resource_id: "kc-s",
  status: "completed",
  result: { memories_extracted: { events: n } },
});

Deno.test("alarm: three failed extractions in a row, newest first, with the newest failure's words", () => {
  const tasks = [failed("newest"), failed(), failed(), made()];
  assertEquals(alarmOf(tasks, ORIGIN), { origin: ORIGIN, commits: 3, failed: 3, error: "newest" });
  assertEquals(alarmOf(tasks.slice(1, 3), ORIGIN), undefined, "two failures are no alarm yet");
  assertEquals(FAILED_IN_A_ROW, 3);
});

Deno.test("alarm: a commit that made memory ends the run; pending ones and other clients' sessions do not count", () => {
  assertEquals(alarmOf([made(), failed(), failed(), failed()], ORIGIN), undefined);
  const pending = { resource_id: "kc-s", status: "running" };
  const theirs = { ...made(), resource_id: "cc-other" };
  assertEquals(alarmOf([pending, theirs, failed(), failed(), failed()], ORIGIN)?.failed, 3);
});

Deno.test("alarm: commits that complete with no memory sound it only after EMPTY_IN_A_ROW in a row", () => {
  const five = Array.from({ length: EMPTY_IN_A_ROW }, empty);
  assertEquals(alarmOf(five.slice(1), ORIGIN), undefined);
  assertEquals(alarmOf([...five, made()], ORIGIN), { origin: ORIGIN, commits: EMPTY_IN_A_ROW, failed: 0 });
  // `total`, when the server gives it, is the count; else the kinds are summed.
  const totalZero = { ...made(2), result: { memories_extracted: { events: 2, total: 0 } } };
  assertEquals(alarmOf([totalZero, ...five.slice(1)], ORIGIN)?.commits, EMPTY_IN_A_ROW);
  // Failures mixed in count toward the run; the words are the newest failure's.
  assertEquals(alarmOf([empty(), failed("x"), ...five.slice(2)], ORIGIN)?.error, "x");
});

Deno.test("alarm words: the server's words and the model configuration as the fix", () => {
  const f = alarmWords({ origin: ORIGIN, commits: 3, failed: 3, error: "VLM   call failed:\n401" });
  assertEquals(f.kind, "failed");
  assertEquals(f.summary, "the last 3 memory extractions on the server failed: VLM call failed: 401");
  assertStringIncludes(f.fix, "ov.conf");
  const e = alarmWords({ origin: ORIGIN, commits: EMPTY_IN_A_ROW, failed: 0 });
  assertEquals([e.kind, e.summary], ["empty", `the last ${EMPTY_IN_A_ROW} commits made no memory`]);
  assertStringIncludes(e.fix, "`vlm`");
});

Deno.test("alarm file: kept while it holds, for its server only; an unanswered ask keeps it, an answer ends it", async () => {
  await using dir = await tempDir();
  const url = "http://ov.test:1933";
  const asking = (answer: ReturnType<typeof ok> | ReturnType<typeof fail>) =>
    scriptedClient(() => answer).client;
  const tasks = [failed("bad model"), failed(), failed()];
  assertEquals((await checkExtraction(asking(ok(tasks)), dir.path))?.failed, 3);
  assertEquals((await readAlarm(dir.path, url))?.error, "bad model");
  assertEquals(
    await readAlarm(dir.path, "http://other:1933"),
    undefined,
    "another server's alarm is not this one's",
  );
  assertEquals(await checkExtraction(asking(fail("server", 503)), dir.path), null);
  assertEquals((await readAlarm(dir.path, url))?.failed, 3, "a server that cannot say keeps the alarm");
  assertEquals(await checkExtraction(asking(ok([made(), ...tasks])), dir.path), undefined);
  assertEquals(await readAlarm(dir.path, url), undefined, "a commit that made memory ends it");
  await Deno.writeTextFile(`${dir.path}/kimicode-extraction-alarm.json`, "[1,");
  assertEquals(await readAlarm(dir.path, url), undefined, "a file that is not one is no alarm");
});

Deno.test("what each workspace's commits made: its sessions' diffs, read once; a diff that cannot be read is asked again", async () => {
  await using dir = await tempDir();
  const diff = "viking://user/default/sessions/kc-a/history/archive_001/memory_diff.json";
  const commit = { ...made(), resource_id: "kc-a", task_id: "t1", result: { memory_diff_uri: diff } };
  const other = { ...made(), resource_id: "kc-unknown", task_id: "t2", result: { memory_diff_uri: diff } };
  const uri = "viking://user/default/memories/events/a.md";
  const run = async (read: ReturnType<typeof ok> | ReturnType<typeof fail>) => {
    const { client, calls } = scriptedClient((c) => c.path === "/api/v1/tasks" ? ok([commit, other]) : read);
    await checkExtraction(client, dir.path, { session: "kc-a", peer: "p-a" });
    return calls.filter((c) => c.path === "/api/v1/content/read").length;
  };
  assertEquals(await run(fail("server", 503)), 1, "only the diff of a session whose workspace is known");
  assertEquals([...await madeIn(dir.path, "p-a")], []);
  const diffText = JSON.stringify({ operations: { adds: [{ uri }], updates: [] } });
  assertEquals(await run(ok(diffText)), 1, "asked again");
  assertEquals([...await madeIn(dir.path, "p-a")], [uri]);
  assertEquals(await run(ok(diffText)), 0, "read once");
  assertEquals([...await madeIn(dir.path, "p-b")], [], "another workspace made nothing");
});

Deno.test("a workspace or session named like an object's members (constructor, toString, __proto__) breaks nothing", async () => {
  await using dir = await tempDir();
  const diff = "viking://user/default/sessions/kc-a/history/archive_001/memory_diff.json";
  const uri = "viking://user/default/memories/events/a.md";
  const diffText = JSON.stringify({ operations: { adds: [{ uri }], updates: [] } });
  for (const peer of ["constructor", "toString", "__proto__"]) {
    const commit = {
      ...made(),
      resource_id: `kc-${peer}`,
      task_id: `t-${peer}`,
      result: { memory_diff_uri: diff },
    };
    const { client } = scriptedClient((c) => c.path === "/api/v1/tasks" ? ok([commit]) : ok(diffText));
    await checkExtraction(client, dir.path, { session: "constructor", peer });
    await checkExtraction(client, dir.path, { session: `kc-${peer}`, peer });
    // `__proto__` is dropped by the record's parser: no memory kept for it, and no crash.
    assertEquals([...await madeIn(dir.path, peer)], peer === "__proto__" ? [] : [uri], peer);
  }
  assertEquals([...await madeIn(dir.path, "hasOwnProperty")], []);
});
