import { assertEquals } from "../tests/support/assert.ts";
import { renderReplay } from "./replay.ts";

const nothing = {
  replayed: 0,
  messages: 0,
  held: 0,
  rejected: 0,
  expired: 0,
  deferred: 0,
  commitTasks: [],
  delivered: [],
  elsewhere: [],
};

Deno.test("replay --rejected with nothing refused speaks of the refused writes, not of the queue", () => {
  assertEquals(
    renderReplay(nothing, 0, "http://ov", true),
    "Replayed nothing to http://ov: no refused writes are kept.",
  );
  assertEquals(renderReplay(nothing, 0, "http://ov"), "Replayed nothing to http://ov: the queue is empty.");
  assertEquals(
    renderReplay(nothing, 2, "http://ov", true),
    "Replayed nothing to http://ov: 2 refused write(s) are still kept.",
  );
});
