/**
 * Detached workers through the real entry point, what only processes show: a Stop's parent is gone before
 * its worker's first request, and its idle watch commits and ends; an interrupt whose budget runs out, or that
 * cannot have the session lock, leaves a worker that delivers (no later hook comes after a SIGINT in print
 * mode).
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { readLedger } from "../../memory/ledger.ts";
import { JournalBuilder } from "../support/journal.ts";
import { withLock } from "../../lib/lock.ts";
import { cliArgs, denoEnv, runCli } from "../support/run.ts";
import { ourQueue } from "../support/queue.ts";
import { sandbox, SESSION, stdinOf, waitFor, world } from "./world.ts";

/** State letter of a process per `ps` ("Z" once it exited but was not yet reaped; "" when gone). */
function procState(pid: number): string {
  const out = new Deno.Command("ps", {
    args: ["-o", "stat=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  })
    .outputSync();
  return new TextDecoder().decode(out.stdout).trim().slice(0, 1);
}

Deno.test({
  name:
    "hook stop: the parent has exited before the worker's first request reaches the server; under balanced the worker's watch commits the idle session, then ends",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using s = await world({
      env: { OPENVIKING_COMMIT_POLICY: "balanced", OPENVIKING_IDLE_COMMIT_SECONDS: "1" },
    });
    await s.say("a fact taught in kimi -p", "kept it in mind");
    let [parentPid, seen] = [0, [] as string[]];
    s.fake.onRequest = () => seen.push(procState(parentPid));
    const args = [...(await cliArgs()), "hook", "stop"];
    const io = { stdin: "piped", stdout: "piped", stderr: "piped" } as const;
    const child = new Deno.Command(Deno.execPath(), { args, env: { ...denoEnv(), ...s.env }, ...io }).spawn();
    parentPid = child.pid;
    assertTrue(procState(Deno.pid) !== "", "the probe can see a live process");
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdinOf("stop")));
    await w.close();
    const out = await child.output();
    assertEquals([out.code, new TextDecoder().decode(out.stdout)], [0, ""]);
    const ledger = async () =>
      (await readLedger(`${s.home}/.openviking/ledger/kimicode`, SESSION)).map((e) =>
        e.kind === "capture" && `${e.event}:${e.commit}`
      );
    await waitFor("the watch's commit", async () => (await ledger()).includes("idle:committed"));
    assertEquals(await ledger(), ["stop:none", "idle:committed"], "the watch committed, not the Stop");
    const dir = `${s.home}/.openviking/hook-state/kimicode`;
    await waitFor(
      "the watch to end",
      () => ![...Deno.readDirSync(dir)].some((e) => e.name.startsWith("idle-watch-")),
    );
    assertEquals([s.stored().length, s.commits()], [2, 1]);
    assertTrue(seen.length >= 2);
    for (const state of seen) {
      assertTrue(state === "Z" || state === "", `parent state at a request: ${state}`);
    }
  },
});

Deno.test("hook interrupt whose 2 s budget runs out before the commit: the commit is queued and goes out at once, detached, and the batch whose reply never came is not sent twice", async () => {
  await using s = await sandbox("fine");
  // The server takes the batch only after the hook gave up on its reply: the hook queued it as unsure.
  s.fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", hold: true, times: 1 });
  const r = await runCli(["hook", "interrupt"], {
    env: { ...s.env, OPENVIKING_TIMEOUT_MS: "5000" },
    clearEnv: true,
    stdin: stdinOf("interrupt", SESSION, { turn_id: 2, reason: "cancelled" }),
  });
  assertEquals([r.code, r.stdout], [0, ""]);
  await waitFor("the commit", () => s.commits() >= 1);
  await waitFor("the queue to empty", async () => (await ourQueue(s.pending)).length === 0);
  const stored = s.stored();
  assertEquals(new Set(stored).size, 6, "every message of the interrupted session is stored");
  assertEquals(stored.length, 6, "the replay asked the session before sending the unanswered batch again");
  assertEquals(s.commits(), 1, "the interrupted session is committed");
});

Deno.test("an interrupt that cannot have the session lock in its budget leaves a worker that captures the turn", async () => {
  await using s = await world();
  const said = () => s.fake.messages(s.ov).map((m) => `${m.role}: ${m.content}`);
  await s.journal(
    new JournalBuilder().prompt("deploy it now").stepBegin().text("deploying to staging first").toString(),
  );
  await Deno.mkdir(`${s.home}/.openviking/hook-state/kimicode`, { recursive: true });
  // Another run (the idle watch's commit, a slow Stop worker) holds the session while Kimi is interrupted.
  await withLock(`${s.stateFile()}.lock`, async () => {
    const run = await runCli(["hook", "interrupt"], { env: s.env, stdin: stdinOf("interrupt", s.session) });
    assertEquals([run.code, run.stdout, said()], [0, "", []]);
  }, { waitMs: 0 });
  await waitFor("the worker's capture", () => said().length >= 2);
  assertEquals(said(), ["user: deploy it now", "assistant: deploying to staging first"]);
});
