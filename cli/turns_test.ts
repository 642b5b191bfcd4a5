/** The readable form of `turns`: one line per message in 80 terminal columns, nothing a terminal acts on. */

import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { renderTurns, type TurnMessage } from "./turns.ts";
import { textColumns as columns } from "../lib/columns.ts";

Deno.test("renderTurns: a header, one line per message within 80 columns, a count", () => {
  const messages: TurnMessage[] = [
    { turn_id: "0", role: "user", content: "remember that I like tabs" },
    { turn_id: "0", role: "assistant", content: "x".repeat(500) },
    { turn_id: "12345678901234567890", role: "user", content: "我".repeat(100) },
  ];
  const lines = renderTurns(messages);
  assertEquals(lines.length, messages.length + 2);
  assertMatch(lines[0], /^turn +role +message$/);
  assertMatch(lines[1], /^0 +user +remember that I like tabs$/);
  assertMatch(lines[2], /^0 +assistant +x+…$/);
  assertMatch(lines[3], /^1234567… +user +我+…$/, "a long turn id is cut");
  for (const line of lines) assertTrue(columns(line) <= 80, `${columns(line)} columns: ${line}`);
  assertEquals(columns(lines[2]), 80, "the preview uses the whole width");
  assertMatch(lines[4], /^3 message\(s\) in 2 turn\(s\) would be sent/);
  assertEquals(renderTurns([]), ["Nothing to send: the journal has no closed turn with text."]);
});
