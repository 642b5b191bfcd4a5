/**
 * Fuzzing the journal path: journals mixing real records with garbled, truncated, wrongly typed, blank, CRLF,
 * invalid-UTF-8 and huge lines go through readJournal → scanTurns → planCapture → acknowledge without
 * throwing, and what comes out keeps its invariants (offsets, complete lines only, unique keys, nothing
 * already acknowledged, bounded text).
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { concatBytes } from "../../lib/bytes.ts";
import { TRUNCATION_MARK } from "../../kimi/journal/clean.ts";
import { acknowledge, planCapture } from "../../kimi/journal/plan.ts";
import { cursorAt, type JournalLine, readJournal } from "../../kimi/journal/turns.ts";
import { assistantText, scanTurns, turnLineFilter, userText } from "../../kimi/journal/turns.ts";
import { credentialText, leakedSecrets, nastyString, params, wrongValue } from "./arbitraries.ts";

const TYPES = ("metadata turn.prompt turn.steer turn.cancel turn.ended context.append_loop_event " +
  "context.append_message prompt.completed").split(" ");

/** What a turn's user or assistant says: random text, sometimes with real-format credentials in it. */
const said = fc.oneof({ weight: 3, arbitrary: nastyString }, credentialText.map((c) => c.text));

/** Real records of a random small session (v2 or legacy). */
const realLines = fc.tuple(fc.boolean(), fc.array(fc.tuple(said, said), { maxLength: 4 }))
  .map(([v2, turns]) => {
    const j = new JournalBuilder({ v2 });
    for (const [u, a] of turns) j.prompt(u).stepBegin().text(a).stepEnd("end_turn").ended();
    return j.lines;
  });

/** A record of a known type whose fields have random (often wrong) types. */
const wrongRecord = fc.record({
  type: fc.constantFrom(...TYPES),
  agentId: fc.oneof(fc.constant("main"), wrongValue),
  ...Object.fromEntries("turnId reason protocol_version".split(" ").map((k) => [k, wrongValue])),
  input: fc.oneof(wrongValue, fc.array(fc.record({ type: wrongValue, text: wrongValue }), { maxLength: 2 })),
  origin: fc.oneof(wrongValue, fc.record({ kind: wrongValue })),
  event: fc.oneof(
    wrongValue,
    fc.record({
      ...Object.fromEntries("turnId step stepUuid finishReason".split(" ").map((k) => [k, wrongValue])),
      type: fc.oneof(fc.constantFrom("content.part", "step.end", "step.begin"), wrongValue),
      part: fc.oneof(
        wrongValue,
        fc.record({ type: fc.oneof(fc.constant("text"), wrongValue), text: wrongValue }),
      ),
    }, { requiredKeys: [] }),
  ),
}, { requiredKeys: ["type"] }).map((r) => JSON.stringify(r));

const encoder = new TextEncoder();

/** Journal bytes: real, garbled, truncated and wrongly typed lines, blank and CRLF lines, stray bytes. */
const journalBytes = fc.tuple(
  realLines,
  fc.array(
    fc.oneof(
      wrongRecord,
      nastyString,
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
      fc.constantFrom("", "\r", "{", "null", "[]", '{"type":"turn.prompt"', "x".repeat(70_000)),
    ),
    { maxLength: 12 },
  ),
  fc.array(fc.nat(), { maxLength: 6 }),
  fc.array(fc.uint8Array({ minLength: 1, maxLength: 4 }), { maxLength: 3 }),
  fc.boolean(),
).map(([real, extra, positions, stray, crlf]) => {
  const lines = [...real];
  extra.forEach((l, i) => lines.splice((positions[i] ?? i) % (lines.length + 1), 0, l));
  if (positions[0] !== undefined && lines.length) {
    const k = positions[0] % lines.length;
    lines[k] = lines[k].slice(0, Math.floor(lines[k].length / 2));
  }
  const parts: Uint8Array[] = lines.map((l) => encoder.encode(`${l}${crlf ? "\r\n" : "\n"}`));
  stray.forEach((b, i) => parts.splice((positions[i + 1] ?? 0) % (parts.length + 1), 0, b));
  return concatBytes(parts);
});

