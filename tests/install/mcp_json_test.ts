/**
 * mcp.json is edited, not re-serialised: uninstall takes out the `mcpServers.openviking` member an older
 * config-mode install wrote, and every other byte of the file stays (every layout: tests/fuzz/install_test.ts).
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { planMcpUninstall } from "../../install/json-files.ts";
import { withOlderMcpEntry } from "./config_mode_home.ts";
import { ok } from "./helpers.ts";

const uninstall = (text: string | undefined) => ok(planMcpUninstall(text));

Deno.test("mcp.json: our member comes out with its comma, wherever it is; a file we created goes away", () => {
  const cases: [string, string][] = [
    [
      '{"mcpServers": {"a": 1, "openviking": {"command": "/old/openviking-kimi", "args": ["mcp"]}, "b": 2}}',
      '{"mcpServers": {"a": 1, "b": 2}}',
    ],
    [
      '{\n  "mcpServers": {\n    "openviking": {"command": "openviking-kimi", "args": ["mcp"]},\n    "b": 2\n  }\n}\n',
      '{\n  "mcpServers": {\n    "b": 2\n  }\n}\n',
    ],
    [
      '{\r\n\t"mcpServers": {\r\n\t\t"openviking": {"command": "openviking-kimi", "args": ["mcp"]}\r\n\t},\r\n\t"x": 1\r\n}\r\n',
      '{\r\n\t"mcpServers": {},\r\n\t"x": 1\r\n}\r\n',
    ],
    [
      '{"mcp\\u0053ervers": {"open\\u0076iking": {"command": "openviking-kimi", "args": ["mcp"]}}}',
      '{"mcp\\u0053ervers": {}}',
    ],
  ];
  for (const [before, after] of cases) assertEquals(uninstall(before).after, after, before);
  const gone = uninstall(withOlderMcpEntry(undefined));
  assertTrue(gone.changed && gone.after === undefined, "a file we created goes away again");
  assertTrue(!uninstall(undefined).changed, "absent stays absent");
});

Deno.test("mcp.json: someone else's openviking server stays, with a note; duplicate keys and non-JSON are refused", () => {
  const foreign = JSON.stringify({ mcpServers: { openviking: { url: "http://ov:1933/mcp" } } });
  const un = uninstall(foreign);
  assertTrue(!un.changed && un.warnings.length === 1);
  for (
    const bad of [
      '{"mcpServers": {}, "mcpServers": {"openviking": {"command": "openviking-kimi", "args": ["mcp"]}}}',
      '{"mcpServers": {"openviking": {"url": "a"}, "openviking": {"command": "openviking-kimi", "args": ["mcp"]}}}',
      '{"mcpServers": {"a": 1,}}',
      "{'mcpServers': {}}",
      '{"mcpServers": {}} // comment',
      '[{"mcpServers": {}}]',
      '{"mcpServers": []}',
    ]
  ) {
    const plan = planMcpUninstall(bad);
    assertTrue(!plan.ok && /mcp\.json/.test(plan.error), bad);
  }
});
