/** The `viking://` guard's finder and deny message, and the tools the plugin's texts name. */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../tests/support/assert.ts";
import { findVikingUri, guardMessage } from "./guard.ts";
import { PLUGIN_TEXTS } from "./system-prompt.ts";
import { offeredTools } from "./tools.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../tests/support/fake-mcp.ts";

Deno.test("viking:// finder: preferred keys first, then any nested string; case-insensitive; stops at quotes and brackets", () => {
  assertEquals(findVikingUri("read viking://user/x/a.md please"), "viking://user/x/a.md");
  assertEquals(
    findVikingUri({ note: "viking://other", path: "VIKING://user/p" }),
    "viking://user/p",
    "path wins",
  );
  assertEquals(findVikingUri({ a: { b: ["x", { c: "see viking://deep/one)" }] } }), "viking://deep/one");
  assertEquals(findVikingUri({ pattern: "'viking://q/*.md'" }), "viking://q/*.md");
  assertEquals(findVikingUri({ file_path: "<viking://t/x>" }), "viking://t/x");
  assertEquals(findVikingUri({ path: "/home/u/viking-notes.md", n: 5, f: null }), "");
  assertEquals(findVikingUri(["a", ["b", "viking://in/array"]]), "viking://in/array");
  assertEquals(findVikingUri("notviking://x"), "", "a word boundary before the scheme");
  let deep: unknown = "viking://too/deep";
  for (let i = 0; i < 8; i++) deep = { x: deep };
  assertEquals(findVikingUri(deep), "", "no deeper than 6 levels");
});

Deno.test("viking:// finder: spellings tests/fuzz/guard_test.ts does not generate; words that only look like one", () => {
  const named = [
    ["viking\uff1a\uff0f\uff0fuser/a.md", "viking://user/a.md"], // compatibility forms (NFKC)
    ["viking\\u003a\\u002f\\u002fuser/a.md", "viking://user/a.md"], // an escaped colon
    ["viking:/", "viking://"],
  ];
  for (const [input, uri] of named) assertEquals(findVikingUri({ file_path: input }), uri, input);
  // The URI is echoed in the deny reason: a control or format character ends it, escaped ones too (an
  // `\\u001b` once came out a real ESC, starting a terminal sequence where Kimi shows the reason).
  for (const tail of ["\\u001b]0;title\\u0007", "\x1b[2J", "\u009b31m", "\u202egnp.md", "%1b[31m"]) {
    assertEquals(findVikingUri({ file_path: `viking://user/a.md${tail}` }), "viking://user/a.md", tail);
  }
  const ordinary = ["openviking://x", "see the viking: a sea raider", "/srv/openviking%3Adata/a.md"];
  for (const path of ordinary) assertEquals(findVikingUri({ path }), "", path);
});

Deno.test("guard message: names the plugin's MCP tool for each file tool, with an example", () => {
  const uri = "viking://user/x";
  const P = "mcp__plugin-openviking-memory_openviking__";
  assertMatch(
    guardMessage("Glob", uri),
    new RegExp(`Use the OpenViking MCP tool ${P}glob instead\\.\nExample: ${P}glob\\(pattern=`),
  );
  assertStringIncludes(guardMessage("grep", uri), `${P}grep(uri="viking://user/x", pattern="<text>")`);
  assertStringIncludes(guardMessage("Read", uri), `${P}read(uris="viking://user/x")`);
  assertMatch(guardMessage("SomethingElse", uri), /__read\(/, "any other tool is pointed at read");
});

Deno.test("the plugin's texts and the guard name only tools the proxy offers by default; the skill and recall point to `memories`", () => {
  const texts = [
    ...PLUGIN_TEXTS.map(([, text]) => text),
    ...["Read", "Glob", "Grep"].map((t) => guardMessage(t, "viking://user/x")),
  ];
  const named = texts.flatMap((t) => [...t.matchAll(/mcp__plugin-openviking-memory_openviking__(\w+)/g)]).map(
    (m) => m[1],
  );
  assertTrue(named.length >= 10, "the texts name tools");
  const offered = offeredTools(OPENVIKING_TOOLS.map((name) => ({ name }))).map((t) => t.name);
  assertEquals(offered, OFFERED_TOOLS);
  for (const name of named) assertTrue(offered.includes(name), `${name} is not offered`);
  for (const [path, text] of PLUGIN_TEXTS) {
    if (/SKILL|recall/.test(path)) assertStringIncludes(text, "`openviking-kimi memories`", path);
  }
});
