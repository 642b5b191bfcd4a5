/**
 * mcp.json is edited, not re-serialised: install inserts (or replaces) our `mcpServers.openviking` member laid
 * out like its siblings and uninstall removes it; every other byte of the file stays (issue #11, finding 11).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { planMcpInstall, planMcpUninstall } from "../../install/json-files.ts";
import { deletionOf, insertionOf } from "./text_diff.ts";

const OURS = { command: "/opt/ov/bin/openviking-kimi", args: ["mcp"] };

/** Two of the tester's files (issue #11); every layout's bytes kept is tests/fuzz/install_test.ts's property. */
const TESTER_CASES = {
  compact: '{"mcpServers":{"other":{"command":"x","args":["a"]}},"z":[1,2]}',
  crlf:
    '{\r\n    "mcpServers": {\r\n        "other": {\r\n            "command": "x"\r\n        }\r\n    }\r\n}\r\n',
};

Deno.test("mcp.json: the inserted member matches its siblings (indentation, line ending, compactness)", () => {
  const pretty = planMcpInstall(TESTER_CASES.crlf, OURS);
  assertTrue(pretty.ok);
  if (pretty.ok) {
    assertEquals(
      insertionOf(TESTER_CASES.crlf, pretty.after!),
      ',\r\n        "openviking": {\r\n            "command": "/opt/ov/bin/openviking-kimi",\r\n' +
        '            "args": [\r\n                "mcp"\r\n            ]\r\n        }',
    );
  }
  const compact = planMcpInstall(TESTER_CASES.compact, OURS);
  assertTrue(compact.ok);
  if (compact.ok) {
    assertEquals(
      insertionOf(TESTER_CASES.compact, compact.after!),
      ',"openviking":{"command":"/opt/ov/bin/openviking-kimi","args":["mcp"]}',
    );
  }
  const spaced = '{"mcpServers": {"a": {"command": "x"}}}';
  const s = planMcpInstall(spaced, OURS);
  assertTrue(s.ok);
  if (s.ok) {
    assertEquals(
      s.after,
      '{"mcpServers": {"a": {"command": "x"}, "openviking": {"command": ' +
        '"/opt/ov/bin/openviking-kimi", "args": ["mcp"]}}}',
    );
  }
});

Deno.test("mcp.json: mcpServers is added to a file without it, and a new file is standard 2-space JSON", () => {
  const before = '{\n    "theme": "dark"\n}\n';
  const plan = planMcpInstall(before, OURS);
  assertTrue(plan.ok);
  if (!plan.ok) return;
  assertEquals(
    insertionOf(before, plan.after!),
    ',\n    "mcpServers": {\n        "openviking": {\n            "command": "/opt/ov/bin/openviking-kimi",' +
      '\n            "args": [\n                "mcp"\n            ]\n        }\n    }',
  );
  // The empty mcpServers stays (a file without one and one with `{}` look the same after install).
  const back = planMcpUninstall(plan.after);
  assertTrue(back.ok);
  if (back.ok) assertEquals(back.after, '{\n    "theme": "dark",\n    "mcpServers": {}\n}\n');

  const created = planMcpInstall(undefined, OURS);
  assertTrue(created.ok);
  if (created.ok) {
    assertEquals(created.after, `${JSON.stringify({ mcpServers: { openviking: OURS } }, null, 2)}\n`);
    const gone = planMcpUninstall(created.after);
    assertTrue(gone.ok && gone.changed && gone.after === undefined, "a file we created goes away again");
  }
  const none = planMcpUninstall(undefined);
  assertTrue(none.ok && !none.changed, "absent stays absent");
});

