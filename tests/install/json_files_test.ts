import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { classifyMcpEntry } from "../../install/spec.ts";
import { planMcpInstall, planMcpUninstall } from "../../install/json-files.ts";
import { planRegistryInstall, planRegistryUninstall } from "../../install/json-files.ts";
import { maskSecrets, planOvcli } from "../../install/ovcli.ts";
import { unifiedDiff } from "../../install/transaction.ts";

const OURS = {
  command: "/home/u/.openviking/agent-integrations/kimicode/bin/openviking-kimi",
  args: ["mcp"],
};
const NOW = new Date("2026-11-30T12:00:00.000Z");

Deno.test("mcp.json: someone else's openviking server is refused (or replaced with --yes) and never removed", () => {
  const foreign = JSON.stringify({
    mcpServers: { openviking: { url: "http://ov:1933/mcp", headers: { A: "secret" } } },
  });
  const plan = planMcpInstall(foreign, OURS);
  assertEquals(plan.ok, false);
  if (!plan.ok) {
    assertMatch(plan.error, /--yes/);
    assertNotMatch(plan.error, /secret/);
  }
  assertTrue(planMcpInstall(foreign, OURS, { replaceOthers: true }).ok);
  const un = planMcpUninstall(foreign);
  assertTrue(un.ok && !un.changed && un.warnings.length === 1);
});

Deno.test("mcp.json: classification", () => {
  assertEquals(classifyMcpEntry(OURS), "ours");
  assertEquals(classifyMcpEntry({ command: "C:\\x\\openviking-kimi.exe", args: ["mcp"] }), "ours");
  assertEquals(
    classifyMcpEntry({ command: "/usr/bin/deno", args: ["run", "--allow-read", "/src/main.ts", "mcp"] }),
    "foreign",
  );
  assertEquals(classifyMcpEntry({ command: "node", args: ["/x/servers/mcp-proxy.mjs"] }), "upstream");
  assertEquals(
    classifyMcpEntry({ command: "node", args: ["x"], env: { OPENVIKING_INTEGRATION_ID: "k" } }),
    "upstream",
  );
  assertEquals(classifyMcpEntry({ url: "http://x/mcp" }), "foreign");
  assertEquals(classifyMcpEntry(undefined), "absent");
});

Deno.test("installed.json: upsert keeps other records, our enabled/installedAt/capabilities; uninstall removes only ours", () => {
  const before = JSON.stringify(
    {
      version: 1,
      plugins: [
        { id: "other", root: "/o", source: "github", enabled: true, extra: { k: 1 } },
        {
          id: "openviking-memory",
          root: "/old",
          source: "local-path",
          enabled: false,
          installedAt: "2020-01-01T00:00:00.000Z",
          capabilities: { mcpServers: { openviking: { enabled: false } } },
        },
      ],
    },
    null,
    2,
  );
  const plan = planRegistryInstall(before, { root: "/new", originalSource: "/src" }, NOW);
  assertTrue(plan.ok);
  if (!plan.ok) return;
  const doc = JSON.parse(plan.after!);
  assertEquals(doc.plugins[0], JSON.parse(before).plugins[0]);
  assertEquals(doc.plugins[1], {
    id: "openviking-memory",
    root: "/new",
    source: "local-path",
    enabled: false,
    installedAt: "2020-01-01T00:00:00.000Z",
    capabilities: { mcpServers: { openviking: { enabled: false } } },
    updatedAt: NOW.toISOString(),
    originalSource: "/src",
  });
  const removed = planRegistryUninstall(plan.after);
  assertTrue(removed.ok);
  if (removed.ok) assertEquals(JSON.parse(removed.after!).plugins, [JSON.parse(before).plugins[0]]);
});

Deno.test("installed.json: a registry we created goes away again; a corrupt one is refused", () => {
  const plan = planRegistryInstall(undefined, { root: "/r", originalSource: "/s" }, NOW);
  assertTrue(plan.ok);
  if (!plan.ok) return;
  const rec = JSON.parse(plan.after!).plugins[0];
  assertEquals([rec.enabled, rec.installedAt, rec.source], [true, NOW.toISOString(), "local-path"]);
  const removed = planRegistryUninstall(plan.after);
  assertTrue(removed.ok && removed.after === undefined);
  for (
    const bad of [
      "{",
      '{"version":2,"plugins":[]}',
      '{"version":1,"plugins":{}}',
      '{"version":1,"plugins":[{"x":1}]}',
    ]
  ) {
    const p = planRegistryInstall(bad, { root: "/r", originalSource: "/s" }, NOW);
    assertEquals(p.ok, false, bad);
    if (!p.ok) assertMatch(p.error, /nothing was changed/);
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
  const plan = planOvcli(
    before,
    { url: "https://new.example/", apiKey: "sk-123", account: "acct", user: "" },
    "/p",
  );
  assertTrue(plan.ok);
  if (!plan.ok) return;
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
  const unchanged = planOvcli(before, {}, "/p");
  assertTrue(unchanged.ok && !unchanged.changed);
  const removeKey = planOvcli(JSON.stringify({ api_key: "k" }), { apiKey: "" }, "/p");
  assertTrue(removeKey.ok && JSON.parse(removeKey.after!).api_key === undefined);
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
