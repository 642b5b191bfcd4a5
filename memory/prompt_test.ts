/** The prompt hook's dedupe and reuse decision. */

import { assertEquals } from "../tests/support/assert.ts";
import { DUPLICATE_WINDOW_MS, promptDecision } from "./prompt.ts";
import { emptyState, type SessionState } from "./state.ts";

const state = (over: Partial<SessionState>): SessionState => ({ ...emptyState(), ...over });

Deno.test("prompt decision: with an event id, the same id is the duplicate, whatever the time or text", () => {
  const s = state({ promptEventId: "p1", promptHash: "h1", promptAt: 0 });
  assertEquals(promptDecision(s, { hash: "other", eventId: "p1", at: 1e9 }).duplicate, true);
  assertEquals(
    promptDecision(s, { hash: "h1", eventId: "p2", at: 1 }).duplicate,
    false,
    "a new id is a new prompt",
  );
});

Deno.test("prompt decision: without an event id, the same text within the window is the duplicate", () => {
  const s = state({ promptHash: "h", promptAt: 10_000 });
  const at = (t: number, hash = "h") => promptDecision(s, { hash, eventId: "", at: t }).duplicate;
  assertEquals(at(10_000), true);
  assertEquals(at(10_000 + DUPLICATE_WINDOW_MS - 1), true);
  assertEquals(at(10_000 - DUPLICATE_WINDOW_MS + 1), true, "a clock a little behind is the same run");
  assertEquals(at(10_000 + DUPLICATE_WINDOW_MS), false, "the window is open at its end");
  assertEquals(at(10_001, "other"), false, "other text is another prompt");
  assertEquals(
    promptDecision(state({ promptHash: "h" }), { hash: "h", eventId: "", at: 0 }).duplicate,
    false,
  );
});

Deno.test("prompt decision: the same prompt again reuses its stored recall (even an empty one); profile until injected; compaction noted", () => {
  const recall = {
    source: "context" as const,
    memories: [{ uri: "viking://user/d/memories/a.md", text: "x" }],
  };
  const stored = state({ promptHash: "h", promptAt: 0, recall });
  assertEquals(promptDecision(stored, { hash: "h", eventId: "", at: 60_000 }).reuse, recall);
  const none = { source: "none" as const, memories: [] };
  assertEquals(
    promptDecision(state({ promptHash: "h", recall: none }), { hash: "h", eventId: "", at: 1 }).reuse,
    none,
  );
  assertEquals(
    promptDecision(state({ promptHash: "h", recall: null }), { hash: "h", eventId: "", at: 1 }).reuse,
    undefined,
    "null: that prompt's recall never finished",
  );
  assertEquals(promptDecision(stored, { hash: "new", eventId: "", at: 1 }).reuse, undefined);
  assertEquals(promptDecision(state({}), { hash: "h", eventId: "", at: 1 }).needProfile, true);
  assertEquals(
    promptDecision(state({ profileInjected: true }), { hash: "h", eventId: "", at: 1 }).needProfile,
    false,
  );
  assertEquals(promptDecision(state({}), { hash: "h", eventId: "", at: 1 }).afterCompaction, false);
  assertEquals(
    promptDecision(state({ compacted: true }), { hash: "h", eventId: "", at: 1 }).afterCompaction,
    true,
  );
});
