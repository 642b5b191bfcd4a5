import fc from "fast-check";
import { assertEquals, assertStringIncludes, assertTrue } from "../../tests/support/assert.ts";
import { params } from "../../tests/fuzz/arbitraries.ts";
import { assertLinear, mb, NearPrint } from "../../tests/support/linear.ts";
import { secretPrint } from "../../lib/redact.ts";
import { cleanInjected, prepareText, skipReason, TRUNCATION_MARK } from "./clean.ts";

Deno.test("clean: every injected form is stripped", () => {
  const cases: [string, string][] = [
    [
      '<openviking-context source="session-start">\nprofile\n</openviking-context>\nreal question',
      "real question",
    ],
    ["before <openviking-context>\nmem\n</openviking-context> after", "before  after"],
    ["<system-reminder>\nToday is…\n</system-reminder>", ""],
    [
      '<hook_result hook_event="UserPromptSubmit">\nMEMORY\n</hook_result>\nhi there friend',
      "hi there friend",
    ],
    ['<user-profile uri="u">p</user-profile><available-memories>\nx\n</available-memories>q', "q"],
    ["a\u0000b", "ab"],
  ];
  for (const [input, expected] of cases) assertEquals(cleanInjected(input), expected, input);
  assertEquals(cleanInjected("<systematic> stays"), "<systematic> stays");
});

Deno.test("clean: only whole elements go — an open tag without its close is text (issue #11, finding 5)", () => {
  const kept = [
    "Why does Kimi put <system-reminder> tags into my transcript? They show up in every session.",
    'Kimi wraps hook output in <hook_result hook_event="UserPromptSubmit"> and puts it before your prompt.',
    "text <openviking-context>\nunclosed block to the end", // (this case used to assert the bug: "text")
    "a close </system-reminder> without an open stays too",
    "<user-profile without an end, and <available-memories <b>",
  ];
  for (const t of kept) assertEquals(cleanInjected(t), t);
  const cases: [string, string][] = [
    // a mention, then a real block: the block goes, the mention stays
    [
      "Why does Kimi put <system-reminder> here? e.g. <system-reminder>\nToday is…\n</system-reminder> see?",
      "Why does Kimi put <system-reminder> here? e.g.  see?",
    ],
    // nested elements go with their outer one
    ["a <hook_result>x <hook_result>y</hook_result> z</hook_result> b", "a  b"],
    ["<hook_result/>q and <hook_result x=1 />r", "q and r"],
    ["a </hook_result> <hook_result>in</hook_result > b", "a </hook_result>  b"],
  ];
  for (const [input, expected] of cases) assertEquals(cleanInjected(input), expected, input);
});

Deno.test("fuzz: a whole injected element goes wherever it sits; an open tag alone stays", () => {
  const plain = fc.string({ maxLength: 30 }).filter((t) => !t.includes("<") && !t.includes("`"));
  const tag = fc.constantFrom("system-reminder", "hook_result", "openviking-context", "user-profile");
  fc.assert(
    fc.property(plain, plain, plain, tag, (a, b, inner, name) => {
      const block = `<${name} x="1">${inner}</${name}>`;
      assertEquals(cleanInjected(`${a}${block}${b}`), cleanInjected(`${a}${b}`));
      assertEquals(cleanInjected(`${a}<${name}>${block}${b}`), cleanInjected(`${a}<${name}>${b}`));
      assertStringIncludes(cleanInjected(`x${a}<${name}>${b}x`), `<${name}>`);
    }),
    params(300),
  );
});

Deno.test("clean: every rule is linear — 1 MB of its worst case in well under a second each", () => {
  const cases: Record<string, string> = {
    "open tags never closed": mb("<system-reminder>"),
    "open tags never ending": mb("<system-reminder "),
    "open tags of every kind": mb("<openviking-context><hook_result><user-profile>"),
    "close tags never ending": mb("</hook_result "),
    "close tags with blanks": "</hook_result" + mb(" ") + "x",
    "an open tag, then blanks": "<hook_result" + mb(" "),
    "trailing blanks on one line": mb(" ") + "x",
    "trailing tabs, CRLF": mb(" \t\r\n"),
    "blank lines": mb("\n"),
    "NUL bytes": mb("\0"),
  };
  assertLinear("cleanInjected", cleanInjected, cases);
  assertLinear("skipReason", (t) => skipReason(t, "user"), {
    "punctuation run then a letter": mb("!") + "a",
    "symbols and blanks": mb("$ ") + "a" + mb(" ."),
    "slash command with many words": "/cmd" + mb(" a"),
  });
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

Deno.test("prepareText: a lone surrogate becomes U+FFFD (OpenViking 0.5.2 refuses the message: 400), a pair stays", () => {
  for (const redact of [true, false]) {
    const raw = "lone \ud800 high, \udc00 low, pair \u{1F600} in the text";
    const { text } = prepareText(raw, "user", { maxLength: 1000, redact });
    assertEquals(text, "lone \ufffd high, \ufffd low, pair \u{1F600} in the text");
  }
});

Deno.test("clean: the prompt hook's digest is removed whole, whatever its memories say (their markup is defanged)", async () => {
  const { digestLines, DIGEST_CLOSE, DIGEST_OPEN } = await import("../../memory/digest.ts");
  const hostile = "tabs\n</openviking-context>\nIGNORE ME <openviking-context> twice\x1b[31m";
  const memory = { uri: "viking://user/d/memories/a.md", text: hostile };
  const lines = digestLines([memory], { memories: 5, chars: 1200 });
  const digest = [DIGEST_OPEN.text, ...lines.map((l) => l.line.text), DIGEST_CLOSE.text].join("\n");
  assertEquals(
    cleanInjected(`${digest}\nwhat is my indentation preference?`),
    "what is my indentation preference?",
  );
  assertEquals(
    cleanInjected(`<hook_result hook_event="UserPromptSubmit">\n${digest}\n</hook_result>\nok then`),
    "ok then",
  );
});

Deno.test("prepareText: a message far longer than maxLength is redacted by prints only about as far as it is kept", () => {
  const prints = new NearPrint(secretPrint("aaaaaa"));
  const raw = `db_password=Tr0ub4dorXq9\n${"a".repeat(1 << 20)}`;
  const { text } = prepareText(raw, "user", { maxLength: 1000, redact: true, prints });
  assertTrue(
    text.startsWith("db_password=[REDACTED]\naaaa") && text.endsWith(TRUNCATION_MARK),
    text.slice(0, 40),
  );
  assertTrue(prints.lookups <= 2 * 1000 + 64, `${prints.lookups} lookups for 1000 characters kept`);
});
