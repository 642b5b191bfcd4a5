/** When a session left uncommitted is due for the idle watch's commit (memory/idle-commit.ts dueAt). */

import { assertEquals } from "../tests/support/assert.ts";
import { dueAt } from "./idle-commit.ts";

Deno.test("dueAt: idle after the last capture (now when it is ahead of the clock); never another destination's", () => {
  const base = { capturedSinceCommit: 2, ovSession: "kc-x", lastCaptureAt: 1000, destination: "d1" };
  const state = (s: object) => ({ ...base, ...s }) as Parameters<typeof dueAt>[0];
  assertEquals(dueAt(state({}), 500, "d1", 1200), 1500);
  assertEquals(dueAt(state({ lastCaptureAt: 9_999_999 }), 500, "d1", 1200), 1200, "a clock set back: now");
  assertEquals(dueAt(state({ capturedSinceCommit: 0 }), 500, "d1"), undefined);
  assertEquals(dueAt(state({ ovSession: undefined }), 500, "d1"), undefined);
  assertEquals(dueAt(state({ destination: "d2" }), 500, "d1"), undefined, "another server or identity");
  assertEquals(dueAt(state({ destination: undefined }), 500, "d1"), undefined, "unknown: not ours");
  assertEquals(dueAt(state({ destination: "d2" }), 500, undefined, 1200), 1500, "wherever (status)");
});
