import { assertEquals, assertTrue } from "../../tests/support/assert.ts";
import { JournalBuilder, linesOf } from "../../tests/support/journal.ts";
import { tempDir } from "../../tests/support/temp.ts";
import { assistantText, cursorAt, readJournal, scanTurns, turnLineFilter, userText } from "./turns.ts";
import { acknowledge, captureKey, planCapture } from "./plan.ts";

const ROOT = new URL("../../tests/fixtures/journals/", import.meta.url).pathname;
const RECORDED = `${ROOT}2.1.0/resumed/`;
const opts = { maxLength: 24000, redact: true, includeOpen: false };

const summary = (text: string) =>
  scanTurns(linesOf(text)).turns.map((t) => ({
    id: t.id,
    closed: t.closed,
    reason: t.closeReason,
    user: userText(t),
    assistant: assistantText(t),
  }));

Deno.test("turns: records of another agent (agentId agent-0) never become main-agent turns", async () => {
  const sub = await Deno.readTextFile(`${RECORDED}agent-0.wire.jsonl`);
  assertEquals(scanTurns(linesOf(sub)).turns, [], "the recorded subagent journal has only agent-0 records");
  const j = new JournalBuilder()
    .simpleTurn("hello there friend", "hi, how can I help you today?").foreign("agent-0", "SUBAGENT TEXT");
  assertEquals(summary(j.toString()).map((t) => t.assistant), ["hi, how can I help you today?"]);
});

Deno.test("turns: agent.turn.ended closes the main turn — Kimi may die before its turn.ended (stdout closed)", () => {
  // `kimi -p … | head -1`: Kimi 2.1.0 dies of EPIPE after Stop, before it writes the turn's turn.ended.
  for (const [finish, outcome] of [["end_turn", "done"], ["interrupted", "aborted"]] as const) {
    const j = new JournalBuilder().simpleTurn("first question here", "first answer here")
      .prompt("The deploy window is Thursday 14:00 UTC.").stepBegin().text("Noted: Thursday 14:00 UTC.")
      .stepEnd(finish).agentEnded(outcome);
    const [user, assistant] = ["The deploy window is Thursday 14:00 UTC.", "Noted: Thursday 14:00 UTC."];
    assertEquals(summary(j.toString()).at(-1), { id: "1", closed: true, reason: outcome, user, assistant });
    assertEquals(sent(j.toString()).slice(2), [user, assistant]);
  }
});

Deno.test("turns: think parts, tool traffic, hook results and reminders are not turn text", () => {
  const j = new JournalBuilder()
    .hookResult("<openviking-context>INJECTED</openviking-context>")
    .prompt("please run the tests")
    .stepBegin().think("SECRET THOUGHTS").tool("Bash", "TOOL OUTPUT").stepEnd("tool_use")
    .stepBegin().text("All 12 tests pass.").stepEnd("end_turn").ended();
  const want = { id: "0", closed: true, reason: "completed", user: "please run the tests" };
  assertEquals(summary(j.toString()), [{ ...want, assistant: "All 12 tests pass." }]);
});

Deno.test("turns: text from several steps is joined by a blank line; parts of one step are concatenated", () => {
  const j = new JournalBuilder()
    .prompt("explain it").stepBegin().text("Let me ").text("check.").tool("Read", "x").stepEnd("tool_use")
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
  const j = new JournalBuilder()
    .prompt("refactor the parser").steer("and keep the API")
    .stepBegin().text("Done: parser refactored.").stepEnd("end_turn").ended()
    .prompt("Task notification: build finished", "system_trigger")
    .stepBegin().text("The build finished fine.").stepEnd("end_turn").ended();
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
  const want = [["0", true, "next-prompt"], ["1", true, "final-step"], ["2", false, ""]];
  assertEquals(s.turns.map((t) => [t.id, t.closed, t.closeReason]), want);
  assertEquals(assistantText(s.turns[1]), "thinking about it\n\nsecond answer");
});

