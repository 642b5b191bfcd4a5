/**
 * install / uninstall apply all or nothing, through the real entry point under the production flags (issue
 * #11, findings 11 and 12): mcp.json comes back byte for byte; every refusal (a dangling config.toml symlink,
 * a directory where a file or its backup goes) happens before the first write and names the file and the fix;
 * a write that fails mid-way (a file name too long for the temporary sibling — it fails for root too) rolls
 * back the writes already made to their exact previous bytes and says so.
 */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { runCli } from "../support/run.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { isolatedEnv } from "./helpers.ts";
import { insertionOf } from "./text_diff.ts";
import type { Context } from "../../install/transaction.ts";
import { runInstall } from "../../install/install.ts";
import type { Self } from "../../install/placement.ts";

const isWindows = Deno.build.os === "windows";

/** Raw Deno / OS error text that must never reach the user. */
const RAW_ERROR = /os error|realpath|readfile|\(os |Uncaught|at async|NotFound:|EISDIR|ENOENT/;

/** Bytes as one character each (in pieces: a program copy's bundle is too big for one spread). */
function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return text;
}

/** Every entry under `dir`: file bytes (hex-free, as latin1), directories, and symlink targets. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(d: string) {
    for await (const e of Deno.readDir(d)) {
      const p = `${d}/${e.name}`;
      const info = await Deno.lstat(p);
      if (info.isSymlink) out[p] = `-> ${await Deno.readLink(p)}`;
      else if (info.isDirectory) {
        out[p] = `<dir ${(info.mode ?? 0) & 0o777}>`;
        await walk(p);
      } else out[p] = `${(info.mode ?? 0) & 0o777} ${latin1(await Deno.readFile(p))}`;
    }
  }
  await walk(dir);
  return out;
}

interface Home {
  root: string;
  home: string;
  kimi: string;
  run: (...args: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;
}

async function home(root: string): Promise<Home> {
  const h = `${root}/home`;
  const kimi = `${h}/.kimi-code`;
  await Deno.mkdir(kimi, { recursive: true });
  return {
    root,
    home: h,
    kimi,
    run: (...args) => runCli([...args, "--kimi-home", kimi], { env: isolatedEnv(h), cwd: root }),
  };
}

const TESTER_MCP = '\ufeff{\r\n  "note": "caf\\u00e9",\r\n  "mcpServers": {\r\n    "a": {"command": "x", ' +
  '"startupTimeoutMs": 1.0, "env": {"BIG": 12345678901234567890}}\r\n  },\r\n  "z": 1e2\r\n}';
const USER_CONFIG = '# mine\r\ndefault_model = "k3" # ✓\r\n';

Deno.test("process: install + uninstall leave mcp.json byte for byte (BOM, CRLF, \\u00e9, 20 digits, 1.0)", async () => {
  await using dir = await tempDir();
  const t = await home(dir.path);
  await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
  const install = await t.run("install");
  assertEquals(install.code, 0, install.stderr);
  const after = await Deno.readTextFile(`${t.kimi}/mcp.json`);
  assertMatch(insertionOf(TESTER_MCP, after) ?? "", /^,\r\n {4}"openviking": \{\r\n/);
  const uninstall = await t.run("uninstall");
  assertEquals(uninstall.code, 0, uninstall.stderr);
  assertEquals(await Deno.readFile(`${t.kimi}/mcp.json`), new TextEncoder().encode(TESTER_MCP));
});

Deno.test({
  name:
    "process: a dangling config.toml symlink is refused before anything is written, naming link and target",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
    await Deno.symlink(`${dir.path}/dotfiles/kimi.toml`, `${t.kimi}/config.toml`);
    const before = await snapshot(dir.path);
    const r = await t.run("install");
    assertEquals(r.code, 1, r.stderr);
    assertEquals(await snapshot(dir.path), before, "nothing written (mcp.json, backups, ~/.openviking)");
    assertMatch(r.stderr, /config\.toml/);
    assertMatch(r.stderr, /dotfiles\/kimi\.toml/);
    assertMatch(r.stderr, /does not exist/);
    assertMatch(r.stderr, /nothing was changed/);
    assertNotMatch(r.stderr, RAW_ERROR);
  },
});

Deno.test({
  name:
    "process: a config.toml symlink to a real file is written through; the link stays; uninstall restores",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.mkdir(`${dir.path}/dotfiles`);
    await Deno.writeTextFile(`${dir.path}/dotfiles/kimi.toml`, USER_CONFIG);
    await Deno.symlink("../../dotfiles/kimi.toml", `${t.kimi}/config.toml`);
    const r = await t.run("install");
    assertEquals(r.code, 0, r.stderr);
    assertEquals(await Deno.readLink(`${t.kimi}/config.toml`), "../../dotfiles/kimi.toml");
    assertTrue((await Deno.readTextFile(`${dir.path}/dotfiles/kimi.toml`)).startsWith(USER_CONFIG + "# >>>"));
    assertEquals(await Deno.readTextFile(`${t.kimi}/config.toml.bak`), USER_CONFIG);
    const u = await t.run("uninstall");
    assertEquals(u.code, 0, u.stderr);
    assertEquals(await Deno.readLink(`${t.kimi}/config.toml`), "../../dotfiles/kimi.toml");
    assertEquals(await Deno.readTextFile(`${dir.path}/dotfiles/kimi.toml`), USER_CONFIG);
  },
});

Deno.test("process: the second file refused after the first was planned — nothing written, the file and fix named", async () => {
  const cases: { name: string; setup: (t: Home) => Promise<void>; says: RegExp }[] = [
    {
      name: "config.toml.bak is a directory",
      setup: async (t) => {
        await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
        await Deno.mkdir(`${t.kimi}/config.toml.bak/x`, { recursive: true });
      },
      says: /config\.toml\.bak is a directory.*move it/i,
    },
    {
      name: "config.toml is a directory",
      setup: async (t) => {
        await Deno.mkdir(`${t.kimi}/config.toml`);
      },
      says: /config\.toml cannot be read \(it is a directory/,
    },
    {
      name: "config.toml points into a regular file",
      setup: async (t) => {
        await Deno.writeTextFile(`${t.root}/dotfiles`, "not a directory");
        if (!isWindows) await Deno.symlink(`${t.root}/dotfiles/kimi.toml`, `${t.kimi}/config.toml`);
      },
      says: /config\.toml/,
    },
  ];
  for (const c of cases) {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
    await c.setup(t);
    const before = await snapshot(dir.path);
    const r = await t.run("install");
    assertEquals(r.code, 1, `${c.name}: ${r.stderr}`);
    assertEquals(await snapshot(dir.path), before, `${c.name}: nothing written`);
    assertMatch(r.stderr, c.says, c.name);
    assertMatch(r.stderr, /nothing was changed/, c.name);
    assertNotMatch(r.stderr, RAW_ERROR, c.name);
  }
});

/** A dotfiles target whose name leaves no room for the temporary sibling a write makes (NAME_MAX is 255). */
async function tooLongTarget(root: string, content: string): Promise<string> {
  await Deno.mkdir(`${root}/dotfiles`, { recursive: true });
  const path = `${root}/dotfiles/${"k".repeat(245)}`;
  await Deno.writeTextFile(path, content);
  return path;
}