Deno.test("mcp.json: an empty mcpServers gets our member on its own lines, and goes back to {}", () => {
  for (
    const before of [
      '{\n  "mcpServers": {}\n}',
      '{\r\n\t"mcpServers": {},\r\n\t"x": 1\r\n}\r\n',
      '{"mcpServers":{}}',
      '{"mcpServers": { }}\n',
    ]
  ) {
    const plan = planMcpInstall(before, OURS);
    assertTrue(plan.ok, before);
    if (!plan.ok) continue;
    assertTrue(insertionOf(before, plan.after!) !== undefined, JSON.stringify(plan.after));
    assertEquals(/\n/.test(before.trimEnd()), /\n/.test(plan.after!.trimEnd()), "compact stays compact");
    const back = planMcpUninstall(plan.after);
    assertTrue(back.ok);
    if (back.ok) assertEquals(back.after, before);
  }
  // The one layout that does not come back: an empty object spread over lines is written back as `{}`.
  const spread = '{\n  "mcpServers": {\n  },\n  "x": 1\n}\n';
  const plan = planMcpInstall(spread, OURS);
  assertTrue(plan.ok);
  if (plan.ok) {
    const back = planMcpUninstall(plan.after);
    assertTrue(back.ok);
    if (back.ok) assertEquals(back.after, '{\n  "mcpServers": {},\n  "x": 1\n}\n');
  }
});

Deno.test("mcp.json: our entry's value is replaced in place; an up-to-date one is not touched", () => {
  const before =
    '{"mcpServers": {"a": 1, "openviking": {"command": "/old/openviking-kimi", "args": ["mcp"]}, ' +
    '"b": 2}}';
  const plan = planMcpInstall(before, OURS);
  assertTrue(plan.ok && plan.changed);
  if (!plan.ok) return;
  assertEquals(
    plan.after,
    '{"mcpServers": {"a": 1, "openviking": {"command": "/opt/ov/bin/openviking-kimi", "args": ["mcp"]}, ' +
      '"b": 2}}',
  );
  const again = planMcpInstall(plan.after, OURS);
  assertTrue(again.ok && !again.changed && again.after === plan.after);
  const reordered = '{"mcpServers":{"openviking":{"args":["mcp"],"command":"/opt/ov/bin/openviking-kimi"}}}';
  const same = planMcpInstall(reordered, OURS);
  assertTrue(same.ok && !same.changed, "the same entry with its keys in another order is left alone");

  const un = planMcpUninstall(before);
  assertTrue(un.ok);
  if (un.ok) {
    assertEquals(un.after, '{"mcpServers": {"a": 1, "b": 2}}');
    assertTrue(deletionOf(before, un.after!) !== undefined);
  }
  const first = planMcpUninstall(
    '{\n  "mcpServers": {\n    "openviking": {"command": "openviking-kimi", ' +
      '"args": ["mcp"]},\n    "b": 2\n  }\n}\n',
  );
  assertTrue(first.ok);
  if (first.ok) assertEquals(first.after, '{\n  "mcpServers": {\n    "b": 2\n  }\n}\n');
});

Deno.test("mcp.json: keys are compared decoded; duplicate keys and non-JSON are refused", () => {
  const escaped =
    '{"mcp\\u0053ervers": {"open\\u0076iking": {"command": "openviking-kimi", "args": ["mcp"]}}}';
  const un = planMcpUninstall(escaped);
  assertTrue(un.ok && un.changed);
  if (un.ok) assertEquals(un.after, '{"mcp\\u0053ervers": {}}');
  for (
    const bad of [
      '{"mcpServers": {}, "mcpServers": {}}',
      '{"mcpServers": {"openviking": {"url": "a"}, "openviking": {"command": "openviking-kimi", "args": ["mcp"]}}}',
      '{"mcpServers": {"a": 1,}}',
      "{'mcpServers': {}}",
      '{"mcpServers": {}} // comment',
      '{"mcpServers": {"a": "\t"}}',
      '[{"mcpServers": {}}]',
      '{"mcpServers": []}',
    ]
  ) {
    const plan = planMcpInstall(bad, OURS, { replaceOthers: true });
    assertEquals(plan.ok, false, bad);
    if (!plan.ok) assertMatch(plan.error, /mcp\.json/);
    assertEquals(planMcpUninstall(bad).ok, false, bad);
  }
});
