/** The gates: enabled, bypass, bypass patterns whose globs hold any regex metacharacter as plain text. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { gateReason, globMatches } from "./gates.ts";

/** A glob as a predicate on its text. */
const glob = (pattern: string) => ({ test: (text: string) => globMatches(pattern, text) });

Deno.test("globs: ** is any text, * any text without /, anchored at both ends", () => {
  const re = glob("/home/*/scratch/**");
  assertTrue(re.test("/home/ann/scratch/a/b/c"));
  assertTrue(re.test("/home/ann/scratch/"));
  assertTrue(!re.test("/home/ann/bob/scratch/x"), "* does not cross a /");
  assertTrue(!re.test("x/home/ann/scratch/y"), "anchored at the start");
  assertTrue(glob("session_*").test("session_abc"));
  assertTrue(!glob("session_*").test("session_abc/x"));
  assertTrue(!glob("session").test("session_abc"), "anchored at the end");
  assertTrue(glob("**").test("anything/at/all"));
  assertTrue(glob("a***b").test("a/x/b"), "three stars are two");
  assertTrue(glob("*.*").test("a.b") && !glob("*.*").test("a/b"));
});

Deno.test("globs: a workspace's glob of many stars matches without backtracking (a regex took minutes)", () => {
  const cwd = "/home/u/src/github.com/someone/some-project/packages/web";
  assertTrue(!glob("*".repeat(20) + "x").test(cwd));
  assertTrue(!glob("**a".repeat(30) + "x").test("a".repeat(2000)));
  assertTrue(!glob("*a".repeat(30) + "x").test("a".repeat(2000)));
  assertTrue(glob("**a".repeat(30)).test("a".repeat(2000)));
});

Deno.test("globs: every regex metacharacter is matched as itself", () => {
  for (const literal of [".", "+", "?", "^", "$", "{", "}", "(", ")", "|", "[", "]", "\\"]) {
    const pattern = `a${literal}b`;
    const re = glob(pattern);
    assertTrue(re.test(pattern), `${pattern} matches itself`);
    assertTrue(!re.test("axb"), `${pattern}: ${literal} is not a pattern character`);
  }
  const path = "/work/c++ (draft) [v2]/{a|b}/$HOME^.x?";
  assertTrue(glob(path).test(path));
  assertTrue(glob("/work/c++ (draft) [v2]/**").test(`${path}/deeper`));
  assertTrue(!glob("/work/c++ (draft) [v2]/**").test("/work/ccc (draft) v/x"));
});

Deno.test("gates: disabled, then bypass, then the first pattern matching the session id or the cwd", () => {
  const on = { enabled: true, bypassSession: false, bypassSessionPatterns: [] as string[] };
  assertEquals(gateReason(on, "session_1", "/p"), "");
  assertEquals(gateReason({ ...on, enabled: false, bypassSession: true }, "s", "/p"), "disabled");
  assertEquals(gateReason({ ...on, bypassSession: true }, "s", "/p"), "bypass-session");
  const patterns = { ...on, bypassSessionPatterns: ["session_tmp*", "/tmp/**"] };
  assertEquals(gateReason(patterns, "session_tmp42", "/home/p"), "bypass-pattern session_tmp*");
  assertEquals(gateReason(patterns, "session_1", "/tmp/x/y"), "bypass-pattern /tmp/**");
  assertEquals(gateReason(patterns, "session_1", "/home/tmp/x"), "");
  assertEquals(gateReason({ ...on, bypassSessionPatterns: ["*"] }, "", ""), "", "empty ids match nothing");
});
