/** Windows: the plugin's command shapes (cmd.exe runs Kimi's hooks there), an older install's, and a checkout refused. */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { runInstall } from "../../install/install.ts";
import { installSandbox, opts, snapshot } from "./helpers.ts";
import { classifyMcpEntry, hookEntries, isOurHookCommand, renderManifest } from "../../install/spec.ts";

Deno.test("windows plugin manifest: cmd-friendly hook paths, ./ MCP command with .exe", () => {
  const m = renderManifest("windows");
  assertEquals(m.hooks[0].command, ".\\bin\\openviking-kimi.exe hook session-start");
  assertEquals(m.mcpServers.openviking, { command: "./bin/openviking-kimi.exe", args: ["mcp"] });
});

Deno.test("a checkout install on Windows is refused, naming the release binary; nothing is written", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const before = await snapshot(t.home);
  assertEquals(await runInstall(t.ctx(undefined, { os: "windows" }), opts()), 1);
  assertStringIncludes(
    t.all(),
    "on Windows, install from the release binary (openviking-kimi-x86_64-pc-windows-msvc.exe or " +
      "openviking-kimi-aarch64-pc-windows-msvc.exe install): a source checkout installs on Linux and macOS only.",
  );
  assertEquals(await snapshot(t.home), before);
});

Deno.test("an earlier version's Windows registrations (.exe, .cmd, quoted) stay ours, so uninstall takes them out", () => {
  for (const prefix of ['"C:\\Users\\Ann Lee\\bin\\openviking-kimi.exe"', "C:\\x\\openviking-kimi.cmd"]) {
    assertEquals(hookEntries(prefix).every((h) => isOurHookCommand(h.command)), true, prefix);
  }
  assertEquals(classifyMcpEntry({ command: "C:\\x\\openviking-kimi.cmd", args: ["mcp"] }), "ours");
  assertEquals(classifyMcpEntry({ command: "C:\\x\\openviking-kimi.exe", args: ["mcp"] }), "ours");
});
