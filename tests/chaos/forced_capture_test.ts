/**
 * Found by the fault campaign: a forced capture (SessionEnd, Interrupt) that waits — for the lock, for a slow
 * server — while the next session already writes a new turn must not take that new, half-written turn as
 * final.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { makeContext, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { captureMode, captureSession } from "../../memory/capture.ts";
import { withLock } from "../../lib/lock.ts";

const SESSION = "session_forced-later-turn";

Deno.test("a forced capture does not end a turn that began after it started", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  const j = new JournalBuilder().simpleTurn("first question about tabs", "first answer about tabs");
  const path = await placeJournal(dir.path, SESSION, j.toString());
  const input = { session_id: SESSION, cwd: "/home/user/proj" };
  const end = await makeContext("session-end", input, env);
  let capture: Promise<unknown> | undefined;
  await withLock(end.capturePaths!.lock, async () => {
    capture = captureSession(end, captureMode("session-end", end.config, Date.now()));
    await new Promise((r) => setTimeout(r, 1500)); // the capture has started and waits for the lock
    const before = j.lines.length;
    j.prompt("second question about spaces").stepBegin().text("second answer, first half");
    await Deno.writeTextFile(path, j.lines.slice(before).map((l) => `${l}\n`).join(""), { append: true });
  });
  await capture;
  const stored = () => fake.messages(`kc-${SESSION}`).map((m) => [m.turn_id, m.role, m.content]);
  assertEquals(stored(), [
    ["0", "user", "first question about tabs"],
    ["0", "assistant", "first answer about tabs"],
  ]);

  const before = j.lines.length;
  j.text(" and second half").stepEnd("end_turn").ended();
  await Deno.writeTextFile(path, j.lines.slice(before).map((l) => `${l}\n`).join(""), { append: true });
  const stop = await makeContext("stop", input, env);
  await captureSession(stop, captureMode("stop", stop.config, Date.now()));
  assertEquals(stored().slice(2), [
    ["1", "user", "second question about spaces"],
    ["1", "assistant", "second answer, first half and second half"],
  ]);
});
