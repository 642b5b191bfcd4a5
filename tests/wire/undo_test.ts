/**
 * `/undo`: Kimi writes `context.undo {count: N}` ("treat retracted content as never having happened"). Turns
 * it withdraws that were not captured yet are never sent; turns captured before stay (there is no delete).
 * Checked on the journals recorded with the real CLI (tests/fixtures/journals/<variant>/undo) and on built
 * ones for the rules Kimi applies: what counts as a user input, steers, boundaries, subagents.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { readJournal } from "../../kimi/journal/read.ts";
import { assistantText, scanTurns, turnLineFilter, userText } from "../../kimi/journal/turns.ts";
import { acknowledge, captureKey, planCapture } from "../../kimi/journal/plan.ts";
import type { JournalLine } from "../../kimi/journal/read.ts";

const ROOT = new URL("../fixtures/journals/", import.meta.url).pathname;
const opts = { maxLength: 24000, redact: true, includeOpen: false };

function linesOf(text: string): JournalLine[] {
  let offset = 0;
  const out: JournalLine[] = [];
  for (const l of text.split("\n")) {
    const end = offset + l.length + 1;
    if (l) out.push({ offset, end, value: JSON.parse(l) });
    offset = end;
  }
  return out;
}

/** [user, assistant, retracted] of each turn. */
const shape = (text: string, firstIndex = 0) =>
  scanTurns(linesOf(text), firstIndex).turns.map((t) => [userText(t), assistantText(t), t.retracted]);

/** The texts capture would send. */
const sent = (text: string, acked = new Set<string>()) =>
  planCapture(scanTurns(linesOf(text)).turns, acked, 0, opts).toSend.map((c) => c.payload.content);

Deno.test("undo (recorded, every variant): /undo 1 then /undo 2 leave the first and the fifth turn, ids kept", async () => {
  for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
    const read = await readJournal(`${ROOT}${variant}/undo/wire.jsonl`, undefined, turnLineFilter);
    const scan = scanTurns(read.lines);
    assertEquals(
      scan.turns.map((t) => [t.id, t.index, t.retracted, t.closed]),
      [["0", 0, false, true], ["1", 1, true, true], ["2", 2, true, true], ["3", 3, true, true], [
        "4",
        4,
        false,
        true,
      ]],
      variant,
    );
    const plan = planCapture(scan.turns, new Set(), 0, opts);
    assertEquals(plan.toSend.map((c) => [c.key, c.payload.content]), [
      ["0:user", "first: keep this one"],
      ["0:assistant", "ACK 1: first: keep this one"],
      ["4:user", "fifth: the last word"],
      ["4:assistant", "ACK 6: fifth: the last word"],
    ]);
    assertEquals(
      plan.skipped.map((s) => `${s.key} ${s.reason}`),
      ["1:user", "1:assistant", "2:user", "2:assistant", "3:user", "3:assistant"].map((k) =>
        `${k} retracted`
      ),
    );
    // The withdrawn turns settle the plan: the cursor and the watermark pass them.
    const ack = acknowledge(plan, plan.toSend.length, 0, scan.turns, scan.nextIndex);
    assertEquals([ack.ackedBelow, ack.resumeAt], [5, undefined]);
  }
});

Deno.test("undo (recorded): the model never saw the withdrawn turns — the same ones capture leaves out", async () => {
  for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
    const requests = (await Deno.readTextFile(`${ROOT}${variant}/undo/model-requests.jsonl`)).trim().split(
      "\n",
    )
      .map((l) => JSON.parse(l) as { messages: { role: string; content: unknown }[] });
    const last = requests.at(-1)!.messages.filter((m) => m.role === "user")
      .map((m) => typeof m.content === "string" ? m.content : JSON.stringify(m.content))
      .filter((c) => !c.includes("system-reminder"));
    assertEquals(last, ["first: keep this one", "fifth: the last word"], variant);
  }
});

Deno.test("undo: counts user inputs back from the end; a second undo counts only what the first left", () => {
  const j = new JournalBuilder().simpleTurn("alpha question", "alpha answer").simpleTurn(
    "beta question",
    "beta answer",
  )
    .undo(1).simpleTurn("gamma question", "gamma answer").undo(1).simpleTurn(
      "delta question",
      "delta answer",
    );
  assertEquals(shape(j.toString()), [
    ["alpha question", "alpha answer", false],
    ["", "", true],
    ["", "", true],
    ["delta question", "delta answer", false],
  ]);
  const two = new JournalBuilder().simpleTurn("one question", "one answer").simpleTurn(
    "two question",
    "two answer",
  )
    .simpleTurn("three question", "three answer").undo(2);
  assertEquals(shape(two.toString()).map((t) => t[2]), [false, true, true]);
});

