import { assertEquals } from "../tests/support/assert.ts";
import { charColumns, textColumns } from "./columns.ts";

Deno.test("columns: ASCII 1, CJK/Hangul/fullwidth/emoji 2, combining marks and joiners 0", () => {
  assertEquals(["a", "漢", "한", "Ａ", "🙂", "🧠", "🫠", "\u0301", "\u200d"].map(charColumns), [
    1,
    2,
    2,
    2,
    2,
    2,
    2,
    0,
    0,
  ]);
  assertEquals(textColumns("ab漢字"), 6);
  assertEquals(textColumns("e\u0301"), 1);
  assertEquals(textColumns("👩\u200d💻"), 4);
});