Deno.test("turns: numbering continues from a cursor (0.41 journals have no explicit ids)", () => {
  const j = new JournalBuilder({ explicitIds: false })
    .simpleTurn("question one", "answer one").simpleTurn("question two", "answer two");
  const lines = linesOf(j.toString());
  const second = lines.findIndex((l, i) =>
    i > 1 && l.value.type === "turn.prompt" &&
    (l.value.input as { text: string }[])[0].text === "question two"
  );
  const s = scanTurns(lines.slice(second), 1);
  assertEquals(s.turns.map((t) => [t.id, t.index, t.closed]), [["1", 1, true]]);
  assertEquals(s.nextIndex, 2);
});

/** [user, assistant, retracted] of each turn. */
const shape = (text: string, firstIndex = 0) =>
  scanTurns(linesOf(text), firstIndex).turns.map((t) => [userText(t), assistantText(t), t.retracted]);

/** The texts capture would send. */
const sent = (text: string, acked = new Set<string>()) =>
  planCapture(scanTurns(linesOf(text)).turns, acked, 0, opts).toSend.map((c) => c.payload.content);

Deno.test("undo (recorded, every variant): /undo 1 then /undo 2 leave the first and the fifth turn, as the model saw", async () => {
  for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
    const read = await readJournal(`${ROOT}${variant}/undo/wire.jsonl`, undefined, turnLineFilter);
    const scan = scanTurns(read.lines);
    const want = [0, 1, 2, 3, 4].map((i) => [String(i), i, i > 0 && i < 4, true]);
    assertEquals(scan.turns.map((t) => [t.id, t.index, t.retracted, t.closed]), want, variant);
    const plan = planCapture(scan.turns, new Set(), 0, opts);
    assertEquals(plan.toSend.map((c) => [c.key, c.payload.content]), [
      ["0:user", "first: keep this one"],
      ["0:assistant", "ACK 1: first: keep this one"],
      ["4:user", "fifth: the last word"],
      ["4:assistant", "ACK 6: fifth: the last word"],
    ]);
    // The user inputs of the model's last request: the withdrawn turns are the ones it never saw either.
    const requests = (await Deno.readTextFile(`${ROOT}${variant}/undo/model-requests.jsonl`)).trim()
      .split("\n").map((l) => JSON.parse(l) as { messages: { role: string; content: unknown }[] });
    const seen = requests.at(-1)!.messages.filter((m) => m.role === "user")
      .map((m) => typeof m.content === "string" ? m.content : JSON.stringify(m.content))
      .filter((c) => !c.includes("system-reminder"));
    assertEquals(plan.toSend.filter((c) => c.role === "user").map((c) => c.payload.content), seen, variant);
    const retracted = [1, 2, 3].flatMap((i) => [`${i}:user retracted`, `${i}:assistant retracted`]);
    assertEquals(plan.skipped.map((s) => `${s.key} ${s.reason}`), retracted);
    // The withdrawn turns settle the plan: the cursor and the watermark pass them.
    const ack = acknowledge(plan, plan.toSend.length, 0, scan.turns, scan.nextIndex);
    assertEquals([ack.ackedBelow, ack.resumeAt], [5, undefined]);
  }
});

/** A turn `/undo` left as it was, and one it withdrew. */
const kept = (user: string, assistant: string) => [user, assistant, false];
const GONE = ["", "", true];
const twoTurns = (options = {}) =>
  new JournalBuilder(options).simpleTurn("keep this question", "kept answer")
    .simpleTurn("drop this question", "dropped answer");
const steered = () =>
  new JournalBuilder().simpleTurn("earlier question", "earlier answer").prompt("refactor the parser")
    .stepBegin().text("looking at it").stepEnd("end_turn").steer("and keep the API");
const acrossBoundary = (boundary: "compacted" | "clear") => {
  const j = new JournalBuilder().simpleTurn("before one question", "before one answer")
    .simpleTurn("before two question", "before two answer");
  return j[boundary]().simpleTurn("after question", "after answer").undo(3);
};
const KEPT_ONE = kept("keep this question", "kept answer");
const BEFORE = [
  kept("before one question", "before one answer"),
  kept("before two question", "before two answer"),
];

