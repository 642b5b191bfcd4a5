/**
 * When a turn is over for capture, in-process: a Stop fired before Kimi wrote the turn waits for it
 * (OPENVIKING_CAPTURE_WAIT_MS); an answer line half-written or still growing at an interrupt is captured once
 * finished, nothing twice; a forced capture does not end a turn that began after it started (the fault
 * campaign found both); a failed turn (StopFailure, never Stop) gives its prompt alone, committed.
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { makeContext } from "../support/hook-context.ts";
import { captureMode, captureSession } from "../../memory/capture.ts";
import { withLock } from "../../lib/lock.ts";
import { type World, world } from "./world.ts";

Deno.test("Stop before the turn is in the journal: the capture waits for it and captures it", async () => {
  await using w = await world({ env: { OPENVIKING_CAPTURE_WAIT_MS: "8000" } });
  await w.say("first question about the release notes", "first answer: they live in CHANGES.md");
  await w.hook("stop");
  assertEquals((await w.state()).capturedKeys.length, 2);
  const second = w.hook("stop"); // Kimi writes the turn only a second after its Stop
  await new Promise((r) => setTimeout(r, 1000));
  await w.say("second question: who reviews them?", "second answer: the release manager");
  await second;
  assertEquals(w.stored(), ["0:user", "0:assistant", "1:user", "1:assistant"]);
});

const said = (w: World) => w.fake.messages(w.ov).map((m) => `${m.role}: ${m.content}`);

Deno.test("an answer line half-written at an interrupt is captured once finished, before the next turn", async () => {
  await using w = await world();
  const j = new JournalBuilder().prompt("why does the build fail?").stepBegin()
    .text("the lockfile pins an old compiler");
  const whole = j.toString();
  await w.journal(whole.slice(0, whole.length - 12)); // its last line half-written
  await w.hook("interrupt");
  assertEquals(said(w), ["user: why does the build fail?"]);
  await w.journal(
    j.ended("cancelled").simpleTurn("then update it", "updated it to the current compiler").toString(),
  );
  await w.hook("stop");
  assertEquals(said(w), [
    "user: why does the build fail?",
    "assistant: the lockfile pins an old compiler",
    "user: then update it",
    "assistant: updated it to the current compiler",
  ]);
});

Deno.test("an answer still growing at an interrupt: what it gained afterwards is sent, what was sent is not again", async () => {
  await using w = await world();
  const j = new JournalBuilder().prompt("why does the build fail?").stepBegin()
    .text("step one: the lockfile pins an old compiler.").stepEnd("tool_use").stepBegin()
    .text("step two: the cache keeps the old binary.");
  const whole = j.toString();
  await w.journal(whole.slice(0, whole.length - 12)); // step two half-written
  await w.hook("interrupt");
  assertEquals(said(w).length, 2, "the prompt and step one");
  await w.journal(j.ended("cancelled").simpleTurn("then fix both", "fixed both of them").toString());
  await w.hook("stop");
  const all = said(w);
  assertEquals(all[0], "user: why does the build fail?");
  assertEquals(
    all.slice(1, 3).map((m) => m.replace(/\s+/g, " ")).join(" ").includes("step two: the cache"),
    true,
  );
  assertEquals(all.filter((m) => m.includes("step one")).length, 1, "step one once");
  assertEquals(all.slice(-2), ["user: then fix both", "assistant: fixed both of them"]);
});

Deno.test("a forced capture does not end a turn that began after it started", async () => {
  await using w = await world();
  const j = new JournalBuilder().simpleTurn("first question about tabs", "first answer about tabs");
  const path = await w.journal(j.toString());
  const append = async (from: number) =>
    await Deno.writeTextFile(path, j.lines.slice(from).map((l) => `${l}\n`).join(""), { append: true });
  const input = { session_id: w.session, cwd: "/home/user/proj" };
  const end = await makeContext("session-end", input, w.env);
  let capture: Promise<unknown> | undefined;
  await withLock(end.capturePaths!.lock, async () => {
    capture = captureSession(end, captureMode("session-end", end.config, Date.now()));
    await new Promise((r) => setTimeout(r, 1500)); // the capture has started and waits for the lock
    const before = j.lines.length;
    j.prompt("second question about spaces").stepBegin().text("second answer, first half");
    await append(before);
  });
  await capture;
  const stored = () => w.fake.messages(w.ov).map((m) => [m.turn_id, m.role, m.content]);
  const first = [["0", "user", "first question about tabs"], ["0", "assistant", "first answer about tabs"]];
  assertEquals(stored(), first);
  const before = j.lines.length;
  j.text(" and second half").stepEnd("end_turn").ended();
  await append(before);
  const stop = await makeContext("stop", input, w.env);
  await captureSession(stop, captureMode("stop", stop.config, Date.now()));
  assertEquals(stored().slice(2), [
    ["1", "user", "second question about spaces"],
    ["1", "assistant", "second answer, first half and second half"],
  ]);
});

for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
  Deno.test(`hook stop-failure (${variant} failed turn): the prompt alone reaches OpenViking, committed`, async () => {
    await using w = await world({ env: { OPENVIKING_CAPTURE_WAIT_MS: "500" } });
    await w.journal(
      await Deno.readTextFile(new URL(`../fixtures/journals/${variant}/failed/wire.jsonl`, import.meta.url)),
    );
    await w.hook("stop-failure", {
      error_type: "APIStatusError",
      error_message: "400 mock request rejected",
    });
    const stored = () => w.fake.messages(w.ov).map((m) => [m.turn_id, m.role, m.content]);
    const prompt = [["0", "user", "this will FAIL at the provider"]];
    assertEquals([(await w.state()).lastCapture?.event, stored(), w.commits()], ["stop-failure", prompt, 1]);
    await w.hook("session-end"); // legacy print mode fires it right after: nothing is sent twice
    assertEquals([(await w.state()).lastCapture?.event, stored(), w.commits()], ["session-end", prompt, 1]);
  });
}