Deno.test("undo: 2.1.0's switch triple and the bare record of older versions are the same undo", () => {
  for (const triple of [true, false]) {
    const j = new JournalBuilder().simpleTurn("keep this question", "kept answer").simpleTurn(
      "drop this question",
      "dropped answer",
    ).undo(1, triple);
    assertEquals(sent(j.toString()), ["keep this question", "kept answer"], `triple=${triple}`);
  }
});

Deno.test("undo: injections, hook results and system turns are not user inputs; what follows the cut goes too", () => {
  const j = new JournalBuilder().simpleTurn("first real question", "first answer")
    .hookResult("<openviking-context>memo</openviking-context>")
    .simpleTurn("second real question", "second answer")
    .prompt("background task finished", "system_trigger").stepBegin().text("system answer").stepEnd(
      "end_turn",
    )
    .ended()
    .undo(1);
  // The undo reaches the second user input; the system turn after it is withdrawn with it.
  assertEquals(shape(j.toString()).map((t) => t[2]), [false, true, true]);
});

Deno.test("undo: a 2.1.0 steer (inTurn) is part of its turn; a 0.41.0 steer is an input of its own", () => {
  const base = () =>
    new JournalBuilder().simpleTurn("earlier question", "earlier answer").prompt("refactor the parser")
      .stepBegin().text("looking at it").stepEnd("end_turn").steer("and keep the API");
  const v21 = base().steerMessage("and keep the API", true).stepBegin().text("done, API kept")
    .stepEnd("end_turn").ended().undo(1);
  assertEquals(shape(v21.toString()), [["earlier question", "earlier answer", false], ["", "", true]]);
  const v041 = base().steerMessage("and keep the API", false).stepBegin().text("done, API kept")
    .stepEnd("end_turn").ended().undo(1, false);
  assertEquals(shape(v041.toString()), [
    ["earlier question", "earlier answer", false],
    ["refactor the parser", "looking at it", false],
  ], "the steer and what followed it are withdrawn, the prompt and the answer before it stay");
});

Deno.test("undo: never reaches back across a compaction or a /clear", () => {
  for (const boundary of ["compacted", "clear"] as const) {
    const j = new JournalBuilder().simpleTurn("before one question", "before one answer")
      .simpleTurn("before two question", "before two answer");
    j[boundary]();
    j.simpleTurn("after question", "after answer").undo(3);
    assertEquals(shape(j.toString()).map((t) => t[2]), [false, false, true], boundary);
  }
});

Deno.test("undo: a subagent's undo does not touch the main agent's turns", () => {
  const j = new JournalBuilder().simpleTurn("main question here", "main answer here");
  j.lines.push(JSON.stringify({ type: "context.undo", agentId: "agent-0", count: 1, time: 1 }));
  assertEquals(shape(j.toString()).map((t) => t[2]), [false]);
});

Deno.test("undo after capture: turns already captured stay (no delete, no resend); the next turn is sent", () => {
  const j = new JournalBuilder().simpleTurn("captured question", "captured answer");
  const captured = j.toString();
  const firstPlan = planCapture(scanTurns(linesOf(captured)).turns, new Set(), 0, opts);
  const keys = new Set(firstPlan.toSend.map((c) => c.key));
  j.undo(1).simpleTurn("after the undo question", "after the undo answer");
  // Read again from the cursor (the start of the next turn): the undo reaches before the stretch.
  const text = j.toString();
  const from = text.indexOf('{"type":"context.undo"');
  const stretch = scanTurns(linesOf(text.slice(from)), 1);
  assertEquals(stretch.undoBeyondStretch, 1);
  assertEquals(stretch.turns.map((t) => [t.index, t.retracted]), [[1, false]]);
  // Read from the start (a rewritten journal): the captured turn is withdrawn, and stays captured.
  const all = planCapture(scanTurns(linesOf(text)).turns, keys, 0, opts);
  assertEquals(all.toSend.map((c) => c.key), [captureKey(1, "user"), captureKey(1, "assistant")]);
  assertEquals(all.skipped.map((s) => s.reason), ["already-captured", "already-captured"]);
});

Deno.test("undo (legacy 1.4, no agentId): the same rules", () => {
  const j = new JournalBuilder({ v2: false }).simpleTurn("legacy one question", "legacy one answer")
    .simpleTurn("legacy two question", "legacy two answer").undo(1);
  assertEquals(shape(j.toString()).map((t) => [t[0], t[2]]), [["legacy one question", false], ["", true]]);
  assertTrue(sent(j.toString()).every((c) => !c.includes("two")));
});
