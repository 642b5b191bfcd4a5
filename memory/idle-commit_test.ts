/** When a session left uncommitted is due for the idle watch's commit (memory/idle-commit.ts dueAt). */

import { assertEquals } from "../tests/support/assert.ts";
import { dueAt } from "./idle-commit.ts";
import { capturingFor, SessionStateSchema } from "./state.ts";

Deno.test("dueAt: idle after the last capture (now when it is ahead of the clock); never another destination's", () => {
  const base = { capturedSinceCommit: 2, ovSession: "kc-x", lastCaptureAt: 1000, destination: "d1" };
  const state = (s: object) => SessionStateSchema.parse({ ...base, ...s });
  assertEquals(dueAt(state({}), 500, "d1", 1200), 1500);
  assertEquals(dueAt(state({ lastCaptureAt: 9_999_999 }), 500, "d1", 1200), 1200, "a clock set back: now");
  assertEquals(dueAt(state({ capturedSinceCommit: 0 }), 500, "d1"), undefined);
  assertEquals(dueAt(state({ ovSession: undefined }), 500, "d1"), undefined);
  assertEquals(dueAt(state({ destination: "d2" }), 500, "d1"), undefined, "another server or identity");
  assertEquals(dueAt(state({ destination: undefined }), 500, "d1"), undefined, "unknown: not ours");
  assertEquals(dueAt(state({ destination: "d2" }), 500, undefined, 1200), 1500, "wherever (status)");
});

Deno.test("capturingFor: captures left at another destination are owed to it, due for its own watch; back there they are its own again", () => {
  const to = (url: string) => ({ url, account: "", user: "" });
  const first = SessionStateSchema.parse({
    ...{ capturedSinceCommit: 2, ovSession: "kc-x", lastCaptureAt: 1000, lastAckedKey: "k2" },
    ...{ destination: "d1", to: to("http://a") },
  });
  const moved = capturingFor(first, "d2", to("http://b"));
  assertEquals([moved.destination, moved.capturedSinceCommit], ["d2", 0]);
  assertEquals(moved.owed, [{
    destination: "d1",
    to: to("http://a"),
    captured: 2,
    lastAckedKey: "k2",
    at: 1000,
  }]);
  assertEquals([dueAt(moved, 500, "d1", 1200), dueAt(moved, 500, "d2", 1200)], [1500, undefined]);
  const back = capturingFor({ ...moved, capturedSinceCommit: 1, lastCaptureAt: 3000 }, "d1", to("http://a"));
  assertEquals([back.capturedSinceCommit, back.owed.map((u) => [u.destination, u.captured])], [2, [[
    "d2",
    1,
  ]]]);
  assertEquals(capturingFor(SessionStateSchema.parse({ capturedSinceCommit: 3 }), "d1", to("x")).owed, []);
});