/** `/undo` as Kimi applies it: each journal, and [user, assistant, withdrawn] of every turn it leaves. */
const UNDO: Record<string, [JournalBuilder, unknown[]]> = {
  "counts user inputs back from the end; a second undo counts only what the first left": [
    new JournalBuilder().simpleTurn("alpha question", "alpha answer")
      .simpleTurn("beta question", "beta answer").undo(1)
      .simpleTurn("gamma question", "gamma answer").undo(1)
      .simpleTurn("delta question", "delta answer"),
    [kept("alpha question", "alpha answer"), GONE, GONE, kept("delta question", "delta answer")],
  ],
  "/undo 2 withdraws the last two inputs": [twoTurns().simpleTurn("third", "three").undo(2), [
    KEPT_ONE,
    GONE,
    GONE,
  ]],
  "2.1.0's switch triple": [twoTurns().undo(1, true), [KEPT_ONE, GONE]],
  "the bare record of older versions is the same undo": [twoTurns().undo(1, false), [KEPT_ONE, GONE]],
  "legacy 1.4 (no agentId): the same rules": [twoTurns({ v2: false }).undo(1), [KEPT_ONE, GONE]],
  // The undo reaches the second user input; the system turn after it is withdrawn with it.
  "injections, hook results and system turns are not user inputs; what follows the cut goes too": [
    new JournalBuilder().simpleTurn("keep this question", "kept answer")
      .hookResult("<openviking-context>memo</openviking-context>")
      .simpleTurn("second real question", "second answer")
      .prompt("background task finished", "system_trigger")
      .stepBegin().text("system answer").stepEnd("end_turn").ended().undo(1),
    [KEPT_ONE, GONE, GONE],
  ],
  "a 2.1.0 steer (inTurn) is part of its turn": [
    steered().steerMessage("and keep the API", true).stepBegin().text("done, API kept").stepEnd("end_turn")
      .ended().undo(1),
    [kept("earlier question", "earlier answer"), GONE],
  ],
  // The steer and what followed it are withdrawn; the prompt and the answer before it stay.
  "a 0.41.0 steer is an input of its own": [
    steered().steerMessage("and keep the API", false).stepBegin().text("done, API kept").stepEnd("end_turn")
      .ended().undo(1, false),
    [kept("earlier question", "earlier answer"), kept("refactor the parser", "looking at it")],
  ],
  "never reaches back across a compaction": [acrossBoundary("compacted"), [...BEFORE, GONE]],
  "never reaches back across a /clear": [acrossBoundary("clear"), [...BEFORE, GONE]],
  "a subagent's undo does not touch the main agent's turns": [
    twoTurns().undo(1, false, "agent-0"),
    [KEPT_ONE, kept("drop this question", "dropped answer")],
  ],
};
for (const [name, [journal, want]] of Object.entries(UNDO)) {
  Deno.test(`undo: ${name}`, () => assertEquals(shape(journal.toString()), want));
}

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
  assertEquals(stretch.turns.map((t) => [t.index, t.retracted]), [[1, false]]);
  // Read from the start (a rewritten journal): the captured turn is withdrawn, and stays captured.
  const all = planCapture(scanTurns(linesOf(text)).turns, keys, 0, opts);
  assertEquals(all.toSend.map((c) => c.key), [captureKey(1, "user"), captureKey(1, "assistant")]);
  assertEquals(all.skipped.map((s) => s.reason), ["already-captured", "already-captured"]);
});

const VARIANTS = ["2.1.0", "0.41.0", "0.41.0-legacy"];
/** Scenarios without /undo: there the independent reading (which knows no undo) would differ on purpose. */
const SCENARIOS =
  "plain tool subagent failed interrupted-print interrupted-tui compaction resumed hook-context closed-stdout"
    .split(" ");

/** The independent reading: assistant text parts per prompt, and text parts seen before any prompt. */
function independent(lines: string[]): { turns: string[][]; orphans: number } {
  const turns: string[][] = [];
  let orphans = 0;
  for (const line of lines) {
    const r = JSON.parse(line);
    if (r.agentId !== undefined && r.agentId !== "main") continue;
    if (r.type === "turn.prompt") turns.push([]);
    const e = r.type === "context.append_loop_event" ? r.event : undefined;
    if (e?.type === "content.part" && e.part?.type === "text" && e.part.text) {
      if (turns.length) turns.at(-1)!.push(e.part.text);
      else orphans++;
    }
  }
  return { turns, orphans };
}