function checkRead(bytes: Uint8Array, lines: JournalLine[], start: number, end: number): void {
  assertTrue(end <= bytes.length && end >= start, "endOffset within the file");
  assertTrue(end === start || bytes[end - 1] === 0x0a, "reads stop after a newline");
  let prev = start - 1;
  for (const l of lines) {
    assertTrue(l.offset > prev && l.end > l.offset && l.end <= end, "line spans in order, inside the read");
    assertEquals(bytes[l.end - 1], 0x0a);
    prev = l.offset;
  }
}

Deno.test("fuzz: any journal reads, scans, plans and acknowledges without throwing; invariants hold", async () => {
  await using dir = await tempDir("ovk-fuzz-");
  const path = `${dir.path}/wire.jsonl`;
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      journalBytes,
      fc.boolean(),
      fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("0:user", "0:assistant", "1:user")), {
        maxLength: 4,
      }),
      fc.nat(6),
      fc.nat(),
      fc.integer({ min: 100, max: 2000 }),
      async (bytes, includeOpen, ackedKeys, ackedBelow, count, maxLength) => {
        n++;
        await Deno.writeFile(path, bytes);
        for (const filter of [undefined, turnLineFilter]) {
          const read = await readJournal(path, undefined, filter);
          checkRead(bytes, read.lines, 0, read.endOffset);
          const firstIndex = ackedBelow % 3;
          const scan = scanTurns(read.lines, firstIndex);
          scan.turns.forEach((t, i) => {
            assertEquals(t.index, firstIndex + i, "turn indexes are consecutive");
            userText(t);
            assistantText(t);
          });
          assertEquals(scan.nextIndex, firstIndex + scan.turns.length);
          const acked = new Set(
            [...ackedKeys, "0:user", `${firstIndex}:assistant`].slice(0, ackedKeys.length),
          );
          const plan = planCapture(scan.turns, acked, ackedBelow, { maxLength, redact: true, includeOpen });
          const keys = plan.toSend.map((c) => c.key);
          assertEquals(new Set(keys).size, keys.length, "keys are unique");
          for (const c of plan.toSend) {
            assertTrue(!acked.has(c.key) && c.turnIndex >= ackedBelow, "nothing acknowledged is planned");
            assertTrue(c.payload.content.trim().length > 0, "no empty message");
            assertTrue(c.payload.content.length <= maxLength + TRUNCATION_MARK.length, "bounded length");
            assertEquals(leakedSecrets(c.payload.content), [], "no credential is planned for sending");
            assertEquals(typeof c.payload.turn_id, "string");
          }
          const ack = acknowledge(
            plan,
            count % (plan.toSend.length + 1),
            ackedBelow,
            scan.turns,
            scan.nextIndex,
          );
          assertTrue(ack.ackedBelow >= ackedBelow, "the watermark never goes back");
          assertTrue(!ack.resumeAt || ack.resumeAt.index >= ackedBelow, "resume at an unacknowledged turn");
        }
      },
    ),
    params(400),
  );
  console.log(`journal fuzz: ${n} journals`);
});

Deno.test("fuzz: reading through a cursor in two pieces gives the lines of one read, wherever the cut falls", async () => {
  await using dir = await tempDir("ovk-fuzz-");
  const path = `${dir.path}/wire.jsonl`;
  await fc.assert(
    fc.asyncProperty(journalBytes, fc.nat(), fc.boolean(), async (bytes, cutAt, filtered) => {
      const filter = filtered ? turnLineFilter : undefined;
      const cut = bytes.length ? cutAt % (bytes.length + 1) : 0;
      await Deno.writeFile(path, bytes.subarray(0, cut));
      const first = await readJournal(path, undefined, filter);
      checkRead(bytes, first.lines, 0, first.endOffset);
      const cursor = await cursorAt(path, first.endOffset);
      await Deno.writeFile(path, bytes.subarray(cut), { append: true });
      const second = await readJournal(path, cursor, filter);
      assertEquals(second.rewritten, false, "an appended file is not a rewritten one");
      checkRead(bytes, second.lines, first.endOffset, second.endOffset);
      const whole = await readJournal(path, undefined, filter);
      assertEquals([...first.lines, ...second.lines], whole.lines);
      assertEquals(second.endOffset, whole.endOffset);
    }),
    params(300),
  );
});
