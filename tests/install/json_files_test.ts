import fc from "fast-check";
import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { classifyMcpEntry } from "../../install/spec.ts";
import { planRegistryInstall, planRegistryUninstall } from "../../install/json-files.ts";
import { maskSecrets, planOvcli } from "../../install/ovcli.ts";
import { unifiedDiff } from "../../install/transaction.ts";
import { ok } from "./helpers.ts";

const NOW = new Date("2026-11-30T12:00:00.000Z");

Deno.test("mcp.json: classification", () => {
  const cases: [unknown, string][] = [
    [
      { command: "/home/u/.openviking/agent-integrations/kimicode/bin/openviking-kimi", args: ["mcp"] },
      "ours",
    ],
    [{ command: "C:\\x\\openviking-kimi.exe", args: ["mcp"] }, "ours"],
    [{ command: "/usr/bin/deno", args: ["run", "--allow-read", "/src/main.ts", "mcp"] }, "foreign"],
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
  assertEquals(planOvcli(before, { url: "not an address" }, "/p").ok, false);
  assertEquals(planOvcli("[1]", { url: "http://x" }, "/p").ok, false);
  assertTrue(!ok(planOvcli(before, {}, "/p")).changed);
  const removeKey = ok(planOvcli(JSON.stringify({ api_key: "k" }), { apiKey: "" }, "/p"));
  assertEquals(JSON.parse(removeKey.after!).api_key, undefined);
  // "" where nothing is saved deletes nothing, and says nothing of it.
  const nothing = ok(planOvcli(undefined, { url: "http://elsewhere:1933", apiKey: "", account: "" }, "/p"));
  assertEquals([JSON.parse(nothing.after!), nothing.summary], [{ url: "http://elsewhere:1933" }, [
    "url = http://elsewhere:1933",
  ]]);
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

Deno.test("property: installed.json as Kimi writes it — our record in Kimi's layout, uninstall gives the bytes back", () => {
  const record = fc.record({ id: fc.string(), root: fc.string(), x: fc.jsonValue({ maxDepth: 2 }) }, {
    requiredKeys: ["id"],
  });
  fc.assert(
    fc.property(fc.array(record, { maxLength: 4 }), (plugins) => {
      fc.pre(!plugins.some((p) => p.id.toLowerCase() === "openviking-memory"));
      const kimi = JSON.stringify({ version: 1, plugins }, null, 2);
      const installed = ok(planRegistryInstall(kimi, { root: "/r", originalSource: "/s" }, NOW)).after!;
      assertEquals(installed, JSON.stringify(JSON.parse(installed), null, 2));
      const again = ok(planRegistryInstall(installed, { root: "/r2", originalSource: "/s" }, NOW)).after!;
      assertEquals(again, JSON.stringify(JSON.parse(again), null, 2));
      assertEquals(ok(planRegistryUninstall(again)).after, kimi);
    }),
  );
});
