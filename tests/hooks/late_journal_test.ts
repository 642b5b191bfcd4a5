/** Stop fired before Kimi wrote the turn (seen under load): the worker waits for it (OPENVIKING_CAPTURE_WAIT_MS). */

import { assertEquals } from "../support/assert.ts";
import { JournalBuilder } from "../support/journal.ts";
import { world } from "./world.ts";

Deno.test("Stop before the turn is in the journal: the capture waits for it and captures it", async () => {
  await using w = await world({ env: { OPENVIKING_CAPTURE_WAIT_MS: "8000" } });
  const j = new JournalBuilder();
  j.simpleTurn("first question about the release notes", "first answer: they live in CHANGES.md");
  await w.journal(j.toString());
  await w.hook("stop");
  assertEquals((await w.state()).capturedKeys.length, 2);
  const second = w.hook("stop"); // Kimi writes the turn only a second after its Stop
  await new Promise((r) => setTimeout(r, 1000));
  j.simpleTurn("second question: who reviews them?", "second answer: the release manager");
  await w.journal(j.toString());
  await second;
  assertEquals(w.stored(), ["0:user", "0:assistant", "1:user", "1:assistant"]);
});
