/**
 * Kill -9 at the moments the fault campaign found dangerous, each as one deterministic process test: a
 * capture worker killed while a later request is in flight (the commit, or the next message to a server
 * without the batch endpoint) must already have recorded what the server accepted, so the next capture sends
 * none of it again; a replay killed mid-batch (and left a zombie) blocks nothing and its batch is asked
 * about. The capture and the replay after the kill run in-process.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import type { FakeOptions } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, startCli } from "../support/run.ts";
import { enqueueCommit, enqueueMessages } from "../support/queue.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { stdinOf, waitFor, world } from "../hooks/world.ts";

const NO_SIGKILL = Deno.build.os === "windows";
const STORED = ["0:user", "0:assistant", "1:user", "1:assistant"];

/**
 * A world whose two-turn session's capture worker is killed once `killAt` says so (the fake set up by
 * `setUp` first); the next capture runs in-process as that worker would.
 */
async function killWorkerWhen(killAt: (route: string) => boolean, fake: FakeOptions = {}, timeoutMs = 5000) {
  const w = await world({ fake, env: { OPENVIKING_TIMEOUT_MS: String(timeoutMs), [WORKER_ENV]: "1" } });
  return Object.assign(w, {
    async kill(setUp: () => void) {
      setUp();
      const journal = new JournalBuilder().simpleTurn("first question about tabs", "first answer about tabs")
        .simpleTurn("second question about spaces", "second answer about spaces");
      await w.journal(journal.toString());
      let hit = false;
      w.fake.onRequest = (r) => hit ||= killAt(r.route);
      const worker = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
      await waitFor("the request to kill at", () => hit, 20_000);
      worker.kill("SIGKILL");
      await worker.status;
      w.fake.onRequest = undefined;
    },
  });
}

Deno.test({
  name: "kill -9 of a capture worker during its commit: the accepted messages are not sent again",
  ignore: NO_SIGKILL,
}, async () => {
  await using w = await killWorkerWhen((route) => route.endsWith("/commit"));
  await w.kill(() => w.fake.fault({ route: "POST /api/v1/sessions/:id/commit", delayMs: 3000, times: 1 }));
  assertEquals(w.stored(), STORED, "the batch was accepted before the commit");
  assertEquals((await w.state()).capturedKeys, STORED);
  await w.hook("stop");
  assertEquals(w.stored(), STORED, "nothing was sent twice");
  assertEquals(w.fake.lostReplyMessages, 0);
});

Deno.test({
  name: "kill -9 of a capture worker between two messages to a server without the batch endpoint",
  ignore: NO_SIGKILL,
}, async () => {
  let messages = 0;
  const second = (route: string) => route.endsWith("/messages") && ++messages === 2;
  await using w = await killWorkerWhen(second, { noBatch: 404 }, 1000);
  await w.kill(() => {
    w.fake.fault({ route: "POST /api/v1/sessions/:id/messages", times: 1 });
    w.fake.fault({ route: "POST /api/v1/sessions/:id/messages", delayMs: 1500, times: 1 });
  });
  assertEquals((await w.state()).capturedKeys, ["0:user"], "the first accepted message was recorded");
  await w.hook("stop");
  assertEquals(w.stored(), STORED, "each once, in order");
});

Deno.test({
  name:
    "kill -9 of a replay mid-batch, left a zombie: the next replay is not blocked, and sends nothing twice",
  ignore: NO_SIGKILL,
}, async () => {
  await using w = await world();
  const { fake, ov: sid, pending } = w;
  const env = { ...denoEnv(), ...w.env };
  await enqueueMessages(
    pending,
    sid,
    [0, 1, 2].map((i) => ({ role: "user" as const, content: `note ${i}` })),
  );
  await enqueueCommit(pending, sid, `${sid}:2`);
  fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", hold: true, times: 1 });
  let batches = 0;
  fake.onRequest = (r) => batches += r.route.endsWith("/batch") ? 1 : 0;
  const replay = [Deno.execPath(), ...(await cliArgs()), "replay"].map((w) => `'${w}'`).join(" ");
  // The replay's parent is `sleep` (sh execs it): nobody waits for the replay, so killed it stays a zombie.
  const parent = new Deno.Command("sh", {
    args: ["-c", `${replay} >/dev/null 2>&1 & echo $!; exec sleep 60`],
    env,
    clearEnv: true,
    stdout: "piped",
  }).spawn();
  try {
    const reader = parent.stdout.getReader();
    const pid = Number(new TextDecoder().decode((await reader.read()).value).trim());
    reader.releaseLock();
    await waitFor("the replay's batch", () => batches === 1);
    Deno.kill(pid, "SIGKILL");
    const stat = () =>
      new TextDecoder().decode(
        new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)], stdout: "piped" }).outputSync()
          .stdout,
      ).trim();
    await waitFor("the killed replay to be a zombie", () => stat().startsWith("Z"));
    const started = Date.now();
    const again = await w.cli("replay");
    assertEquals(again.code, 0, `the queue is empty afterwards: ${again.stdout} ${again.stderr}`);
    assertTrue(Date.now() - started >= 1000, "it waited for the server before asking");
    assertEquals(fake.messages(sid).map((m) => m.content), ["note 0", "note 1", "note 2"], "each once");
    assertEquals(fake.sessions.get(sid)?.commits, 1);
  } finally {
    parent.kill("SIGKILL");
    await parent.status;
  }
});
