/**
 * mcp.json is edited, not re-serialised: install inserts (or replaces) our `mcpServers.openviking` member laid
 * out like its siblings and uninstall removes it; every other byte of the file stays (issue #11, finding 11;
 * every layout's bytes kept: tests/fuzz/install_test.ts).
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { planMcpInstall, planMcpUninstall } from "../../install/json-files.ts";
import { deletionOf, insertionOf } from "./text_diff.ts";
import { ok } from "./helpers.ts";

const OURS = { command: "/opt/ov/bin/openviking-kimi", args: ["mcp"] };
const install = (text: string | undefined) => ok(planMcpInstall(text, OURS));
const uninstall = (text: string | undefined) => ok(planMcpUninstall(text));

Deno.test("mcp.json: the inserted member matches its siblings (indentation, line ending, compactness)", () => {
  // [before, what install inserts]; two of the tester's files (issue #11) first.
  const cases: [string, string][] = [
    [
      '{\r\n    "mcpServers": {\r\n        "other": {\r\n            "command": "x"\r\n        }\r\n    }\r\n}\r\n',
      ',\r\n        "openviking": {\r\n            "command": "/opt/ov/bin/openviking-kimi",\r\n' +
      '            "args": [\r\n                "mcp"\r\n            ]\r\n        }',
    ],
    [
      '{"mcpServers":{"other":{"command":"x","args":["a"]}},"z":[1,2]}',
      ',"openviking":{"command":"/opt/ov/bin/openviking-kimi","args":["mcp"]}',
    ],
    [
      '{"mcpServers": {"a": {"command": "x"}}}',
      ', "openviking": {"command": "/opt/ov/bin/openviking-kimi", "args": ["mcp"]}',
    ],
    // mcpServers is added to a file without it.
    [
      '{\n    "theme": "dark"\n}\n',
      ',\n    "mcpServers": {\n        "openviking": {\n            "command": "/opt/ov/bin/openviking-kimi",' +
      '\n            "args": [\n                "mcp"\n            ]\n        }\n    }',
    ],
  ];
  for (const [before, inserted] of cases) assertEquals(insertionOf(before, install(before).after!), inserted);
  // The empty mcpServers stays (a file without one and one with `{}` look the same after install).
  const themed = '{\n    "theme": "dark"\n}\n';
  assertEquals(uninstall(install(themed).after).after, '{\n    "theme": "dark",\n    "mcpServers": {}\n}\n');
});

Deno.test("mcp.json: a new file is standard 2-space JSON and goes away again; absent stays absent", () => {
  const created = install(undefined).after;
  assertEquals(created, `${JSON.stringify({ mcpServers: { openviking: OURS } }, null, 2)}\n`);
  const gone = uninstall(created);
  assertTrue(gone.changed && gone.after === undefined, "a file we created goes away again");
  assertTrue(!uninstall(undefined).changed, "absent stays absent");
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
    const after = install(before).after!;
    assertTrue(insertionOf(before, after) !== undefined, JSON.stringify(after));
    assertEquals(/\n/.test(before.trimEnd()), /\n/.test(after.trimEnd()), "compact stays compact");
    assertEquals(uninstall(after).after, before);
  }
  // The one layout that does not come back: an empty object spread over lines is written back as `{}`.
  const spread = '{\n  "mcpServers": {\n  },\n  "x": 1\n}\n';
  assertEquals(uninstall(install(spread).after).after, '{\n  "mcpServers": {},\n  "x": 1\n}\n');
});

Deno.test("mcp.json: our entry's value is replaced in place; an up-to-date one is not touched", () => {
  const before =
    '{"mcpServers": {"a": 1, "openviking": {"command": "/old/openviking-kimi", "args": ["mcp"]}, ' +
    '"b": 2}}';
  const plan = install(before);
  assertTrue(plan.changed);
  assertEquals(
    plan.after,
    '{"mcpServers": {"a": 1, "openviking": {"command": "/opt/ov/bin/openviking-kimi", "args": ["mcp"]}, ' +
      '"b": 2}}',
  );
  const again = install(plan.after);
  assertTrue(!again.changed && again.after === plan.after);
  const reordered = '{"mcpServers":{"openviking":{"args":["mcp"],"command":"/opt/ov/bin/openviking-kimi"}}}';
  assertTrue(!install(reordered).changed, "the same entry with its keys in another order is left alone");

  const un = uninstall(before).after!;
  assertEquals(un, '{"mcpServers": {"a": 1, "b": 2}}');
  assertTrue(deletionOf(before, un) !== undefined);
  const first = '{\n  "mcpServers": {\n    "openviking": {"command": "openviking-kimi", "args": ["mcp"]},\n' +
    '    "b": 2\n  }\n}\n';
  assertEquals(uninstall(first).after, '{\n  "mcpServers": {\n    "b": 2\n  }\n}\n');
});

Deno.test("mcp.json: keys are compared decoded; duplicate keys and non-JSON are refused", () => {
  const escaped =
    '{"mcp\\u0053ervers": {"open\\u0076iking": {"command": "openviking-kimi", "args": ["mcp"]}}}';
  const un = uninstall(escaped);
  assertTrue(un.changed);
  assertEquals(un.after, '{"mcp\\u0053ervers": {}}');
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
    assertTrue(!plan.ok && /mcp\.json/.test(plan.error), bad);
    assertEquals(planMcpUninstall(bad).ok, false, bad);
  }
});
