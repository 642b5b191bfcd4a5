import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { assistantText, scanTurns, userText } from "../../kimi/journal/turns.ts";
import type { JournalLine } from "../../kimi/journal/read.ts";

const RECORDED = new URL("../fixtures/journals/2.1.0/resumed/", import.meta.url);

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

const summary = (text: string) =>
  scanTurns(linesOf(text)).turns.map((t) => ({
    id: t.id,
    closed: t.closed,
    reason: t.closeReason,
    user: userText(t),
    assistant: assistantText(t),
  }));

Deno.test("turns: the recorded 2.1.0 session — plain, tool and subagent turns, strings vs numbers normalised", async () => {
  const text = await Deno.readTextFile(new URL("wire.jsonl", RECORDED));
  const scan = scanTurns(linesOf(text));
  assertEquals(scan.protocolVersion, "1.5");
  assertEquals(scan.turns.map((t) => [t.id, t.index, t.closed, t.closeReason]), [
    ["0", 0, true, "completed"],
    ["1", 1, true, "completed"],
    ["2", 2, true, "completed"],
  ]);
  assertEquals(userText(scan.turns[0]), "first: remember that I prefer tabs over spaces");
  assertEquals(userText(scan.turns[2]), "third: RUN_AGENT now");
  assertEquals(assistantText(scan.turns[1]), "FINAL after tool: tool-ran");
});

Deno.test("turns: records of another agent (agentId agent-0) never become main-agent turns", async () => {
  const sub = await Deno.readTextFile(new URL("agent-0.wire.jsonl", RECORDED));
  assertEquals(scanTurns(linesOf(sub)).turns, [], "the recorded subagent journal has only agent-0 records");
  const j = new JournalBuilder().simpleTurn("hello there friend", "hi, how can I help you today?").foreign(
    "agent-0",
    "SUBAGENT TEXT",
  );
  assertEquals(summary(j.toString()).map((t) => t.assistant), ["hi, how can I help you today?"]);
});

Deno.test("turns: at Stop the final turn.ended is not on disk yet → the newest turn is open", () => {
  const j = new JournalBuilder().simpleTurn("first question here", "first answer here").prompt(
    "second question here",
  ).stepBegin().text("partial answer");
  assertEquals(summary(j.toString()).map((t) => [t.closed, t.assistant]), [[true, "first answer here"], [
    false,
    "partial answer",
  ]]);
});

Deno.test("turns: think parts, tool traffic, hook results and reminders are not turn text", () => {
  const j = new JournalBuilder()
    .hookResult("<openviking-context>INJECTED</openviking-context>")
    .prompt("please run the tests")
    .stepBegin().think("SECRET THOUGHTS").tool("Bash", "TOOL OUTPUT").stepEnd("tool_use")
    .stepBegin().text("All 12 tests pass.").stepEnd("end_turn").ended();
  assertEquals(summary(j.toString()), [{
    id: "0",
    closed: true,
    reason: "completed",
    user: "please run the tests",
    assistant: "All 12 tests pass.",
  }]);
});

Deno.test("turns: text from several steps is joined by a blank line; parts of one step are concatenated", () => {
  const j = new JournalBuilder().prompt("explain it").stepBegin().text("Let me ").text("check.").tool(
    "Read",
    "x",
  ).stepEnd("tool_use")
    .stepBegin().text("It works like this.").stepEnd("end_turn").ended();
  assertEquals(summary(j.toString())[0].assistant, "Let me check.\n\nIt works like this.");
});

Deno.test("turns: tool-only, interrupted and failed turns still own their user message", () => {
  const j = new JournalBuilder()
    .prompt("delete the temp files").stepBegin().tool("Bash", "ok").stepEnd("tool_use").ended("completed")
    .prompt("write a long essay").stepBegin().text("Once upon").stepEnd("interrupted").ended("cancelled")
    .prompt("try again please").ended("failed");
  assertEquals(summary(j.toString()).map((t) => [t.user, t.assistant, t.reason]), [
    ["delete the temp files", "", "completed"],
    ["write a long essay", "Once upon", "cancelled"],
    ["try again please", "", "failed"],
  ]);
});

Deno.test("turns: steers join the user text; non-user prompts keep assistant text only", () => {
  const j = new JournalBuilder().prompt("refactor the parser").steer("and keep the API").stepBegin().text(
    "Done: parser refactored.",
  ).stepEnd("end_turn").ended()
    .prompt("Task notification: build finished", "system_trigger").stepBegin().text(
      "The build finished fine.",
    ).stepEnd("end_turn").ended();
  assertEquals(summary(j.toString()).map((t) => [t.user, t.assistant]), [
    ["refactor the parser\n\nand keep the API", "Done: parser refactored."],
    ["", "The build finished fine."],
  ]);
});

Deno.test("turns: legacy 1.4 journals (no agentId, no turn.ended) close by a later prompt or a final step.end", () => {
  const j = new JournalBuilder({ v2: false })
    .prompt("first question").stepBegin().text("first answer").tool("Bash", "x").stepEnd("tool_use")
    .prompt("second question").stepBegin().text("thinking about it").stepEnd("tool_use")
    .stepBegin().text("second answer").stepEnd("end_turn")
    .prompt("third question").stepBegin().text("partial");
  const s = scanTurns(linesOf(j.toString()));
  assertEquals(s.protocolVersion, "1.4");
  assertEquals(s.turns.map((t) => [t.id, t.closed, t.closeReason]), [["0", true, "next-prompt"], [
    "1",
    true,
    "final-step",
  ], ["2", false, ""]]);
  assertEquals(assistantText(s.turns[1]), "thinking about it\n\nsecond answer");
});

Deno.test("turns: numbering continues from a cursor (0.41 journals have no explicit ids)", () => {
  const j = new JournalBuilder({ explicitIds: false }).simpleTurn("question one", "answer one").simpleTurn(
    "question two",
    "answer two",
  );
  const lines = linesOf(j.toString());
  const second = lines.findIndex((l, i) =>
    i > 1 && l.value.type === "turn.prompt" &&
    (l.value.input as { text: string }[])[0].text === "question two"
  );
  const s = scanTurns(lines.slice(second), 1);
  assertEquals(s.turns.map((t) => [t.id, t.index, t.closed]), [["1", 1, true]]);
  assertEquals(s.nextIndex, 2);
});
