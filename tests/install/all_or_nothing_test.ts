/**
 * install / uninstall apply all or nothing: every refusal (a config.toml that does not parse, a dangling
 * symlink, a directory where a file or its backup goes) happens before the first write and names the file and
 * the fix; a write that fails mid-way (a file name too long for the temporary sibling — it fails for root too)
 * rolls back the writes already made to their exact previous bytes and says so.
 */

import { assertEquals, assertMatch, assertNotMatch } from "../support/assert.ts";
import { canMountTmpfs, tempDir } from "../support/temp.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { fakeCompiled, installSandbox, snapshot } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { withOlderBlock, withOlderMcpEntry, writeConfigModeHome } from "./config_mode_home.ts";

const isWindows = Deno.build.os === "windows";

/** Raw Deno / OS error text that must never reach the user. */
const RAW_ERROR = /os error|realpath|readfile|\(os |Uncaught|at async|NotFound:|EISDIR|ENOENT/;

type Home = Awaited<ReturnType<typeof installSandbox>>;

const TESTER_MCP = '\ufeff{\r\n  "note": "caf\\u00e9",\r\n  "mcpServers": {\r\n    "a": {"command": "x", ' +
  '"startupTimeoutMs": 1.0, "env": {"BIG": 12345678901234567890}}\r\n  },\r\n  "z": 1e2\r\n}';
/** An mcp.json of the user's, for the entry an older install added to it. */
const TESTER_JSON = '{"note": "caf\\u00e9", "mcpServers": {"a": {"command": "x"}}, "z": 1e2}';
const USER_CONFIG = '# mine\r\ndefault_model = "k3" # ✓\r\n';

Deno.test("a refusal comes before anything is written, naming the file and the fix", async () => {
  const cases: { name: string; setup: (t: Home) => Promise<void>; says: RegExp }[] = [
    {
      name: "a dangling installed.json symlink (link and target named)",
      setup: async (t) => {
        await Deno.mkdir(`${t.kimi}/plugins`);
        await Deno.symlink(`${t.root}/dotfiles/installed.json`, `${t.kimi}/plugins/installed.json`);
      },
      says: /installed\.json is a symbolic link to .*dotfiles\/installed\.json, which does not exist/,
    },
    {
      name: "config.toml.bak is a directory (a config-mode home)",
      setup: async (t) => {
        await Deno.writeTextFile(`${t.kimi}/config.toml`, withOlderBlock(USER_CONFIG));
        await Deno.mkdir(`${t.kimi}/config.toml.bak/x`, { recursive: true });
      },
      says: /config\.toml\.bak is a directory.*move it/i,
    },
    {
      name: "a config.toml that does not parse",
      setup: (t) => Deno.writeTextFile(`${t.kimi}/config.toml`, "default_model = \n[x\n"),
      says: /config\.toml does not parse/,
    },
    {
      name: "config.toml is a directory",
      setup: (t) => Deno.mkdir(`${t.kimi}/config.toml`),
      says: /config\.toml cannot be read \(it is a directory/,
    },
    {
      name: "config.toml points into a regular file",
      setup: async (t) => {
        await Deno.writeTextFile(`${t.root}/dotfiles`, "not a directory");
        await Deno.symlink(`${t.root}/dotfiles/kimi.toml`, `${t.kimi}/config.toml`);
      },
      says: /config\.toml/,
    },
  ];
  for (const c of isWindows ? cases.slice(1, 4) : cases) {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
    await c.setup(t);
    const before = await snapshot(dir.path);
    const said = await t.run(runInstall, {}, {}, 1);
    assertEquals(
      await snapshot(dir.path),
      before,
      `${c.name}: nothing written (mcp.json, backups, ~/.openviking)`,
    );
    assertMatch(said, c.says, c.name);
    assertMatch(said, /nothing was changed/, c.name);
    assertNotMatch(said, RAW_ERROR, c.name);
  }
});

/** A dotfiles target whose name leaves no room for the temporary sibling a write makes (NAME_MAX is 255). */
async function tooLongTarget(root: string, content: string): Promise<string> {
  await Deno.mkdir(`${root}/dotfiles`, { recursive: true });
  const path = `${root}/dotfiles/${"k".repeat(245)}`;
  await Deno.writeTextFile(path, content);
  return path;
}

type Run = () => Promise<string>;

Deno.test({
  name: "a write failing mid-way puts back every step already taken (exact bytes, backups too) and says so",
  ignore: isWindows,
  async fn() {
    await using fake = await FakeOpenViking.start({ apiKey: "sk-rollback-test" });
    const cases: { name: string; setup: (t: Home) => Promise<Run>; says: RegExp }[] = [
      {
        name: "at mcp.json, after ovcli.conf and config.toml (and its older .bak)",
        setup: async (t) => {
          await Deno.writeTextFile(`${t.kimi}/config.toml`, withOlderBlock(USER_CONFIG), { mode: 0o644 });
          await Deno.writeTextFile(`${t.kimi}/config.toml.bak`, "an older backup\n");
          const mcp = await tooLongTarget(t.root, withOlderMcpEntry(TESTER_JSON));
          await Deno.symlink(mcp, `${t.kimi}/mcp.json`);
          // A server that takes the key: install then saves it, in the same run that fails.
          return () =>
            t.run(runInstall, { credentials: { url: fake.url, apiKey: "sk-rollback-test" } }, {}, 1);
        },
        says: /could not write .*kkkk.*Rolled back .*ovcli\.conf.*config\.toml/,
      },
      {
        name: "a release binary at the registry: the executable, config mode out, the plugin directory",
        setup: async (t) => {
          const self = await fakeCompiled(t.root);
          // An older executable already in place from an earlier install.
          const bin = `${t.home}/.openviking/agent-integrations/kimicode/bin/openviking-kimi`;
          await Deno.mkdir(`${t.home}/.openviking/agent-integrations/kimicode/bin`, { recursive: true });
          await Deno.writeTextFile(bin, "#!/bin/sh\necho old\n", { mode: 0o755 });
          await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
          await writeConfigModeHome(t.kimi);
          await Deno.mkdir(`${t.kimi}/plugins`);
          const registry = JSON.stringify({ version: 1, plugins: [] });
          await Deno.symlink(await tooLongTarget(t.root, registry), `${t.kimi}/plugins/installed.json`);
          return () => t.run(runInstall, {}, { self }, 1);
        },
        says: /Rolled back .*bin\/openviking-kimi.*config\.toml.*mcp\.json.*openviking-memory/,
      },
      {
        name: "uninstall at mcp.json: config.toml's block",
        setup: async (t) => {
          await Deno.writeTextFile(`${t.kimi}/config.toml`, withOlderBlock(USER_CONFIG));
          await Deno.symlink(
            await tooLongTarget(t.root, withOlderMcpEntry(TESTER_JSON)),
            `${t.kimi}/mcp.json`,
          );
          return () => t.run(runUninstall, {}, {}, 1);
        },
        says: /could not write .*kkkk.*Rolled back .*config\.toml/,
      },
    ];
    for (const c of cases) {
      await using dir = await tempDir();
      const t = await installSandbox(dir.path);
      const run = await c.setup(t);
      const before = await snapshot(dir.path);
      const said = await run();
      assertEquals(await snapshot(dir.path), before, `${c.name}: every file as it was`);
      assertMatch(said, /rolled back/i, c.name);
      assertMatch(said, c.says, c.name);
      assertNotMatch(said, RAW_ERROR, c.name);
    }
  },
});

Deno.test({
  name: "a full disk under the second file rolls back the first (needs a tmpfs mount: root + CAP_SYS_ADMIN)",
  ignore: !canMountTmpfs(),
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const disk = `${dir.path}/full`;
    await Deno.mkdir(disk);
    await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk] }).output();
    try {
      await Deno.writeTextFile(`${disk}/mcp.json`, withOlderMcpEntry(TESTER_JSON));
      const filler = await Deno.open(`${disk}/filler`, { write: true, create: true });
      try {
        while (true) await filler.write(new Uint8Array(4096));
      } catch {
        // full
      } finally {
        filler.close();
      }
      await Deno.symlink(`${disk}/mcp.json`, `${t.kimi}/mcp.json`);
      await Deno.writeTextFile(`${t.kimi}/config.toml`, withOlderBlock(USER_CONFIG));
      const before = await snapshot(t.home);
      const said = await t.run(runInstall, {}, {}, 1);
      assertEquals(await snapshot(t.home), before);
      assertEquals(await Deno.readTextFile(`${disk}/mcp.json`), withOlderMcpEntry(TESTER_JSON));
      assertMatch(said, /could not write .*mcp\.json.*the disk is full\. Rolled back .*config\.toml/);
    } finally {
      await new Deno.Command("umount", { args: [disk] }).output();
    }
  },
});
