import { assertEquals } from "../tests/support/assert.ts";
import { charColumns, textColumns } from "./columns.ts";

Deno.test("columns: ASCII 1, CJK/Hangul/fullwidth/emoji 2, combining marks and joiners 0", () => {
  const chars = ["a", "漢", "한", "Ａ", "🙂", "🧠", "🫠", "\u0301", "\u200d"];
  assertEquals(chars.map(charColumns).join(""), "122222200");
  assertEquals(["ab漢字", "e\u0301", "👩\u200d💻"].map(textColumns), [6, 1, 4]);
});
