/**
 * An open turn a forced capture (Interrupt, SessionEnd) took while Kimi was still writing its answer's line:
 * the line finished afterwards is captured by the next capture, in order (the chaos campaign lost it once).
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { withLock } from "../../lib/lock.ts";
import { stdinOf, waitFor, world } from "./world.ts";

/** A world of one session, and what the server holds of it as `role: content`. */
async function sandbox() {
  const w = await world({ session: "session_7c0a1f5e-2b1d-4c3e-8f00-0000000000d4" });
  return Object.assign(w, { said: () => w.fake.messages(w.ov).map((m) => `${m.role}: ${m.content}`) });
}

Deno.test("an answer line half-written at an interrupt is captured once finished, before the next turn", async () => {
  await using s = await sandbox();
  const j = new JournalBuilder().prompt("why does the build fail?").stepBegin()
    .text("the lockfile pins an old compiler");
  const whole = j.toString();
  await s.journal(whole.slice(0, whole.length - 12)); // its last line half-written
  await s.hook("interrupt");
  assertEquals(s.said(), ["user: why does the build fail?"]);
  await s.journal(
    j.ended("cancelled").simpleTurn("then update it", "updated it to the current compiler").toString(),
  );
  await s.hook("stop");
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
  await s.hook("interrupt");
  assertEquals(s.said().length, 2, "the prompt and step one");
  await s.journal(
    j.ended("cancelled").simpleTurn("then fix both", "fixed both of them").toString(),
  );
  await s.hook("stop");
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
  await using s = await sandbox();
  await s.journal(
    new JournalBuilder().prompt("deploy it now").stepBegin().text("deploying to staging first").toString(),
  );
  const lock = `${s.stateFile()}.lock`;
  await Deno.mkdir(`${s.home}/.openviking/hook-state/kimicode`, { recursive: true });
  // Another run (the idle watch's commit, a slow Stop worker) holds the session while Kimi is interrupted.
  await withLock(lock, async () => {
    const run = await runCli(["hook", "interrupt"], { env: s.env, stdin: stdinOf("interrupt", s.session) });
    assertEquals([run.code, run.stdout, s.said()], [0, "", []]);
  }, { waitMs: 0 });
  await waitFor("the worker's capture", () => s.said().length >= 2);
  assertEquals(s.said(), ["user: deploy it now", "assistant: deploying to staging first"]);
});
