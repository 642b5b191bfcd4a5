import { assertEquals } from "../tests/support/assert.ts";
import { renderReplay } from "./replay.ts";

const nothing = {
  ...{ replayed: 0, messages: 0, held: 0, rejected: 0, expired: 0, deferred: 0 },
  ...{ commitTasks: [], delivered: [], elsewhere: [] },
};

Deno.test("replay --rejected with nothing refused speaks of the refused writes, not of the queue", () => {
  const cases: [number, boolean | undefined, string][] = [
    [0, true, "no refused writes are kept."],
    [0, undefined, "the queue is empty."], // the default: the queue
    [2, true, "2 refused write(s) are still kept."],
  ];
  for (const [left, rejected, rest] of cases) {
    assertEquals(
      renderReplay(nothing, left, "http://ov", rejected),
      `Replayed nothing to http://ov: ${rest}`,
    );
  }
});
