/** Checks on what a hook prints: nothing unprintable, and no markup but our own blocks. */

import { assertEquals, assertNotMatch, assertTrue } from "./assert.ts";
import { PRINT_MAX_CHARS } from "../../lib/neutralize.ts";

/** What must never be printed: controls but \t \n, format characters but ZWNJ/ZWJ, lone surrogates. */
export const UNPRINTABLE = /(?![\t\n\u200c\u200d])[\p{Cc}\p{Cf}]|\p{Cs}/u;

/** A `<` that starts something tag-like (what the neutraliser escapes). */
export const TAG_LIKE =
  /<[\p{M}\u200c\u200d]*(?:[\p{L}_:|/\uff0f\u2044\u2215\u2571\u27cb\u29f8\u3033\u31d3\u2f03\u1735\u2cc6\u{1d23a}!?\uff01\uff1f]|$)/u;

/** Our markup, by name: the only tag-like tokens printed output may hold. */
const OUR_TAGS: [RegExp, string][] = [
  [/<openviking-context>/y, "<openviking-context>"],
  [/<openviking-context source="session-start">/y, "<openviking-context>"],
  [/<openviking-context source="after-compaction">/y, "<openviking-context>"],
  [/<\/openviking-context>/y, "</openviking-context>"],
  [/<user-profile uri="viking:\/\/user\/[\p{L}\p{N}_.@%-]+\/memories\/profile\.md">/uy, "<user-profile>"],
  [/<\/user-profile>/y, "</user-profile>"],
  [/<available-memories>/y, "<available-memories>"],
  [/<\/available-memories>/y, "</available-memories>"],
];

/** Asserts `out` (a prompt hook's stdout) is exactly our blocks. */
export function assertPrintedSafe(out: string): void {
  assertTrue(out.length <= PRINT_MAX_CHARS, `${out.length} > ${PRINT_MAX_CHARS}`);
  assertNotMatch(out, UNPRINTABLE);
  assertTrue(out.isWellFormed(), "well-formed UTF-16");
  if (out === "") return;
  const tags: string[] = [];
  for (const m of out.matchAll(new RegExp(TAG_LIKE.source, "gu"))) {
    const ours = OUR_TAGS.find(([re]) => {
      re.lastIndex = m.index;
      return re.test(out);
    });
    assertTrue(ours, `foreign markup at ${m.index}: ${JSON.stringify(out.slice(m.index, m.index + 60))}`);
    tags.push(ours[1]);
  }
  assertTrue(out.startsWith("<openviking-context"), "starts with our open marker");
  assertTrue(out.endsWith("\n</openviking-context>\n"), "ends with our close marker");
  const blocks = out.split("\n</openviking-context>\n\n<openviking-context").length;
  assertEquals(tags.filter((t) => t === "<openviking-context>").length, blocks);
  assertEquals(tags.filter((t) => t === "</openviking-context>").length, blocks);
  const open: string[] = [];
  for (const t of tags) {
    if (t.startsWith("</")) assertEquals(open.pop(), t.replace("/", ""), `${t} closes what it opened`);
    else {
      assertEquals(open.length, t === "<openviking-context>" ? 0 : 1, `${t} at the right depth`);
      open.push(t);
    }
  }
  assertEquals(open, []);
}