Deno.test({
  name: "process: a write failing mid-way rolls back what was written (exact bytes, backups too) and says so",
  ignore: isWindows,
  async fn() {
    for (const mcp of [TESTER_MCP, undefined]) {
      await using dir = await tempDir();
      const t = await home(dir.path);
      if (mcp !== undefined) {
        await Deno.writeTextFile(`${t.kimi}/mcp.json`, mcp, { mode: 0o644 });
        await Deno.writeTextFile(`${t.kimi}/mcp.json.bak`, "an older backup\n");
      }
      await Deno.symlink(await tooLongTarget(dir.path, USER_CONFIG), `${t.kimi}/config.toml`);
      const before = await snapshot(dir.path);
      // A server that takes the key: install then saves it, in the same run that fails.
      await using fake = await FakeOpenViking.start({ apiKey: "sk-rollback-test" });
      const r = await t.run("install", "--url", fake.url, "--api-key", "sk-rollback-test");
      assertEquals(r.code, 1, r.stderr);
      assertEquals(await snapshot(dir.path), before, "every file as it was: mcp.json, its .bak, ovcli.conf");
      assertMatch(r.stderr, /could not write .*kkkk/);
      assertMatch(r.stderr, /rolled back/i);
      assertMatch(r.stderr, /mcp\.json/);
      assertNotMatch(r.stderr, /os error/);
    }
  },
});

Deno.test({
  name:
    "process: plugin mode failing at the registry puts back config.toml, mcp.json and the plugin directory",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
    await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
    const config = await t.run("install");
    assertEquals(config.code, 0, config.stderr);
    await Deno.mkdir(`${t.kimi}/plugins`);
    const registry = JSON.stringify({ version: 1, plugins: [] });
    await Deno.symlink(await tooLongTarget(dir.path, registry), `${t.kimi}/plugins/installed.json`);
    const before = await snapshot(dir.path);
    const r = await t.run("install", "--mode", "plugin");
    assertEquals(r.code, 1, r.stderr);
    assertEquals(await snapshot(dir.path), before, "config mode still in place, no plugin directory left");
    assertMatch(r.stderr, /rolled back/i);
  },
});

