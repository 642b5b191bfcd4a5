/** `deno task turns`: what capture would send from a located journal, as JSON objects or one line per message. */

import { assertEquals, assertMatch, assertTrue } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { placeJournal } from "../tests/support/hook-context.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { renderTurns, type TurnMessage, turnsCommand } from "./turns.ts";
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

Deno.test("turnsCommand: --json one JSON object per message from the located journal, its readable form; 1 unknown", async () => {
  await using dir = await tempDir();
  const env = { HOME: dir.path, OPENVIKING_URL: "http://127.0.0.1:9" };
  const long = `please ${"refactor the parser and keep every test green ".repeat(6)}`;
  const journal = new JournalBuilder().simpleTurn("remember that I like tabs", "Noted:\n tabs,\tnot spaces.")
    .simpleTurn(long, "\u001b[31mred\u001b[0m 好的，我会记住这个偏好。".repeat(4));
  await placeJournal(dir.path, "session_turns", journal.toString());
  const run = async (id: string, json: boolean) => {
    const out = { stdout: "", stderr: "" };
    const { log, error } = console;
    console.log = (text: string) => out.stdout += `${text}\n`;
    console.error = (text: string) => out.stderr += `${text}\n`;
    try {
      return { code: await turnsCommand(id, json, env), ...out };
    } finally {
      Object.assign(console, { log, error });
    }
  };
  const json = await run("session_turns", true);
  assertEquals(json.code, 0, json.stderr);
  const messages = json.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
  assertEquals(messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assertEquals(messages[0], { turn_id: "0", role: "user", content: "remember that I like tabs" });
  assertEquals((await run("session_turns", false)).stdout, `${renderTurns(messages).join("\n")}\n`);
  const unknown = await run("session_none", false);
  assertEquals([unknown.code, unknown.stdout], [1, ""]);
  assertMatch(unknown.stderr, /kimi session list --json/);
});
