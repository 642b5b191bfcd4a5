import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { acknowledge, planCapture } from "../../kimi/journal/plan.ts";
import { prepareText } from "../../kimi/journal/clean.ts";
import { scanTurns } from "../../kimi/journal/turns.ts";
import type { JournalLine } from "../../kimi/journal/read.ts";

const opts = { maxLength: 24000, redact: true, includeOpen: false };
const turnsOf = (j: JournalBuilder) => {
  let offset = 0;
  const lines: JournalLine[] = j.lines.map((l) => {
    const r = { offset, end: offset + l.length + 1, value: JSON.parse(l) };
    offset = r.end;
    return r;
  });
  return scanTurns(lines).turns;
};

Deno.test("plan: keys <index>:<role>, payload {role, content, turn_id}; open turns wait", () => {
  const j = new JournalBuilder().simpleTurn("remember I like tabs", "Noted: tabs it is.").prompt(
    "what next then?",
  ).stepBegin().text("partial");
  const plan = planCapture(turnsOf(j), new Set(), 0, opts);
  assertEquals(plan.toSend.map((c) => [c.key, c.payload]), [
    ["0:user", { role: "user", content: "remember I like tabs", turn_id: "0" }],
    ["0:assistant", { role: "assistant", content: "Noted: tabs it is.", turn_id: "0" }],
  ]);
  assertEquals(planCapture(turnsOf(j), new Set(), 0, { ...opts, includeOpen: true }).toSend.length, 4);
});

Deno.test("plan: acknowledged keys and the watermark are skipped; filtered messages are not sent", () => {
  const j = new JournalBuilder().simpleTurn("remember I like tabs", "Noted: tabs it is.").simpleTurn(
    "ok",
    "Great, anything else I can do?",
  ).simpleTurn("third question here", "third answer here");
  const turns = turnsOf(j);
  const plan = planCapture(turns, new Set(["2:user"]), 1, opts);
  assertEquals(plan.toSend.map((c) => c.key), ["1:assistant", "2:assistant"]);
  assertEquals(plan.skipped.map((s) => [s.key, s.reason]), [["1:user", "ack"], [
    "2:user",
    "already-captured",
  ]]);
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
  const j = new JournalBuilder().simpleTurn("first question", "first answer").simpleTurn(
    "second question",
    "second answer",
  )
    .simpleTurn("third question", "third answer").prompt("open question").stepBegin().text("partial");
  const turns = turnsOf(j);
  const plan = planCapture(turns, new Set(), 0, opts);
  const ack = acknowledge(plan, 3, 0, turns, 4);
  assertEquals(ack.keys, ["0:user", "0:assistant", "1:user"]);
  assertEquals([ack.ackedBelow, ack.resumeAt?.index], [1, 1]);
  const all = acknowledge(plan, 6, 0, turns, 4);
  assertEquals([all.ackedBelow, all.resumeAt?.index], [3, 3], "the open turn holds the cursor");
  const forced = planCapture(turns, new Set(), 0, { ...opts, includeOpen: true });
  const done = acknowledge(forced, forced.toSend.length, 0, turns, 4);
  assertEquals([done.ackedBelow, done.resumeAt], [4, undefined]);
});

Deno.test("plan: a prompt or an answer that mentions an injected tag is captured whole (issue #11, finding 5)", () => {
  const prompt = "Why does Kimi put <system-reminder> tags into my transcript? I never typed them.";
  const answer =
    'Kimi wraps every UserPromptSubmit hook output in <hook_result hook_event="UserPromptSubmit"> before your prompt, so the model sees it.';
  const j = new JournalBuilder().simpleTurn(prompt, answer);
  assertEquals(planCapture(turnsOf(j), new Set(), 0, opts).toSend.map((c) => c.payload.content), [
    prompt,
    answer,
  ]);
  for (const role of ["user", "assistant"] as const) {
    assertEquals(prepareText(`${prompt}\n${answer}`, role, opts), {
      text: `${prompt}\n${answer}`,
      reason: "",
    });
  }
  // privacy stays conservative: an unclosed <private> still hides the rest
  assertEquals(prepareText(`${prompt} <private>my pin is 1234`, "user", opts).text, prompt);
});

Deno.test("plan: a 160 KB CRLF message is prepared quickly (it spun a Stop worker for minutes)", () => {
  const text = "please fix the build\r\n" + " \r\n".repeat(160 * 1024 / 3) + "thanks";
  const start = performance.now();
  const { text: out } = prepareText(text, "user", opts);
  const ms = performance.now() - start;
  assertEquals(out.startsWith("please fix the build"), true);
  assertEquals(ms < 1500, true, `${ms.toFixed(0)} ms`);
});
