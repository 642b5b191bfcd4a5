/** The gates: enabled, bypass, bypass patterns whose globs hold any regex metacharacter as plain text. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { gateReason, globToRegExp } from "./gates.ts";

Deno.test("globs: ** is any text, * any text without /, anchored at both ends", () => {
  const re = globToRegExp("/home/*/scratch/**");
  assertTrue(re.test("/home/ann/scratch/a/b/c"));
  assertTrue(re.test("/home/ann/scratch/"));
  assertTrue(!re.test("/home/ann/bob/scratch/x"), "* does not cross a /");
  assertTrue(!re.test("x/home/ann/scratch/y"), "anchored at the start");
  assertTrue(globToRegExp("session_*").test("session_abc"));
  assertTrue(!globToRegExp("session_*").test("session_abc/x"));
  assertTrue(!globToRegExp("session").test("session_abc"), "anchored at the end");
  assertTrue(globToRegExp("**").test("anything/at/all"));
});

Deno.test("globs: every regex metacharacter is matched as itself", () => {
  for (const literal of [".", "+", "?", "^", "$", "{", "}", "(", ")", "|", "[", "]", "\\"]) {
    const glob = `a${literal}b`;
    const re = globToRegExp(glob);
    assertTrue(re.test(glob), `${glob} matches itself`);
    assertTrue(!re.test("axb"), `${glob}: ${literal} is not a pattern character`);
  }
  const path = "/work/c++ (draft) [v2]/{a|b}/$HOME^.x?";
  assertTrue(globToRegExp(path).test(path));
  assertTrue(globToRegExp("/work/c++ (draft) [v2]/**").test(`${path}/deeper`));
  assertTrue(!globToRegExp("/work/c++ (draft) [v2]/**").test("/work/ccc (draft) v/x"));
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