/** The product's reading of the same lines. */
function product(lines: string[], firstIndex: number) {
  const scan = scanTurns(linesOf(lines.join("\n")), firstIndex);
  return { scan, turns: scan.turns.map((t) => t.assistantParts.map((p) => p.text)) };
}

/** Every line of a recorded journal. */
const journal = async (variant: string, scenario: string) =>
  (await Deno.readTextFile(`${ROOT}${variant}/${scenario}/wire.jsonl`)).split("\n").filter(Boolean);

Deno.test("turn binding: read from every prompt with the wrong numbering, every text part lands where the independent reading puts it", async () => {
  let stretches = 0;
  for (const variant of VARIANTS) {
    for (const scenario of SCENARIOS) {
      const lines = await journal(variant, scenario);
      const starts = lines.flatMap((l, i) => (JSON.parse(l).type === "turn.prompt" ? [i] : []));
      for (const start of starts) {
        const stretch = lines.slice(start);
        const want = independent(stretch);
        // 0 and 1000: numbering that matches no turnId of a stretch that begins at a later turn.
        for (const firstIndex of [0, 1000]) {
          const got = product(stretch, firstIndex);
          assertEquals(
            got.turns,
            want.turns,
            `${variant}/${scenario} from ${start}, first index ${firstIndex}`,
          );
          assertEquals(got.scan.unbound, 0);
        }
        stretches++;
      }
    }
  }
  assertEquals(stretches, 48, "every prompt of every journal");
});

Deno.test("turn binding: a rewrite that renumbered every turn id keeps every text part in its turn", async () => {
  for (const variant of VARIANTS) {
    for (const scenario of SCENARIOS) {
      const lines = (await journal(variant, scenario)).map((l) => {
        const r = JSON.parse(l);
        if (r.type === "context.append_loop_event" && r.event?.turnId !== undefined) {
          r.event.turnId = String(Number(r.event.turnId) + 100);
        }
        if (r.type === "turn.ended" && typeof r.turnId === "number") r.turnId += 100;
        return JSON.stringify(r);
      });
      const want = independent(lines);
      const got = product(lines, 0);
      assertEquals(got.turns, want.turns, `${variant}/${scenario}`);
      const rebound = want.turns.flat().length;
      assertEquals(got.scan.rebound, rebound, `${variant}/${scenario}: each one counted as rebound`);
      // The renumbered turn.ended still closes the turn it ends (the open one), so capture is not stuck.
      if (!variant.endsWith("legacy") && scenario === "plain") {
        assertEquals(got.scan.turns.map((t) => t.closed), [true]);
      }
    }
  }
});

Deno.test("turn binding: text before the stretch's first prompt has no turn — counted as unbound, not dropped silently", async () => {
  for (const variant of VARIANTS) {
    const lines = await journal(variant, "resumed");
    const firstText = lines.findIndex((l) => JSON.parse(l).event?.type === "content.part");
    const stretch = lines.slice(firstText); // a cursor in the middle of the first turn
    const want = independent(stretch);
    const got = product(stretch, 0);
    assertEquals(got.turns, want.turns, variant);
    assertEquals(got.scan.unbound, want.orphans, variant);
    assertTrue(want.orphans > 0);
    assertEquals(got.scan.turns.map(assistantText).length, want.turns.length);
  }
});

const line = (o: unknown) => `${JSON.stringify(o)}\n`;

Deno.test("read: garbage lines, blank lines, arrays and scalars are skipped", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  await Deno.writeTextFile(p, `not json\n\n[1,2]\n42\n${line({ ok: true })}\u0000\u0001binary\n`);
  const r = await readJournal(p);
  assertEquals(r.lines.map((l) => l.value), [{ ok: true }]);
});

