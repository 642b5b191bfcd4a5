/** The wait for a turn's end scans the journal again only when the file changed. */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { scanJournal, waitForTurnEnd } from "../../memory/capture.ts";

Deno.test("waitForTurnEnd: an open turn that does not change is scanned once, not every 100 ms", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/wire.jsonl`;
  const j = new JournalBuilder().simpleTurn("first question", "first answer");
  j.prompt("second question").stepBegin().text("half an answer");
  await Deno.writeTextFile(path, j.toString());
  let scans = 0;
  const counted: typeof scanJournal = (p, c) => (scans++, scanJournal(p, c));
  assertEquals(
    await waitForTurnEnd(path, undefined, 700, true, counted),
    false,
    "still open at the deadline",
  );
  assertEquals(scans, 1);

  scans = 0;
  const waiting = waitForTurnEnd(path, undefined, 5000, true, counted);
  await new Promise((r) => setTimeout(r, 300));
  const before = j.lines.length;
  j.text(" and the rest").stepEnd("end_turn").ended();
  await Deno.writeTextFile(path, j.lines.slice(before).map((l) => `${l}\n`).join(""), { append: true });
  assertEquals(await waiting, true, "the end is seen once it is written");
  assertEquals(scans, 2, "once at the start, once after the write");
});

Deno.test("waitForTurnEnd: no journal yet, then one with a closed turn (Stop expects a turn)", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/wire.jsonl`;
  const waiting = waitForTurnEnd(path, undefined, 5000, true);
  await new Promise((r) => setTimeout(r, 250));
  await Deno.writeTextFile(path, new JournalBuilder().simpleTurn("a question", "an answer").toString());
  assertEquals(await waiting, true);
  assertEquals(await waitForTurnEnd(`${dir.path}/none.jsonl`, undefined, 0, false), true, "nothing expected");
});
