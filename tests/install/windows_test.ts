/** Windows command shapes (cmd.exe runs Kimi's hooks there), checked on any OS. */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { runInstall } from "../../install/install.ts";
import { installSandbox, opts, snapshot } from "./helpers.ts";
import {
  classifyMcpEntry,
  configCommandPrefix,
  configMcpEntry,
  hookEntries,
  installedBinaryPath,
  isOurHookCommand,
  renderManifest,
} from "../../install/spec.ts";
import { parseToml, renderBlock } from "../../install/toml-block.ts";

Deno.test("windows plugin manifest: cmd-friendly hook paths, ./ MCP command with .exe", () => {
  const m = renderManifest("windows");
  assertEquals(m.hooks[0].command, ".\\bin\\openviking-kimi.exe hook session-start");
  assertEquals(m.mcpServers.openviking, { command: "./bin/openviking-kimi.exe", args: ["mcp"] });
});

Deno.test("windows config mode: quoted absolute .exe, survives TOML round trip", () => {
  const env = { USERPROFILE: "C:\\Users\\Ann Lee" };
  // What install registers for a compiled binary (it copies itself there first).
  const program = installedBinaryPath(env, "windows");
  const prefix = configCommandPrefix(program, "windows");
  assertEquals(
    prefix,
    '"C:\\Users\\Ann Lee\\.openviking\\agent-integrations\\kimicode\\bin\\openviking-kimi.exe"',
  );
  const parsed = parseToml(renderBlock(hookEntries(prefix), "\r\n"));
  assertEquals(parsed.ok && (parsed.value.hooks as { command: string }[])[3].command, `${prefix} hook stop`);
  assertEquals(configMcpEntry(program, "windows").args, ["mcp"]);
  assertEquals(configCommandPrefix('C:/a"b c.exe', "windows"), '"C:\\a""b c.exe"');
  assertEquals(configCommandPrefix("C:/x/y.exe", "windows"), "C:\\x\\y.exe");
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

Deno.test("an earlier version's .cmd launcher stays ours, so uninstall takes it out", () => {
  const prefix = configCommandPrefix("C:/Users/Ann/.openviking/x/bin/openviking-kimi.cmd", "windows");
  assertEquals(hookEntries(prefix).every((h) => isOurHookCommand(h.command)), true);
  assertEquals(classifyMcpEntry(configMcpEntry("C:/x/openviking-kimi.cmd", "windows")), "ours");
});
