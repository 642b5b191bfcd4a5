/**
 * An open turn a forced capture (Interrupt, SessionEnd) took while Kimi was still writing its answer's line:
 * the line finished afterwards is captured by the next capture, in order (the chaos campaign lost it once).
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { runCli } from "../support/run.ts";
import { withLock } from "../../lib/lock.ts";

const SESSION = "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000d4";

/** A home on the fake, a runner of one hook event, the session's messages and a writer of its journal. */
async function sandbox() {
  const dir = await tempDir();
  const fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  return {
    hook: async (event: string, name: string) => {
      const stdin = JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: "/home/user/proj" });
      assertEquals((await hookIn(event, { env, stdin })).stdout, "");
    },
    said: () => fake.messages(`kc-${SESSION}`).map((m) => `${m.role}: ${m.content}`),
    journal: (text: string) => placeJournal(dir.path, SESSION, text),
    [Symbol.asyncDispose]: async () => {
      await fake[Symbol.asyncDispose]();
      await dir[Symbol.asyncDispose]();
    },
  };
}

Deno.test("an answer line half-written at an interrupt is captured once finished, before the next turn", async () => {
  await using s = await sandbox();
  const j = new JournalBuilder().prompt("why does the build fail?").stepBegin()
    .text("the lockfile pins an old compiler");
  const whole = j.toString();
  await s.journal(whole.slice(0, whole.length - 12)); // its last line half-written
  await s.hook("interrupt", "Interrupt");
  assertEquals(s.said(), ["user: why does the build fail?"]);
  await s.journal(
    j.ended("cancelled").simpleTurn("then update it", "updated it to the current compiler").toString(),
  );
  await s.hook("stop", "Stop");
  assertEquals(s.said(), [
    "user: why does the build fail?",
    "assistant: the lockfile pins an old compiler",
    "user: then update it",
    "assistant: updated it to the current compiler",
  ]);
});

Deno.test("an answer still growing at an interrupt: what it gained afterwards is sent, what was sent is not again", async () => {
  await using s = await sandbox();
  const j = new JournalBuilder().prompt("why does the build fail?").stepBegin()
    .text("step one: the lockfile pins an old compiler.").stepEnd("tool_use").stepBegin()
    .text("step two: the cache keeps the old binary.");
  const whole = j.toString();
  await s.journal(whole.slice(0, whole.length - 12)); // step two half-written
  await s.hook("interrupt", "Interrupt");
  assertEquals(s.said().length, 2, "the prompt and step one");
  await s.journal(
    j.ended("cancelled").simpleTurn("then fix both", "fixed both of them").toString(),
  );
  await s.hook("stop", "Stop");
  const all = s.said();
  assertEquals(all[0], "user: why does the build fail?");
  assertEquals(
    all.slice(1, 3).map((m) => m.replace(/\s+/g, " ")).join(" ").includes("step two: the cache"),
    true,
  );
  assertEquals(all.filter((m) => m.includes("step one")).length, 1, "step one once");
  assertEquals(all.slice(-2), ["user: then fix both", "assistant: fixed both of them"]);
});

Deno.test("an interrupt that cannot have the session lock in its budget leaves a worker that captures the turn", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  const j = new JournalBuilder().prompt("deploy it now").stepBegin().text("deploying to staging first");
  await placeJournal(dir.path, SESSION, j.toString());
  const stdin = JSON.stringify({ hook_event_name: "Interrupt", session_id: SESSION, cwd: "/home/user/proj" });
  const lock = `${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json.lock`;
  await Deno.mkdir(`${dir.path}/.openviking/hook-state/kimicode`, { recursive: true });
  // Another run (the idle watch's commit, a slow Stop worker) holds the session while Kimi is interrupted.
  await withLock(lock, async () => {
    const run = await runCli(["hook", "interrupt"], { env, stdin });
    assertEquals([run.code, run.stdout], [0, ""]);
    assertEquals(fake.messages(`kc-${SESSION}`).length, 0);
  }, { waitMs: 0 });
  const end = Date.now() + 30_000;
  while (fake.messages(`kc-${SESSION}`).length < 2 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assertEquals(fake.messages(`kc-${SESSION}`).map((m) => m.content), [
    "deploy it now",
    "deploying to staging first",
  ]);
});
