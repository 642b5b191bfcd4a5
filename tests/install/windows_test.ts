/** Windows command shapes (cmd.exe runs Kimi's hooks there), checked on any OS. */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { renderManifest } from "../../install/kimi-home.ts";
import {
  cmdQuote,
  commandFor,
  configCommandPrefix,
  configMcpEntry,
  installedBinaryPath,
} from "../../install/placement.ts";
import { parseToml, renderBlock } from "../../install/toml-block.ts";
import { hookEntries, isOurHookCommand } from "../../install/spec.ts";
import { classifyMcpEntry } from "../../install/spec.ts";

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
  assertEquals(cmdQuote('a"b c'), '"a""b c"');
  assertMatch(commandFor(["C:\\x\\y.exe", "hook"], "windows"), /^C:\\x\\y\.exe hook$/);
});

Deno.test("windows config mode from a checkout: the copy's .cmd launcher is recognised as ours", () => {
  const launcher =
    "C:/Users/Ann Lee/.openviking/agent-integrations/kimicode/versions/0.1.0-0123456789ab/bin/openviking-kimi.cmd";
  const prefix = configCommandPrefix(launcher, "windows");
  assertEquals(
    prefix,
    '"C:\\Users\\Ann Lee\\.openviking\\agent-integrations\\kimicode\\versions\\0.1.0-0123456789ab\\bin\\openviking-kimi.cmd"',
  );
  assertEquals(hookEntries(prefix).every((h) => isOurHookCommand(h.command)), true);
  assertEquals(classifyMcpEntry(configMcpEntry(launcher, "windows")), "ours");
});
