/** End to end. */

import { join } from "node:path";
import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { writeConfigModeHome } from "../install/config_mode_home.ts";
import { KIMI_RELEASES } from "../support/kimi.ts";
import { messageText } from "../support/model-server.ts";
import {
  E2E_TEST,
  expectedDigest,
  expectFakeSession,
  hookResult,
  isHookResult,
  kimiOrSkip,
  type Msg,
  Rig,
} from "./harness.ts";

/** A user's config.toml: CRLF, comments, unicode, their own hook, no newline at the end. */
function userConfig(baseUrl: string, marker: string): string {
  return [
    "# My Kimi Code settings — written by hand; keep my comments ✓",
    'default_model = "fake"   # the scripted model',
    "",
    "[providers.fake]",
    'type = "openai"',
    `base_url = "${baseUrl}"`,
    'api_key = "x"',
    "",
    "# 模型设置 (unicode in a comment) 🚀",
    "[models.fake]",
    'provider = "fake"',
    'model = "fake-model"',
    "max_context_size = 100000",
    'capabilities = ["tool_use"]',
    "",
    "[[hooks]]",
    'event = "Stop"',
    `command = "cat > /dev/null; touch '${marker}'"  # my own hook stays`,
  ].join("\r\n");
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** Every release installs the plugin; the newest also upgrades a config-mode home an older version left. */
const upgradesOf = (i: number): boolean[] => i === KIMI_RELEASES.length - 1 ? [false, true] : [false];

for (const [i, version] of [...KIMI_RELEASES.entries()].reverse()) {
  for (const upgrade of upgradesOf(i)) {
    const what = upgrade
      ? "a config-mode home an older version left, upgraded to plugin mode"
      : "plugin mode";
    const name = `e2e kimi ${version} ${what}: uninstall restores config.toml byte for byte`;
    const install = await kimiOrSkip(version, name);
    Deno.test({ name, ignore: !install, ...E2E_TEST }, async () => {
      const base = await Deno.makeTempDir({ prefix: "ovk e2e ✓ " });
      const root = join(base, `it's "quoted" $HOME 中文`);
      await Deno.mkdir(root);
      await using _cleanup = { [Symbol.asyncDispose]: () => Deno.remove(base, { recursive: true }) };
      await using rig = await Rig.create(install!, {
        noInstall: true,
        root,
        workDirName: "my proj $(x) ✓",
      });
      const fake = rig.fake!;
      const marker = join(base, "user-hook-ran"); // no quote or backslash: it goes into a TOML string
      const original = new TextEncoder().encode(userConfig(rig.model.baseUrl, marker));
      await Deno.writeFile(rig.env.configPath, original);
      const mcpJson = join(rig.env.kimiHome, "mcp.json");
      const registry = join(rig.env.kimiHome, "plugins", "installed.json");

      const older = join(
        rig.env.home,
        ".openviking",
        "agent-integrations",
        "kimicode",
        "bin",
        "openviking-kimi",
      );
      if (upgrade) await writeConfigModeHome(rig.env.kimiHome, older);

      const installed = await rig.cli(["install", ...rig.credentialArgs]);
      assertEquals(installed.code, 0, installed.stdout + installed.stderr);
      if (upgrade) {
        assertStringIncludes(installed.stdout, "config-mode hooks removed (switching to plugin mode)");
      }
      assertEquals(
        await Deno.readFile(rig.env.configPath),
        original,
        "the plugin does not touch config.toml",
      );

      const prompt = "hello, does my memory work with my own config?";
      const r = await rig.print(prompt);
      const first = rig.mainRequests()[0].body.messages.filter(isHookResult).map(messageText);
      assertEquals(first, [hookResult(expectedDigest(prompt, true))], "each hook runs once");
      const turn: Msg[] = [["0", "user", prompt], ["0", "assistant", `ACK: ${prompt}`]];
      await expectFakeSession(fake, `kc-${r.sessionId}`, turn, 1);
      assertTrue(await exists(marker), "the user's own Stop hook ran too");
      const doctor = await rig.cli(["doctor"]);
      assertEquals(doctor.code, 0, doctor.stdout + doctor.stderr);
      const kimiDoctor = await rig.env.spawn(["doctor", "config"]).output();
      const said = new TextDecoder().decode(kimiDoctor.stdout) + new TextDecoder().decode(kimiDoctor.stderr);
      assertEquals(kimiDoctor.code, 0, said);
      assertTrue(!/ERROR|invalid/i.test(said.replace(/are valid/gi, "")), said);

      const removed = await rig.cli(["uninstall"]);
      assertEquals(removed.code, 0, removed.stdout + removed.stderr);
      assertEquals(
        await Deno.readFile(rig.env.configPath),
        original,
        "config.toml is the user's again, byte for byte",
      );
      assertEquals(await exists(mcpJson), false, "mcp.json did not exist before install");
      const skills = join(rig.env.kimiHome, "skills", upgrade ? "openviking-memory" : "");
      assertEquals(await exists(skills), false, "no memory skill in Kimi's user skills");
      const plugin = join(rig.env.kimiHome, "plugins", "managed", "openviking-memory");
      const systemPrompt = join(plugin, "system-prompt.md");
      assertEquals(await exists(systemPrompt), false, "the profile in the plugin's system prompt went");
      assertEquals(await exists(registry), false, "plugins/installed.json did not exist before install");

      const seen = fake.requests.length;
      const before = rig.model.chatRequests().length;
      await rig.print("hello again, without the plugin");
      const after = rig.model.chatRequests().slice(before);
      assertEquals(after[0].body.messages.filter(isHookResult).length, 0);
      assertEquals(after[0].toolNames.filter((n) => n.startsWith("mcp__")), []);
      assertEquals(fake.requests.slice(seen).map((q) => q.route), []);
    });
  }
}
