/**
 * `openviking-kimi replay` through the command table, in-process: what it did in words by default, the same as
 * JSON with `--json`, and, when writes remain, why and the fix — with the server up and down. A FIFO in a queue:
 * tests/hooks/world_faults_test.ts.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { runIn } from "../cli/in-process.ts";
import { enqueueCommit, enqueueMessages } from "../support/queue.ts";
import { doctorCheck } from "./world.ts";

const SESSION = "kc-session_5747a705-0000-4000-8000-000000000099";

/** A home whose queue holds two messages and a commit of one session. */
async function queued(home: string): Promise<void> {
  const dir = `${home}/.openviking/pending`;
  await enqueueMessages(dir, SESSION, [
    { role: "user", content: "remember that the build runs in CI only" },
    { role: "assistant", content: "noted" },
  ]);
  await enqueueCommit(dir, SESSION, `${SESSION}:1:assistant`);
}

Deno.test("replay: with the server away, what is left, why and the fix (exit 1); back, what it sent; --json", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url);
  const replay = async (json = false) => {
    const r = await runIn(env, ["replay", ...(json ? ["--json"] : [])]);
    return { ...r, report: json ? JSON.parse(r.stdout) : undefined };
  };
  await queued(dir.path);
  fake.fault({ route: "*", drop: true });
  const away = await replay();
  assertEquals([away.code, away.stdout], [
    1,
    `Replayed nothing to ${fake.url}: 2 write(s) are still queued.\n`,
  ]);
  assertMatch(away.stderr, new RegExp(`^2 entries are still queued in .*: OpenViking at ${fake.url} `));
  assertMatch(away.stderr, /\n {2}fix: start the server/);
  const j = (await replay(true)).report;
  assertEquals([j.replayed, j.left, j.cause.kind], [0, 2, "unreachable"]);

  fake.clearFaults();
  const back = await replay();
  assertEquals([back.code, back.stdout], [
    0,
    [
      `Replayed 2 queued write(s) to ${fake.url}: 2 message(s) sent, 1 commit(s) started.`,
      "The queue is empty.",
      "",
    ].join("\n"),
  ], back.stderr);
  assertEquals(fake.messages(SESSION).length, 2);
  await queued(dir.path);
  const done = await replay(true);
  assertEquals([done.code, done.report.replayed, done.report.messages, done.report.left], [0, 2, 2, 0]);
  assertEquals([done.report.server, done.report.commitTasks.length], [fake.url, 1]);
});

Deno.test("replay: queue files it cannot read are set aside, kept, and replay, status and doctor say where and what to do", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url);
  await queued(dir.path);
  const queue = `${dir.path}/.openviking/pending/kimicode/${SESSION}`;
  const names = (await Array.fromAsync(Deno.readDir(queue))).map((e) => e.name).sort();
  const [torn, commit] = names.map((n) => `${queue}/${n}`);
  await Deno.writeTextFile(torn, (await Deno.readTextFile(torn)).slice(0, 40));
  await Deno.writeTextFile(
    commit,
    JSON.stringify({ ...JSON.parse(await Deno.readTextFile(commit)), version: 2 }),
  );
  const r = await runIn(env, ["replay"]);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /the queue is empty\.\n2 queued write\(s\) could not be read/i);
  assertStringIncludes(r.stdout, queue);
  for (const f of [torn, commit]) assertTrue((await Deno.stat(`${f}.unreadable`)).isFile, "kept");
  const s = await runIn(env, ["status"]);
  assertMatch(s.stdout, /\n {8}2 queued write\(s\) could not be read/);
  assertStringIncludes(s.stdout.replaceAll(/\s+/g, " "), queue);
  assertMatch(s.stdout, /delete/);
  const check = await doctorCheck(env, "set-aside");
  assertMatch(check.summary, /^2 queued write\(s\) could not be read .* set aside in /);
  assertStringIncludes(check.summary, queue);
  assertMatch(check.fix ?? "", /look at them.*\.unreadable.*delete/);
});
