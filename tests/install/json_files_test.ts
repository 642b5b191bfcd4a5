/**
 * Kimi's JSON files and ovcli.conf, edited in their text. mcp.json is not re-serialised: install inserts (or
 * replaces) our `mcpServers.openviking` member laid out like its siblings and uninstall removes it; every
 * other byte of the file stays (issue #11, finding 11; every layout: tests/fuzz/install_test.ts).
 */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { classifyMcpEntry } from "../../install/spec.ts";
import {
  planMcpInstall,
  planMcpUninstall,
  planRegistryInstall,
  planRegistryUninstall,
} from "../../install/json-files.ts";
import { maskSecrets, planOvcli } from "../../install/ovcli.ts";
import { unifiedDiff } from "../../install/transaction.ts";
import { deletionOf, insertionOf } from "./text_diff.ts";

const OURS = { command: "/opt/ov/bin/openviking-kimi", args: ["mcp"] };
const NOW = new Date("2026-11-30T12:00:00.000Z");

/** A plan that must succeed. */
function ok<P extends { ok: boolean }>(plan: P | { ok: false; error: string }): P & { ok: true } {
  if (!plan.ok) throw new Error((plan as { error: string }).error);
  return plan as P & { ok: true };
}
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

Deno.test("mcp.json: someone else's openviking server is refused (or replaced with --yes) and never removed", () => {
  const foreign = JSON.stringify({
    mcpServers: { openviking: { url: "http://ov:1933/mcp", headers: { A: "secret" } } },
  });
  const plan = planMcpInstall(foreign, OURS);
  assertTrue(!plan.ok && /--yes/.test(plan.error) && !/secret/.test(plan.error), JSON.stringify(plan));
  assertTrue(planMcpInstall(foreign, OURS, { replaceOthers: true }).ok);
  const un = uninstall(foreign);
  assertTrue(!un.changed && un.warnings.length === 1);
});

Deno.test("mcp.json: classification", () => {
  const cases: [unknown, string][] = [
    [
      { command: "/home/u/.openviking/agent-integrations/kimicode/bin/openviking-kimi", args: ["mcp"] },
      "ours",
    ],
    [{ command: "C:\\x\\openviking-kimi.exe", args: ["mcp"] }, "ours"],
    [{ command: "/usr/bin/deno", args: ["run", "--allow-read", "/src/main.ts", "mcp"] }, "ours"],
    [{ command: "node", args: ["/x/servers/mcp-proxy.mjs"] }, "upstream"],
    [{ command: "node", args: ["x"], env: { OPENVIKING_INTEGRATION_ID: "k" } }, "upstream"],
    [{ url: "http://x/mcp" }, "foreign"],
    [undefined, "absent"],
  ];
  for (const [entry, owner] of cases) assertEquals(classifyMcpEntry(entry), owner, JSON.stringify(entry));
});

Deno.test("installed.json: upsert keeps other records, our enabled/installedAt/capabilities; uninstall removes only ours", () => {
  const other = { id: "other", root: "/o", source: "github", enabled: true, extra: { k: 1 } };
  const ours = {
    id: "openviking-memory",
    root: "/old",
    source: "local-path",
    enabled: false,
    installedAt: "2020-01-01T00:00:00.000Z",
    capabilities: { mcpServers: { openviking: { enabled: false } } },
  };
  const before = JSON.stringify({ version: 1, plugins: [other, ours] }, null, 2);
  const plan = ok(planRegistryInstall(before, { root: "/new", originalSource: "/src" }, NOW));
  const doc = JSON.parse(plan.after!);
  assertEquals(doc.plugins, [other, {
    ...ours,
    root: "/new",
    updatedAt: NOW.toISOString(),
    originalSource: "/src",
  }]);
  assertEquals(JSON.parse(ok(planRegistryUninstall(plan.after)).after!).plugins, [other]);
});

Deno.test("installed.json: a registry we created goes away again; a corrupt one is refused", () => {
  const plan = ok(planRegistryInstall(undefined, { root: "/r", originalSource: "/s" }, NOW));
  const rec = JSON.parse(plan.after!).plugins[0];
  assertEquals([rec.enabled, rec.installedAt, rec.source], [true, NOW.toISOString(), "local-path"]);
  assertEquals(ok(planRegistryUninstall(plan.after)).after, undefined);
  for (
    const bad of [
      "{",
      '{"version":2,"plugins":[]}',
      '{"version":1,"plugins":{}}',
      '{"version":1,"plugins":[{"x":1}]}',
    ]
  ) {
    const p = planRegistryInstall(bad, { root: "/r", originalSource: "/s" }, NOW);
    assertTrue(!p.ok && /nothing was changed/.test(p.error), bad);
    assertEquals(planRegistryUninstall(bad).ok, false);
  }
});

Deno.test("ovcli.conf: merge keeps unknown fields, '' deletes, url validated, key never in the summary", () => {
  const before = JSON.stringify({
    url: "http://old:1933",
    account_id: "a0",
    plugin: { recallLimit: 3 },
    timeout: 60,
  });
  const args = { url: "https://new.example/", apiKey: "sk-123", account: "acct", user: "" };
  const plan = ok(planOvcli(before, args, "/p"));
  assertEquals(JSON.parse(plan.after!), {
    url: "https://new.example",
    plugin: { recallLimit: 3 },
    timeout: 60,
    api_key: "sk-123",
    account: "acct",
  });
  assertNotMatch(plan.summary.join(" "), /sk-123/);
  assertEquals(planOvcli(before, { url: "ftp://x" }, "/p").ok, false);
  assertEquals(planOvcli("[1]", { url: "http://x" }, "/p").ok, false);
  assertTrue(!ok(planOvcli(before, {}, "/p")).changed);
  const removeKey = ok(planOvcli(JSON.stringify({ api_key: "k" }), { apiKey: "" }, "/p"));
  assertEquals(JSON.parse(removeKey.after!).api_key, undefined);
});

Deno.test("maskSecrets hides api keys and tokens in diffs", () => {
  const masked = maskSecrets('{"api_key": "sk-1", "root_api_key":"r", "gateway_token": "t\\"x", "url": "u"}');
  assertNotMatch(masked, /sk-1|"r"|t\\"x/);
  assertMatch(masked, /"url": "u"/);
});

Deno.test("unifiedDiff shows removals before additions, and a missing final newline", () => {
  const d = unifiedDiff("f", "a\nb\nc", "a\nB\nc\nd\n");
  assertMatch(d, /^--- f \(now\)\n\+\+\+ f \(after\)\n@@ /);
  assertMatch(d, /\n-b\n-c\n.*\n\+B\n/, "the lines replaced, then the ones replacing them");
  assertMatch(d, /No newline at end of file/);
  assertEquals(unifiedDiff("f", "x", "x"), "");
  assertMatch(unifiedDiff("f", undefined, "x\n"), /^--- \/dev\/null/);
});
