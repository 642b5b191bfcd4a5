/**
 * The failed-turn policy (README "How it behaves", docs/ARCHITECTURE.md): a turn the engine ends as failed
 * (provider error, no model chosen) gives OpenViking what it really holds — the user's prompt, and the text
 * of any step that finished before the failure — and nothing invented for the answer it never got. Kimi
 * keeps the failed prompt in the model's context too, so the next turn's answer may well be about it.
 */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { planCapture } from "../../kimi/journal/plan.ts";
import type { JournalLine } from "../../kimi/journal/read.ts";
import { scanTurns } from "../../kimi/journal/turns.ts";

const OPTS = { maxLength: 24000, redact: true, includeOpen: false };

function turnsOf(j: JournalBuilder) {
  let offset = 0;
  const lines: JournalLine[] = j.lines.map((l) => {
    const r = { offset, end: offset + l.length + 1, value: JSON.parse(l) };
    offset = r.end;
    return r;
  });
  return scanTurns(lines).turns;
}

/** What a capture sends, as `[key, turn_id, content]`, and the keys it skips with their reason. */
function planned(j: JournalBuilder, includeOpen = false) {
  const plan = planCapture(turnsOf(j), new Set(), 0, { ...OPTS, includeOpen });
  return {
    send: plan.toSend.map((c) => [c.key, c.payload.turn_id, c.payload.content]),
    skip: plan.skipped.map((s) => [s.key, s.reason]),
  };
}

Deno.test("failed turn (v2, no step ran: model.not_configured): the prompt alone, at a plain Stop-style capture", () => {
  // As 2.1.0 `kimi web` wrote it for a session with no model: prompt, an empty failing step, turn.ended failed.
  const j = new JournalBuilder()
    .hookResult("<openviking-context>\nrecalled\n</openviking-context>")
    .prompt("hello before any model was chosen")
    .stepEnd("error").ended("failed");
  assertEquals(turnsOf(j).map((t) => [t.closed, t.closeReason]), [[true, "failed"]]);
  assertEquals(planned(j), {
    send: [["0:user", "0", "hello before any model was chosen"]],
    skip: [["0:assistant", "empty"]],
  });
});

Deno.test("failed turn (v2, provider error after a tool step): the prompt and the text said before the failure", () => {
  const j = new JournalBuilder()
    .prompt("check the disk, then summarise")
    .stepBegin().text("Let me check with a tool.").tool("Bash", "TOOL-OUTPUT").stepEnd("tool_use")
    .stepBegin().stepEnd("error").ended("failed")
    .simpleTurn("are you there?", "Yes, sorry about that.");
  assertEquals(planned(j).send, [
    ["0:user", "0", "check the disk, then summarise"],
    ["0:assistant", "0", "Let me check with a tool."],
    ["1:user", "1", "are you there?"],
    ["1:assistant", "1", "Yes, sorry about that."],
  ]);
});

Deno.test("failed turn (legacy 1.4 engine writes no end marker): a forced capture takes the prompt alone", () => {
  // 0.41.0's legacy engine: the journal just stops after the failing step's request.
  const j = new JournalBuilder({ v2: false }).prompt("this will FAIL at the provider").stepBegin();
  assertEquals(planned(j).send, [], "a Stop-style capture waits for the turn to end");
  assertEquals(planned(j, true), {
    send: [["0:user", "0", "this will FAIL at the provider"]],
    skip: [["0:assistant", "empty"]],
  });
});

Deno.test("failed turn then a retry of the same prompt: both are sent, as the model saw both", () => {
  const j = new JournalBuilder()
    .prompt("remember that I deploy on Fridays").stepBegin().stepEnd("error").ended("failed")
    .simpleTurn("remember that I deploy on Fridays", "Noted: Friday deploys.");
  assertEquals(planned(j).send, [
    ["0:user", "0", "remember that I deploy on Fridays"],
    ["1:user", "1", "remember that I deploy on Fridays"],
    ["1:assistant", "1", "Noted: Friday deploys."],
  ]);
});
