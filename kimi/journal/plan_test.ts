import { assertEquals } from "../../tests/support/assert.ts";
import { JournalBuilder, linesOf } from "../../tests/support/journal.ts";
import { acknowledge, planCapture } from "./plan.ts";
import { scanTurns } from "./turns.ts";

const opts = { maxLength: 24000, redact: true, includeOpen: false };
/** The turns of a built journal. */
const turnsOf = (j: JournalBuilder) => scanTurns(linesOf(j.toString())).turns;

Deno.test("plan: keys <index>:<role>, payload {role, content, turn_id}; open turns wait", () => {
  const j = new JournalBuilder().simpleTurn("remember I like tabs", "Noted: tabs it is.")
    .prompt("what next then?").stepBegin().text("partial");
  const plan = planCapture(turnsOf(j), new Set(), 0, opts);
  assertEquals(plan.toSend.map((c) => [c.key, c.payload]), [
    ["0:user", { role: "user", content: "remember I like tabs", turn_id: "0" }],
    ["0:assistant", { role: "assistant", content: "Noted: tabs it is.", turn_id: "0" }],
  ]);
  assertEquals(planCapture(turnsOf(j), new Set(), 0, { ...opts, includeOpen: true }).toSend.length, 4);
});

Deno.test("plan: acknowledged keys and the watermark are skipped; filtered messages are not sent", () => {
  const j = new JournalBuilder().simpleTurn("remember I like tabs", "Noted: tabs it is.")
    .simpleTurn("ok", "Great, anything else I can do?").simpleTurn(
      "third question here",
      "third answer here",
    );
  const turns = turnsOf(j);
  const plan = planCapture(turns, new Set(["2:user"]), 1, opts);
  assertEquals(plan.toSend.map((c) => c.key), ["1:assistant", "2:assistant"]);
  const skipped = [["1:user", "ack"], ["2:user", "already-captured"]];
  assertEquals(plan.skipped.map((s) => [s.key, s.reason]), skipped);
});

Deno.test("plan: redaction and truncation happen before sending; the key does not depend on them", () => {
  const j = new JournalBuilder().simpleTurn(
    "my key is sk-abcdefghijklmnopqrstuvwx please store <private>pin 1234</private> it",
    "x".repeat(100),
  );
  const plan = planCapture(turnsOf(j), new Set(), 0, { ...opts, maxLength: 50 });
  assertEquals(plan.toSend[0].payload.content, "my key is [REDACTED] please store  it");
  assertEquals(plan.toSend[1].payload.content.length, 50);
  assertEquals(plan.toSend.map((c) => c.key), ["0:user", "0:assistant"]);
  const off = planCapture(turnsOf(j), new Set(), 0, { ...opts, redact: false });
  assertEquals(off.toSend[0].payload.content.includes("sk-abcdefghijklmnopqrstuvwx"), true);
});

Deno.test("acknowledge: only a contiguous prefix; the watermark and cursor stop at the first turn not fully acknowledged", () => {
  const j = new JournalBuilder().simpleTurn("first question", "first answer")
    .simpleTurn("second question", "second answer").simpleTurn("third question", "third answer")
    .prompt("open question").stepBegin().text("partial");
  const turns = turnsOf(j);
  const plan = planCapture(turns, new Set(), 0, opts);
  const ack = acknowledge(plan, 3, 0, turns, 4);
  assertEquals(ack.keys, ["0:user", "0:assistant", "1:user"]);
  assertEquals([ack.ackedBelow, ack.resumeAt?.index], [1, 1]);
  const all = acknowledge(plan, 6, 0, turns, 4);
  assertEquals([all.ackedBelow, all.resumeAt?.index], [3, 3], "the open turn holds the cursor");
  const forced = planCapture(turns, new Set(), 0, { ...opts, includeOpen: true });
  const done = acknowledge(forced, forced.toSend.length, 0, turns, 4);
  assertEquals(done.keys.length, 8, "a forced capture sends the open turn's messages");
  assertEquals([done.ackedBelow, done.resumeAt?.index], [3, 3], "and the open turn still holds the cursor");
});

/** What a capture sends, as `[key, turn_id, content]`, and the keys it skips with their reason. */
function planned(j: JournalBuilder, includeOpen = false) {
  const plan = planCapture(turnsOf(j), new Set(), 0, { ...opts, includeOpen });
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

Deno.test("plan: a secret redacted in the prompt is redacted where the answer repeats it bare, and back", () => {
  const j = new JournalBuilder().simpleTurn(
    "connect with password=Hunter2Rover please",
    "Done: I used Hunter2Rover for the login. Your token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
  ).simpleTurn("did ghp_abcdefghijklmnopqrstuvwxyz0123456789 work?", "yes")
    .simpleTurn("is Zebra7Quill9 still the one?", "It is: db_password=Zebra7Quill9 stays.");
  const sent = planCapture(turnsOf(j), new Set(), 0, opts).toSend.map((c) => c.payload.content).join("\n");
  for (const secret of ["Hunter2Rover", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "Zebra7Quill9"]) {
    assertEquals(sent.includes(secret), false, sent);
  }
});