Deno.test({
  name: "process: uninstall failing at mcp.json puts config.toml's block back",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
    await Deno.symlink(await tooLongTarget(dir.path, TESTER_MCP), `${t.kimi}/mcp.json`);
    // Install cannot write mcp.json through that link either: it refuses with everything rolled back.
    const install = await t.run("install");
    assertEquals(install.code, 1, install.stderr);
    assertEquals(await Deno.readTextFile(`${t.kimi}/config.toml`), USER_CONFIG);
    // With the link pointing at a normal name install works; then uninstall meets the long name again.
    const short = `${dir.path}/dotfiles/mcp.json`;
    await Deno.writeTextFile(short, TESTER_MCP);
    await Deno.remove(`${t.kimi}/mcp.json`);
    await Deno.symlink(short, `${t.kimi}/mcp.json`);
    assertEquals((await t.run("install")).code, 0);
    const installed = await Deno.readTextFile(short);
    await Deno.remove(`${t.kimi}/mcp.json`);
    await Deno.symlink(await tooLongTarget(dir.path, installed), `${t.kimi}/mcp.json`);
    const before = await snapshot(dir.path);
    const r = await t.run("uninstall");
    assertEquals(r.code, 1, r.stderr);
    assertEquals(await snapshot(dir.path), before, "config.toml still has its block, every backup as it was");
    assertMatch(r.stderr, /could not write .*kkkk.*Rolled back .*config\.toml/);
  },
});

Deno.test({
  name:
    "switching to config mode from a compiled binary, failing at config.toml: binary, plugin and registry put back",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    await Deno.mkdir(`${dir.path}/dist`);
    const exe = `${dir.path}/dist/openviking-kimi`;
    await Deno.writeTextFile(exe, "#!/bin/sh\necho new\n", { mode: 0o755 });
    const self: Self = { kind: "compiled", execPath: exe };
    const lines: string[] = [];
    const ctx: Context = {
      env: { HOME: t.home, PATH: Deno.env.get("PATH") },
      self,
      os: "posix",
      out: { info: (l) => lines.push(l), error: (l) => lines.push(`ERR ${l}`) },
      now: new Date("2026-11-30T12:00:00.000Z"),
      cwd: dir.path,
    };
    const opts = { credentials: {}, dryRun: false, yes: false, purge: false };
    assertEquals(await runInstall(ctx, { ...opts, mode: "plugin" }), 0, lines.join("\n"));
    // An older executable already in place from an earlier config-mode install.
    const bin = `${t.home}/.openviking/agent-integrations/kimicode/bin/openviking-kimi`;
    await Deno.mkdir(`${t.home}/.openviking/agent-integrations/kimicode/bin`, { recursive: true });
    await Deno.writeTextFile(bin, "#!/bin/sh\necho old\n", { mode: 0o755 });
    await Deno.symlink(await tooLongTarget(dir.path, USER_CONFIG), `${t.kimi}/config.toml`);
    const before = await snapshot(dir.path);
    assertEquals(await runInstall(ctx, { ...opts, mode: "config" }), 1);
    assertEquals(
      await snapshot(dir.path),
      before,
      "old executable, plugin directory, registry and mcp.json as they were",
    );
    assertMatch(lines.join("\n"), /ERR .*Rolled back .*installed\.json.*openviking-memory/);
  },
});

/** Whether this process may mount a small tmpfs (root with CAP_SYS_ADMIN on Linux): a disk that can be filled. */
function canMountTmpfs(): boolean {
  if (Deno.build.os !== "linux") return false;
  const dir = Deno.makeTempDirSync({ prefix: "ovk-mount-" });
  try {
    const ok =
      new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir], stderr: "null" })
        .outputSync().success;
    if (ok) new Deno.Command("umount", { args: [dir] }).outputSync();
    return ok;
  } catch {
    return false;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test({
  name:
    "process: a full disk under the second file rolls back the first (needs a tmpfs mount: root + CAP_SYS_ADMIN)",
  ignore: !canMountTmpfs(),
  async fn() {
    await using dir = await tempDir();
    const t = await home(dir.path);
    const disk = `${dir.path}/full`;
    await Deno.mkdir(disk);
    await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk] }).output();
    try {
      await Deno.writeTextFile(`${disk}/kimi.toml`, USER_CONFIG);
      const filler = await Deno.open(`${disk}/filler`, { write: true, create: true });
      try {
        while (true) await filler.write(new Uint8Array(4096));
      } catch {
        // full
      } finally {
        filler.close();
      }
      await Deno.symlink(`${disk}/kimi.toml`, `${t.kimi}/config.toml`);
      await Deno.writeTextFile(`${t.kimi}/mcp.json`, TESTER_MCP);
      const before = await snapshot(t.home);
      const r = await t.run("install");
      assertEquals(r.code, 1, r.stderr);
      assertEquals(await snapshot(t.home), before);
      assertEquals(await Deno.readTextFile(`${disk}/kimi.toml`), USER_CONFIG);
      assertMatch(r.stderr, /could not write .*kimi\.toml.*the disk is full\. Rolled back .*mcp\.json/);
    } finally {
      await new Deno.Command("umount", { args: [disk] }).output();
    }
  },
});
