import { assertEquals } from "../tests/support/assert.ts";
import { hostSessionId, parseHookInput, promptText } from "./payload.ts";

const parse = (v: unknown) => parseHookInput(new TextEncoder().encode(JSON.stringify(v)));

Deno.test("hook input: unknown fields are kept; a field of an unexpected type reads as absent, the rest still works", () => {
  const r = parse({
    session_id: "session_1",
    cwd: "/w",
    source: 5,
    tool_name: ["Read"],
    prompt: [{ type: "text", text: "hi there" }],
    extra: { a: 1 },
  });
  assertEquals(r.ok, true);
  if (!r.ok) return;
  assertEquals(
    [hostSessionId(r.input), r.input.cwd, r.input.source, r.input.tool_name, promptText(r.input)],
    ["session_1", "/w", undefined, undefined, "hi there"],
  );
  assertEquals((r.input as Record<string, unknown>).extra, { a: 1 });
});

Deno.test("hook input: ids may be numbers; a string prompt; text parts joined", () => {
  const r = parse({ session_id: " session_2 ", prompt: "plain text", turn_id: 42 });
  if (!r.ok) throw new Error(r.reason);
  const want = ["session_2", "plain text", "42"];
  assertEquals([hostSessionId(r.input), promptText(r.input), r.input.turn_id], want);
  const parts = parse({
    prompt: [{ type: "text", text: "a" }, { type: "image_url", image_url: {} }, { type: "text", text: "b" }],
  });
  if (!parts.ok) throw new Error(parts.reason);
  assertEquals(promptText(parts.input), "a\nb");
});

Deno.test("hook input: not an object → a reason, never a throw", () => {
  const cases = [["", "empty stdin"], ["[1]", "array"], ["7", "number"], ["{x", "not JSON"]] as const;
  for (const [bytes, reason] of cases) {
    const r = parseHookInput(new TextEncoder().encode(bytes));
    assertEquals(r.ok, false);
    if (!r.ok) assertEquals(r.reason.includes(reason), true, r.reason);
  }
});
