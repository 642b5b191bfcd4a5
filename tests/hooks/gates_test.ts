/**
 * The hooks' pure decisions, without processes: the gates (enabled, bypass, bypass patterns whose globs may
 * hold any regex metacharacter as plain text), the prompt hook's dedupe and reuse decision, and the
 * `viking://` guard's finder and deny message, and the tools the memory texts name.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { gateReason, globToRegExp } from "../../kimi/gates.ts";
import { findVikingUri, guardMessage } from "../../memory/guard.ts";
import { COMMANDS, commandText, memoryInstructions, skillText } from "../../memory/instructions.ts";
import { offeredTools } from "../../memory/tools.ts";
import { OFFERED_TOOLS, OPENVIKING_TOOLS } from "../support/fake-mcp.ts";
import { mcpToolPrefix } from "../../kimi/plugin-root.ts";
import { DUPLICATE_WINDOW_MS, promptDecision } from "../../memory/prompt.ts";
import { emptyState, type SessionState } from "../../memory/state.ts";

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

const state = (over: Partial<SessionState>): SessionState => ({ ...emptyState(), ...over });

Deno.test("prompt decision: with an event id, the same id is the duplicate, whatever the time or text", () => {
  const s = state({ promptEventId: "p1", promptHash: "h1", promptAt: 0 });
  assertEquals(promptDecision(s, { hash: "other", eventId: "p1", at: 1e9 }).duplicate, true);
  assertEquals(
    promptDecision(s, { hash: "h1", eventId: "p2", at: 1 }).duplicate,
    false,
    "a new id is a new prompt",
  );
});

Deno.test("prompt decision: without an event id, the same text within the window is the duplicate", () => {
  const s = state({ promptHash: "h", promptAt: 10_000 });
  const at = (t: number, hash = "h") => promptDecision(s, { hash, eventId: "", at: t }).duplicate;
  assertEquals(at(10_000), true);
  assertEquals(at(10_000 + DUPLICATE_WINDOW_MS - 1), true);
  assertEquals(at(10_000 - DUPLICATE_WINDOW_MS + 1), true, "a clock a little behind is the same run");
  assertEquals(at(10_000 + DUPLICATE_WINDOW_MS), false, "the window is open at its end");
  assertEquals(at(10_001, "other"), false, "other text is another prompt");
  assertEquals(
    promptDecision(state({ promptHash: "h" }), { hash: "h", eventId: "", at: 0 }).duplicate,
    false,
  );
});

Deno.test("prompt decision: the same prompt again reuses its stored recall (even an empty one); profile until injected; compaction noted", () => {
  const recall = {
    source: "context" as const,
    memories: [{ uri: "viking://user/d/memories/a.md", text: "x" }],
  };
  const stored = state({ promptHash: "h", promptAt: 0, recall });
  assertEquals(promptDecision(stored, { hash: "h", eventId: "", at: 60_000 }).reuse, recall);
  const none = { source: "none" as const, memories: [] };
  assertEquals(
    promptDecision(state({ promptHash: "h", recall: none }), { hash: "h", eventId: "", at: 1 }).reuse,
    none,
  );
  assertEquals(
    promptDecision(state({ promptHash: "h", recall: null }), { hash: "h", eventId: "", at: 1 }).reuse,
    undefined,
    "null: that prompt's recall never finished",
  );
  assertEquals(promptDecision(stored, { hash: "new", eventId: "", at: 1 }).reuse, undefined);
  assertEquals(promptDecision(state({}), { hash: "h", eventId: "", at: 1 }).needProfile, true);
  assertEquals(
    promptDecision(state({ profileInjected: true }), { hash: "h", eventId: "", at: 1 }).needProfile,
    false,
  );
  assertEquals(promptDecision(state({}), { hash: "h", eventId: "", at: 1 }).afterCompaction, false);
  assertEquals(
    promptDecision(state({ compacted: true }), { hash: "h", eventId: "", at: 1 }).afterCompaction,
    true,
  );
});

Deno.test("viking:// finder: preferred keys first, then any nested string; case-insensitive; stops at quotes and brackets", () => {
  assertEquals(findVikingUri("read viking://user/x/a.md please"), "viking://user/x/a.md");
  assertEquals(
    findVikingUri({ note: "viking://other", path: "VIKING://user/p" }),
    "viking://user/p",
    "path wins; the URI is told as viking://",
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

Deno.test("viking:// finder: every spelling that names a viking URI, never an ordinary path with the word", () => {
  const named = [
    ["viking:/user/default/memories/a.md", "viking://user/default/memories/a.md"],
    ["viking:///user/a.md", "viking://user/a.md"],
    ["viking:////user/a.md", "viking://user/a.md"],
    ["viking%3A%2F%2Fuser%2Fa.md", "viking://user/a.md"],
    ["viking%3a//user/a.md", "viking://user/a.md"],
    ["viking%253A%252F%252Fuser%252Fa.md", "viking://user/a.md"],
    ["%76iking%3A%2F%2Fuser/a.md", "viking://user/a.md"],
    ["viking:\\\\user\\a.md", "viking://user/a.md"],
    ["viking:\\user\\a.md", "viking://user/a.md"],
    ["viking:\\/\\/user/a.md", "viking://user/a.md"],
    ["ViKiNg://User/A.md", "viking://User/A.md"],
    ["/home/u/project/viking:/user/a.md", "viking://user/a.md"],
    ["C:\\proj\\viking:\\user\\a.md", "viking://user/a.md"],
    ['{"path": "viking:\\/\\/user\\/a.md"}', "viking://user/a.md"],
    ["viking\\u003a\\u002f\\u002fuser/a.md", "viking://user/a.md"],
    ["viking\uff1a\uff0f\uff0fuser/a.md", "viking://user/a.md"],
    ["viking:/", "viking://"],
  ];
  for (const [input, uri] of named) {
    assertEquals(findVikingUri({ file_path: input }), uri, input);
  }
  for (
    const path of [
      "/home/u/openviking/README.md",
      "/work/openviking-kimi/hooks/pre-tool-use.ts",
      "src/viking/notes.md",
      "viking.md",
      "openviking://x",
      "see the viking: a sea raider",
      "/srv/openviking%3Adata/a.md",
      "C:\\code\\openviking\\x.ts",
    ]
  ) {
    assertEquals(findVikingUri({ path }), "", path);
  }
});

Deno.test("guard message: names the MCP tool for each file tool, with an example, under the mode's prefix", () => {
  assertEquals(mcpToolPrefix(undefined), "mcp__openviking__");
  assertEquals(
    mcpToolPrefix("/k/plugins/managed/openviking-memory"),
    "mcp__plugin-openviking-memory_openviking__",
  );
  const uri = "viking://user/x";
  assertMatch(
    guardMessage("Glob", uri, "P_"),
    /Use the OpenViking MCP tool P_glob instead\.\nExample: P_glob\(pattern=/,
  );
  assertMatch(guardMessage("grep", uri, "P_"), /P_grep\(uri="viking:\/\/user\/x", pattern="<text>"\)/);
  assertMatch(guardMessage("Read", uri, "P_"), /P_read\(uris="viking:\/\/user\/x"\)/);
  assertMatch(guardMessage("SomethingElse", uri, "P_"), /P_read/, "any other tool is pointed at read");
});

Deno.test("the memory texts and the guard name only tools the proxy offers by default, in both modes", () => {
  for (
    const [mode, root] of [["config", undefined], ["plugin", "/k/plugins/managed/openviking-memory"]] as const
  ) {
    const prefix = mcpToolPrefix(root);
    const texts = [
      memoryInstructions(mode),
      skillText(mode),
      ...COMMANDS.map((c) => commandText(mode, c)),
      ...["Read", "Glob", "Grep"].map((t) => guardMessage(t, "viking://user/x", prefix)),
    ];
    const named = texts.flatMap((
      t,
    ) => [...t.matchAll(/mcp__[\w-]+?_openviking__(\w+)|mcp__openviking__(\w+)/g)])
      .map((m) => m[1] ?? m[2]);
    assertTrue(named.length >= 10, `${mode}: the texts name tools`);
    const offered = offeredTools(OPENVIKING_TOOLS.map((name) => ({ name })), []).map((t) => t.name);
    assertEquals(offered, OFFERED_TOOLS);
    for (const name of named) assertTrue(offered.includes(name), `${mode}: ${name} is not offered`);
  }
});
