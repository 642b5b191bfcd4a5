/**
 * Kill -9 at the moments the fault campaign found dangerous, each as one deterministic process test: a
 * capture worker killed while a later request is in flight (its second batch, the commit, or the next message
 * to a server without the batch endpoint) must already have recorded what the server accepted, so the next
 * capture sends none of it again; a replay killed mid-batch (and left a zombie) blocks nothing and its batch
 * is asked about. The capture and the replay after the kill run in-process.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import type { FakeOpenViking, FakeOptions } from "../support/fake-openviking.ts";
import { cliArgs, denoEnv, startCli } from "../support/run.ts";
import { enqueueCommit, enqueueMessages } from "../support/queue.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import type { SessionState } from "../../memory/state.ts";
import { stdinOf, waitFor, world } from "../hooks/world.ts";

const NO_SIGKILL = Deno.build.os === "windows";
const BATCH = "POST /api/v1/sessions/:id/messages/batch";
const ONE = "POST /api/v1/sessions/:id/messages";

interface Window {
  name: string;
  turns: number;
  fake?: FakeOptions;
  timeoutMs?: number;
  /** Faults that hold the request to kill at in flight. */
  faults: (fake: FakeOpenViking) => void;
  /** Kill once this says so of a request's route. */
  killAt: (route: string) => boolean;
  /** What the state records after the kill. */
  recorded: (st: SessionState) => unknown;
  expected: unknown;
  /** Every message once (else duplicates only of the write whose reply the killed worker never read). */
  exact: boolean;
}

const counter = (route: string, n: number) => {
  let seen = 0;
  return (r: string) => r === route && ++seen === n;
};
const WINDOWS: Window[] = [
  {
    name: "during its second batch: the first stays acknowledged", // 120 messages: batches of 100 + 20
    turns: 60,
    faults: (f) => f.fault({ route: BATCH, delayMs: 1500, skip: 1, times: 1 }), // the second is slow to land
    killAt: counter(BATCH, 2),
    recorded: (st) => st.ackedBelow,
    expected: 50,
    exact: false,
  },
  {
    name: "during its commit: the accepted messages are not sent again",
    turns: 2,
    timeoutMs: 5000,
    faults: (f) => f.fault({ route: "POST /api/v1/sessions/:id/commit", delayMs: 3000, times: 1 }),
    killAt: (route) => route.endsWith("/commit"),
    recorded: (st) => st.capturedKeys,
    expected: ["0:user", "0:assistant", "1:user", "1:assistant"],
    exact: true,
  },
  {
    name: "between two messages to a server without the batch endpoint",
    turns: 2,
    fake: { noBatch: 404 },
    faults: (f) => {
      f.fault({ route: ONE, times: 1 });
      f.fault({ route: ONE, delayMs: 1500, times: 1 });
    },
    killAt: counter(ONE, 2),
    recorded: (st) => st.capturedKeys,
    expected: ["0:user"],
    exact: true,
  },
];

for (const k of WINDOWS) {
  Deno.test({ name: `kill -9 of a capture worker ${k.name}`, ignore: NO_SIGKILL }, async () => {
    const env = { OPENVIKING_TIMEOUT_MS: String(k.timeoutMs ?? 1000), [WORKER_ENV]: "1" };
    await using w = await world({ fake: k.fake, env });
    await w.turns(k.turns);
    k.faults(w.fake);
    let hit = false;
    w.fake.onRequest = (r) => hit ||= k.killAt(r.route);
    const worker = await startCli(["hook", "stop"], w.env, stdinOf("stop"));
    await waitFor("the request to kill at", () => hit, 20_000);
    worker.kill("SIGKILL");
    await worker.status;
    w.fake.onRequest = undefined;
    assertEquals(k.recorded(await w.state()), k.expected, "what the server accepted was recorded");
    await w.hook("stop");
    assertEquals((await w.state()).ackedBelow, k.turns);
    await new Promise((r) => setTimeout(r, 1600)); // let the killed worker's slow request land too
    const all = Array.from({ length: k.turns }, (_, t) => [`${t}:user`, `${t}:assistant`]).flat();
    const stored = w.stored();
    assertEquals([...new Set(stored)], all, "every message, first copies in order");
    if (k.exact) assertEquals(stored, all, "each once");
    else {
      const acked = k.expected as number;
      assertEquals(
        stored.filter((m) => Number(m.split(":")[0]) < acked).length,
        2 * acked,
        "acknowledged: once",
      );
      assertTrue(stored.length - all.length <= w.fake.lostReplyMessages, "duplicates only from lost replies");
    }
  });
}

Deno.test({
  name:
    "kill -9 of a replay mid-batch, left a zombie: the next replay is not blocked, and sends nothing twice",
  ignore: NO_SIGKILL,
}, async () => {
  await using w = await world();
  const { fake, ov: sid, pending } = w;
  await enqueueMessages(
    pending,
    sid,
    [0, 1, 2].map((i) => ({ role: "user" as const, content: `note ${i}` })),
  );
  await enqueueCommit(pending, sid, `${sid}:2`);
  fake.fault({ route: BATCH, hold: true, times: 1 });
  let batches = 0;
  fake.onRequest = (r) => batches += r.route === BATCH ? 1 : 0;
  const replay = [Deno.execPath(), ...(await cliArgs()), "replay"].map((w) => `'${w}'`).join(" ");
  // The replay's parent is `sleep` (sh execs it): nobody waits for the replay, so killed it stays a zombie.
  const parent = new Deno.Command("sh", {
    args: ["-c", `${replay} >/dev/null 2>&1 & echo $!; exec sleep 60`],
    env: { ...denoEnv(), ...w.env },
    clearEnv: true,
    stdout: "piped",
  }).spawn();
  try {
    const reader = parent.stdout.getReader();
    const pid = Number(new TextDecoder().decode((await reader.read()).value).trim());
    reader.releaseLock();
    await waitFor("the replay's batch", () => batches === 1);
    Deno.kill(pid, "SIGKILL");
    const ps = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)], stdout: "piped" });
    await waitFor(
      "the killed replay to be a zombie",
      () => new TextDecoder().decode(ps.outputSync().stdout).trim().startsWith("Z"),
    );
    const started = Date.now();
    const again = await w.cli("replay");
    assertEquals(again.code, 0, `the queue is empty afterwards: ${again.stdout} ${again.stderr}`);
    assertTrue(Date.now() - started >= 1000, "it waited for the server before asking");
    assertEquals(fake.messages(sid).map((m) => m.content), ["note 0", "note 1", "note 2"], "each once");
    assertEquals(w.commits(), 1);
  } finally {
    parent.kill("SIGKILL");
    await parent.status;
  }
});
