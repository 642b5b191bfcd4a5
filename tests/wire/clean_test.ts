import { assertEquals, assertTrue } from "../support/assert.ts";
import { cleanInjected, skipReason, truncate, TRUNCATION_MARK } from "../../wire/clean.ts";

Deno.test("clean: every injected form is stripped", () => {
  const cases: [string, string][] = [
    [
      '<openviking-context source="session-start">\nprofile\n</openviking-context>\nreal question',
      "real question",
    ],
    ["before <openviking-context>\nmem\n</openviking-context> after", "before  after"],
    ["<relevant-memories>\n- a\n</relevant-memories>ask", "ask"],
    ['<relevant-memory uri="x">m</relevant-memory>ask', "ask"],
    ["<system-reminder>\nToday is…\n</system-reminder>", ""],
    [
      '<hook_result hook_event="UserPromptSubmit">\nMEMORY\n</hook_result>\nhi there friend',
      "hi there friend",
    ],
    ['<user-profile uri="u">p</user-profile><available-memories>\nx\n</available-memories>q', "q"],
    ["text <openviking-context>\nunclosed block to the end", "text"],
    ["OpenViking memory digest:\n- a\n- b\n\nquestion", "question"],
    ["answer\nMore detail: use the OpenViking MCP read tool.", "answer"],
    ["[openviking-memory] recall skipped\nreal", "real"],
    ["[2026-11-30 12:00 UTC] hello", "hello"],
    ["a\u0000b", "ab"],
  ];
  for (const [input, expected] of cases) assertEquals(cleanInjected(input), expected, input);
  assertEquals(cleanInjected("<systematic> stays"), "<systematic> stays");
});

Deno.test("filters: empty, acknowledgements, slash commands, punctuation, too short", () => {
  const cases: [string, "user" | "assistant", string][] = [
    ["", "user", "empty"],
    ["   ", "assistant", "empty"],
    ["ok", "user", "ack"],
    ["Thanks!", "user", "ack"],
    ["好的", "user", "ack"],
    ["继续。", "user", "ack"],
    ["/compact", "user", "slash-command"],
    ["/model k2 now", "user", "slash-command"],
    ["?!…", "user", "punctuation"],
    ["hmm", "user", "too-short"],
    ["fix it", "assistant", "too-short"],
    ["use tabs please", "user", ""],
    ["请用制表符缩进", "user", ""],
    ["/tmp is full, clean it", "user", ""],
    ["/compact\nand then explain", "user", ""],
    ["/compact", "assistant", ""],
  ];
  for (const [text, role, reason] of cases) assertEquals(skipReason(text, role), reason, `${role}: ${text}`);
});

Deno.test("truncate: at most max characters, marker included, surrogate pairs kept whole", () => {
  assertEquals(truncate("short", 100), "short");
  const t = truncate("a".repeat(200), 50);
  assertEquals(t.length, 50);
  assertTrue(t.endsWith(TRUNCATION_MARK));
  const emoji = "😀".repeat(100);
  const cut = truncate(emoji, 51);
  assertTrue(cut.length <= 51);
  assertTrue(!/[\uD800-\uDBFF]$/.test(cut.slice(0, -TRUNCATION_MARK.length)), "no lone high surrogate");
});
