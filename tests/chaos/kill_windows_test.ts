/**
 * Kill -9 at the moments the fault campaign found dangerous, each as one deterministic process test: a
 * capture worker killed while a later request is in flight (the commit, or the next message to a server
 * without the batch endpoint) must already have recorded what the server accepted, so the next capture sends
 * none of it again; a replay killed mid-batch (and left a zombie) blocks nothing and its batch is asked
 * about.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, runCli, startCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";
import { enqueueCommit, enqueueMessages } from "../support/queue.ts";

const SESSION = "session_kill-window";
const NO_SIGKILL = Deno.build.os === "windows";
const CWD = "/home/user/proj";

async function waitFor(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Killed {
  fake: FakeOpenViking;
  env: Record<string, string>;
  stdin: string;
  home: string;
}

/** Runs a capture worker against `fake` and kills it when `killAt` says so; returns what the next run needs. */
async function killWorkerWhen(
  home: string,
  fake: FakeOpenViking,
  killAt: (route: string) => boolean,
  timeoutMs = 5000,
): Promise<Killed> {
  const journal = new JournalBuilder().simpleTurn("first question about tabs", "first answer about tabs")
    .simpleTurn("second question about spaces", "second answer about spaces");
  await placeJournal(home, SESSION, journal.toString());
  const env = {
    HOME: home,
    KIMI_CODE_HOME: `${home}/.kimi-code`,
    OPENVIKING_URL: fake.url,
    OPENVIKING_TIMEOUT_MS: String(timeoutMs),
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_COMMIT_POLICY: "every-turn",
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  };
  let hit = false;
  fake.onRequest = (r) => hit ||= killAt(r.route);
  const stdin = JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: CWD });
  const worker = await startCli(["hook", "stop"], { ...env, OPENVIKING_KIMI_HOOK_WORKER: "1" }, stdin);
  await waitFor("the request to kill at", () => hit);
  worker.kill("SIGKILL");
  await worker.status;
  fake.onRequest = undefined;
  return { fake, env, stdin, home };
}

async function captureAgain(k: Killed): Promise<void> {
  const again = await runCli(["hook", "stop"], {
    env: { ...k.env, OPENVIKING_KIMI_HOOK_WORKER: "1" },
    clearEnv: true,
    stdin: k.stdin,
  });
  assertEquals([again.code, again.stdout, again.stderr], [0, "", ""]);
}

const acked = async (home: string) =>
  (await readState(`${home}/.openviking/hook-state/kimicode/${SESSION}.json`)).capturedKeys;

Deno.test({
  name: "kill -9 of a capture worker during its commit: the accepted messages are not sent again",
  ignore: NO_SIGKILL,
}, async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  fake.fault({ route: "POST /api/v1/sessions/:id/commit", delayMs: 3000, times: 1 });
  const k = await killWorkerWhen(dir.path, fake, (route) => route.endsWith("/commit"));
  assertEquals(fake.messages(`kc-${SESSION}`).length, 4, "the batch was accepted before the commit");
  assertEquals(await acked(dir.path), ["0:user", "0:assistant", "1:user", "1:assistant"]);
  await captureAgain(k);
  assertEquals(fake.messages(`kc-${SESSION}`).length, 4, "nothing was sent twice");
  assertEquals(fake.lostReplyMessages, 0);
});

Deno.test({
  name: "kill -9 of a capture worker between two messages to a server without the batch endpoint",
  ignore: NO_SIGKILL,
}, async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start({ noBatch: 404 });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", times: 1 });
  fake.fault({ route: "POST /api/v1/sessions/:id/messages", delayMs: 1500, times: 1 });
  let messages = 0;
  const second = (route: string) => route.endsWith("/messages") && ++messages === 2;
  const k = await killWorkerWhen(dir.path, fake, second, 1000);
  assertEquals(await acked(dir.path), ["0:user"], "the first accepted message was recorded");
  const stored = () => fake.messages(`kc-${SESSION}`).map((m) => `${m.turn_id}:${m.role}`);
  await captureAgain(k);
  assertEquals(stored(), ["0:user", "0:assistant", "1:user", "1:assistant"], "each once, in order");
});

Deno.test({
  name:
    "kill -9 of a replay mid-batch, left a zombie: the next replay is not blocked, and sends nothing twice",
  ignore: NO_SIGKILL,
}, async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = {
    ...denoEnv(),
    HOME: dir.path,
    OPENVIKING_URL: fake.url,
    OPENVIKING_TIMEOUT_MS: "1000",
    OPENVIKING_COMMIT_POLICY: "every-turn",
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  };
  const sid = `kc-${SESSION}`;
  const pending = `${dir.path}/.openviking/pending`;
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
    const again = await runCli(["replay"], { env, clearEnv: true });
    assertEquals(again.code, 0, `the queue is empty afterwards: ${again.stdout} ${again.stderr}`);
    assertTrue(Date.now() - started >= 1000, "it waited for the server before asking");
    assertEquals(fake.messages(sid).map((m) => m.content), ["note 0", "note 1", "note 2"], "each once");
    assertEquals(fake.sessions.get(sid)?.commits, 1);
  } finally {
    parent.kill("SIGKILL");
    await parent.status;
  }
});