Deno.test("read: a rewritten (shorter, or same length with other bytes) or replaced file is re-read from 0", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  const content = line({ n: 1 }) + line({ n: 2 });
  await Deno.writeTextFile(p, content);
  const c = await cursorAt(p, content.length);
  // shorter
  await Deno.writeTextFile(p, line({ n: 1 }));
  assertEquals((await readJournal(p, c)).rewritten, true);
  // same length, different bytes
  await Deno.writeTextFile(p, line({ n: 3 }) + line({ n: 4 }));
  const same = await readJournal(p, c);
  assertEquals([same.rewritten, same.lines.length], [true, 2]);
  // replaced by another file (new inode) with identical content
  await Deno.writeTextFile(`${dir.path}/new`, content + line({ n: 5 }));
  await Deno.rename(`${dir.path}/new`, p);
  const replaced = await readJournal(p, c);
  // a new inode is noticed where the platform has one
  assertEquals(replaced.rewritten || replaced.lines.length === 1, true);
  if (Deno.build.os !== "windows") assertEquals(replaced.rewritten, true);
});

Deno.test("read: a filter skips JSON parsing of uninteresting lines", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  await Deno.writeTextFile(p, line({ type: "usage.record" }) + line({ type: "turn.prompt" }));
  const r = await readJournal(p, undefined, (l) => l.includes("turn."));
  assertEquals(r.lines.map((l) => l.value.type), ["turn.prompt"]);
});

Deno.test("read: a line over 64 MiB is skipped unread, the lines after it read at their offsets", async () => {
  // One of 600 MiB threw at every capture ("buffer exceeds maximum length": no string holds it), so the
  // session's later turns were never sent; now it is passed over without being held.
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  const huge = line({ huge: "x".repeat(64 * 1024 * 1024) });
  await Deno.writeTextFile(p, line({ before: 1 }) + huge + line({ after: 1 }));
  const r = await readJournal(p);
  assertEquals(r.lines.map((l) => [l.value, l.offset]), [
    [{ before: 1 }, 0],
    [{ after: 1 }, line({ before: 1 }).length + huge.length],
  ]);
  assertEquals(r.endOffset, (await Deno.stat(p)).size);
});

/** Bytes `fn` has Uint8Array scan (`indexOf`) and copy (`slice`, `set`): a reader's work on what it read. */
async function bytesWorked(fn: () => Promise<unknown>): Promise<number> {
  type Method = (this: Uint8Array, ...args: unknown[]) => unknown;
  const proto = Uint8Array.prototype as unknown as Record<string, Method>;
  const costs: Record<string, (a: Uint8Array, args: unknown[]) => number> = {
    indexOf: (a, [, from]) => a.length - Number(from ?? 0),
    slice: (a, [from, to]) => Number(to ?? a.length) - Number(from ?? 0),
    set: (_a, [source]) => (source as ArrayLike<number>).length,
  };
  const saved = Object.fromEntries(Object.keys(costs).map((name) => [name, proto[name]]));
  let work = 0;
  for (const [name, cost] of Object.entries(costs)) {
    proto[name] = function (...args) {
      work += cost(this, args);
      return saved[name].apply(this, args);
    };
  }
  try {
    await fn();
  } finally {
    Object.assign(proto, saved);
  }
  return work;
}

Deno.test("read: a line of many read chunks is read whole, each byte scanned and copied a bounded number of times", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  const text = line({ big: "x".repeat(8 * 1024 * 1024) }) + line({ after: 1 });
  await Deno.writeTextFile(p, text);
  let read: Awaited<ReturnType<typeof readJournal>> | undefined;
  const work = await bytesWorked(async () => read = await readJournal(p));
  assertEquals(read?.lines.map((l) => Object.keys(l.value)), [["big"], ["after"]]);
  assertEquals([(read?.lines[0].value.big as string).length, read?.endOffset], [
    8 * 1024 * 1024,
    text.length,
  ]);
  // rescanning and recopying the unfinished line at every 1 MiB chunk came to 15 bytes of work a byte
  assertTrue(work < 4 * text.length, `${work} bytes scanned and copied for a line of ${text.length}`);
});
