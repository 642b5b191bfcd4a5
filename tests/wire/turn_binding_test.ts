/**
 * A loop event whose `turnId` matches no prompt the scanner knows (the journal read from an unusual start, or
 * an engine that renumbered its turns) is bound to the turn that is open, never dropped silently. Checked
 * against an independent reading of the same bytes: a few lines below that know nothing of turn ids — each
 * main-agent prompt starts a turn, each main-agent text part belongs to the latest one.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { assistantText, scanTurns } from "../../kimi/journal/turns.ts";
import type { JournalLine } from "../../kimi/journal/read.ts";

const ROOT = new URL("../fixtures/journals/", import.meta.url).pathname;
const VARIANTS = ["2.1.0", "0.41.0", "0.41.0-legacy"];
/** Scenarios without /undo: there the independent reading (which knows no undo) would differ on purpose. */
const SCENARIOS = [
  "plain",
  "tool",
  "subagent",
  "failed",
  "interrupted-print",
  "interrupted-tui",
  "compaction",
  "resumed",
  "hook-context",
];

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
  let offset = 0;
  const parsed: JournalLine[] = lines.map((l) => {
    const line = { offset, end: offset + l.length + 1, value: JSON.parse(l) };
    offset = line.end;
    return line;
  });
  const scan = scanTurns(parsed, firstIndex);
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
            `${variant}/${scenario} from line ${start}, first index ${firstIndex}`,
          );
          assertEquals(got.scan.unbound, 0);
        }
        stretches++;
      }
    }
  }
  assertEquals(stretches, 45, "every prompt of every journal");
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
