/** StopFailure (never Stop) on a failed turn, on journals recorded from the real CLI: the prompt goes alone, committed. */

import { assertEquals } from "../support/assert.ts";
import { world } from "./world.ts";

const PROMPT = "this will FAIL at the provider";

for (const variant of ["2.1.0", "0.41.0", "0.41.0-legacy"]) {
  Deno.test(`hook stop-failure (${variant} failed turn): the prompt alone reaches OpenViking, committed`, async () => {
    await using w = await world({ env: { OPENVIKING_CAPTURE_WAIT_MS: "500" } });
    const journal = new URL(`../fixtures/journals/${variant}/failed/wire.jsonl`, import.meta.url);
    await w.journal(await Deno.readTextFile(journal));
    await w.hook("stop-failure", {
      error_type: "APIStatusError",
      error_message: "400 mock request rejected",
    });
    assertEquals((await w.state()).lastCaptureEvent, "stop-failure");
    const stored = () => w.fake.messages(w.ov).map((m) => [m.turn_id, m.role, m.content]);
    assertEquals([stored(), w.commits()], [[["0", "user", PROMPT]], 1]);
    await w.hook("session-end"); // legacy print mode fires it right after: nothing is sent twice
    assertEquals((await w.state()).lastCaptureEvent, "session-end");
    assertEquals([stored(), w.commits()], [[["0", "user", PROMPT]], 1]);
  });
}
