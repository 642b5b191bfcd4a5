/**
 * `openviking-kimi replay` through the real entry point: what it did in words by default, the same as JSON
 * with `--json`, and, when writes remain, why and the fix — with the server up and down.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { sandboxEnv } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { enqueueCommit, enqueueMessages } from "../../openviking/queue.ts";

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

Deno.test("replay: says in words what it sent and that the queue is empty; --json gives the report", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url);
  await queued(dir.path);
  const r = await runCli(["replay"], { env, clearEnv: true });
  assertEquals(r.code, 0, r.stderr);
  assertTrue(!r.stdout.includes("{"), `not JSON: ${r.stdout}`);
  assertEquals(
    r.stdout,
    [
      `Replayed 2 queued write(s) to ${fake.url}: 2 message(s) sent, 1 commit(s) started.`,
      "The queue is empty.",
      "",
    ].join("\n"),
  );
  assertEquals(fake.messages(SESSION).length, 2);

  await queued(dir.path);
  const j = await runCli(["replay", "--json"], { env, clearEnv: true });
  assertEquals(j.code, 0, j.stderr);
  const report = JSON.parse(j.stdout);
  assertEquals([report.replayed, report.messages, report.left, report.server], [2, 2, 0, fake.url]);
  assertEquals(report.commitTasks.length, 1);
});

Deno.test("replay with the server away: says nothing could be sent, what is left, why and the fix; exit 1", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url);
  await queued(dir.path);
  fake.fault({ route: "*", drop: true });
  const r = await runCli(["replay"], { env, clearEnv: true });
  assertEquals(r.code, 1);
  assertEquals(r.stdout, `Replayed nothing to ${fake.url}: 2 write(s) are still queued.\n`);
  assertMatch(r.stderr, new RegExp(`^2 entries are still queued in .*: OpenViking at ${fake.url} `));
  assertMatch(r.stderr, /\n {2}fix: start the server/);
  const j = await runCli(["replay", "--json"], { env, clearEnv: true });
  assertEquals(j.code, 1);
  const report = JSON.parse(j.stdout);
  assertEquals([report.replayed, report.left, report.cause.kind], [0, 2, "unreachable"]);
});
