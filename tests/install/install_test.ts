import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import {
  acceptingFetch,
  fakeCompiled,
  installSandbox,
  isolatedEnv,
  opts,
  read,
  snapshot,
} from "./helpers.ts";
import { runCli } from "../support/run.ts";
import { CONFIG_MODE_GONE } from "../../cli/install.ts";
import type { Context } from "../../install/transaction.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { readKimiState } from "../../install/detect.ts";
import { registrations } from "../../cli/doctor.ts";
import { BLOCK_BEGIN, BLOCK_END } from "../../install/spec.ts";
import { writeConfigModeHome } from "./config_mode_home.ts";
import {
  enqueueCommit,
  enqueueMessages,
  keepRefused,
  queuedMessages,
  rejectedWrites,
} from "../support/queue.ts";

const isWindows = Deno.build.os === "windows";

const USER_CONFIG =
  '# my Kimi config\r\ndefault_model = "k3"\r\n\r\n[models.k3]\r\nprovider = "kimi" # ✓ unicode\r\n' +
  '[[hooks]]\r\nevent = "Stop"\r\ncommand = "notify-send done"';

// The modes of the user's files kept, of those created 0600: "install and uninstall keep the modes" below.
Deno.test("a config-mode home (an older install) moves to the plugin: block, mcp.json entry and skill out, the .bak kept; once", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
  const old = await writeConfigModeHome(t.kimi);
  await t.run(runInstall);
  assertEquals(await read(`${t.kimi}/config.toml`), USER_CONFIG);
  assertEquals(await read(`${t.kimi}/config.toml.bak`), old.config);
  assertEquals(await read(`${t.kimi}/mcp.json`), undefined, "the file the older install created is gone");
  assertEquals(await read(`${t.kimi}/skills/openviking-memory/SKILL.md`), undefined);
  assertTrue(await read(`${t.plugin}/skills/openviking-memory/SKILL.md`) !== undefined, "the plugin's own");
  assertStringIncludes(t.all(), "config-mode hooks removed (switching to plugin mode)");
  const state = await readKimiState(t.kimi);
  for (const where of registrations(state).values()) assertEquals(where, ["plugin openviking-memory"]);
  assertMatch(await t.run(runInstall), /^Nothing to change: /m);
  await t.run(runUninstall);
  assertEquals(await read(`${t.kimi}/config.toml`), USER_CONFIG);
});

Deno.test("our hooks outside the block (Kimi rewrote the file): the move is refused naming them, uninstall notes them", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await writeConfigModeHome(t.kimi);
  const stray = '[[hooks]]\nevent = "Stop"\ncommand = "/x/openviking-kimi hook stop"\n';
  await Deno.writeTextFile(`${t.kimi}/config.toml`, stray + await read(`${t.kimi}/config.toml`));
  const before = await snapshot(t.kimi);
  assertMatch(
    await t.run(runInstall, {}, {}, 1),
    /outside the marked block \(hooks\[0\]: \/x\/openviking-kimi/,
  );
  assertEquals(await snapshot(t.kimi), before);
  await t.run(runUninstall);
  assertEquals(await read(`${t.kimi}/config.toml`), stray);
  assertMatch(t.all(), /Note: config\.toml still has openviking-kimi \[\[hooks\]\] outside the marked block/);
});

Deno.test("a release binary into an empty Kimi home: copied for the PATH command and into the plugin; uninstall --purge leaves nothing of ours", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const self = await fakeCompiled(dir.path);
  await t.run(runInstall, {}, { self });
  const exe = await read((self as { execPath: string }).execPath);
  for (
    const bin of [
      `${t.ov}/agent-integrations/kimicode/bin/openviking-kimi`,
      `${t.plugin}/bin/openviking-kimi`,
    ]
  ) {
    assertEquals(await read(bin), exe, bin);
    if (!isWindows) assertTrue(((await Deno.stat(bin)).mode! & 0o111) !== 0);
  }
  await Deno.writeTextFile(`${t.kimi}/plugins/installed.json`, "{ not json");
  const before = await snapshot(t.kimi);
  await t.run(runInstall, {}, { self }, 1);
  assertEquals(await snapshot(t.kimi), before);
  assertMatch(t.all(), /ERR .*installed\.json is not a Kimi plugin registry/);
  await Deno.remove(`${t.kimi}/plugins/installed.json`);
  await t.run(runUninstall, { purge: true }, { self });
  const left = Object.keys(await snapshot(t.home)).filter((p) => !p.endsWith(".bak"));
  assertEquals(left, [`${t.home}/.kimi-code`], "what install made is gone; the Kimi home was there before");
});

Deno.test("uninstall --purge deletes the ledger and the default log, never a configured one; a queue still waiting and the writes OpenViking refused stay, and it says how to deliver them", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const self = await fakeCompiled(dir.path);
  const log = `${dir.path}/elsewhere/openviking.log`;
  const ctx = (): Context => ({ ...t.ctx(self), env: { ...t.ctx(self).env, OPENVIKING_DEBUG_LOG: log } });
  assertEquals(await runInstall(ctx(), opts()), 0, t.all());
  // What hook runs leave behind: a session's ledger (prompt snippets), its state, the log, a queued turn.
  const ledger = `${t.ov}/ledger/kimicode/session_1.jsonl`;
  const logLine = `${
    JSON.stringify({ ts: "2026-11-30T12:00:00.000Z", pid: 7, source: "hook", stage: "done" })
  }\n`;
  for (const f of [ledger, log, `${t.ov}/logs/kimicode-hooks.log`, `${t.ov}/hook-state/kimicode/s.json`]) {
    await Deno.mkdir(f.slice(0, f.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(f, logLine);
  }
  assertEquals(await enqueueMessages(`${t.ov}/pending`, "kc-s1", [{ role: "user", content: "a turn" }]), 1);
  assertEquals(await enqueueCommit(`${t.ov}/pending`, "kc-s1", "k1"), true);
  const refused = { role: "user" as const, content: "a refused turn" };
  await keepRefused(`${t.ov}/pending`, "kc-s1", [refused], { status: 400, message: "no" });
  t.lines.length = 0;
  assertEquals(await runUninstall(ctx(), opts({ purge: true })), 0, t.all());
  for (const gone of [`${t.ov}/ledger`, `${t.ov}/logs/kimicode-hooks.log`, `${t.ov}/hook-state/kimicode`]) {
    assertEquals(await Deno.lstat(gone).then(() => "there", () => "gone"), "gone", gone);
  }
  assertEquals(
    (await queuedMessages(`${t.ov}/pending`)).length,
    1,
    "a turn not yet delivered is never deleted",
  );
  // Each write counted as what it is: the commit is no message.
  assertMatch(
    t.all(),
    /Kept: 2 queued write\(s\) \(1 message\(s\), 1 commit\(s\) of 1 session\(s\)\) not yet delivered.*replay/,
  );
  assertEquals((await rejectedWrites(`${t.ov}/pending`)).map((k) => k.payload), [refused], "nor one refused");
  assertMatch(
    t.all(),
    /Kept: 1 write\(s\) OpenViking refused .*kimicode-rejected.*replay --rejected/,
  );

  // Once the queue and the rejected place are empty, a second purge removes their directories too.
  for (const d of ["kimicode", "kimicode-rejected"]) {
    await Deno.remove(`${t.ov}/pending/${d}`, { recursive: true });
    await Deno.mkdir(`${t.ov}/pending/${d}`);
  }
  t.lines.length = 0;
  assertEquals(await runUninstall(ctx(), opts({ purge: true })), 0, t.all());
  for (const d of ["kimicode", "kimicode-rejected"]) {
    assertEquals(await Deno.lstat(`${t.ov}/pending/${d}`).then(() => "there", () => "gone"), "gone", d);
  }

  // A log path the user configured is theirs: a purge leaves it.
  assertEquals(await Deno.readTextFile(log), logLine);
});

Deno.test("--dry-run says what would be done and prints the diff (API key masked; the block out; the manifest), changing nothing", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG);
  await writeConfigModeHome(t.kimi);
  const before = await snapshot(t.home);
  const code = await runInstall(
    { ...t.ctx(), fetch: acceptingFetch },
    opts({ dryRun: true, credentials: { url: "http://127.0.0.1:1", apiKey: "sk-very-secret" } }),
  );
  assertEquals(code, 0);
  assertEquals(await snapshot(t.home), before);
  const out = t.all();
  assertMatch(out, /^-\[\[hooks\]\]␍?$/m);
  assertMatch(out, /"api_key": "\*+"/);
  assertNotMatch(out, /sk-very-secret/);
  // What would be done, never what was: the settings' step and the memory skill's diff too.
  assertStringIncludes(out, "Dry run: nothing was changed. These changes would be made:");
  assertMatch(out, /create .*ovcli\.conf: set url to http:\/\/127\.0\.0\.1:1, set api_key \(not shown\)/);
  assertNotMatch(out, /saved|registered:|^ {2}✓/m, "nothing is said to have happened");
  assertMatch(out, /delete .*skills\/openviking-memory \(the memory skill\)/);
  assertMatch(out, /^\+\s+"command": "\.\/bin\/openviking-kimi hook stop",$/m);
});

Deno.test({
  name: "install and uninstall keep the modes of the user's files and directories; what they create is 0600",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const self = await fakeCompiled(dir.path);
    await Deno.writeTextFile(`${t.kimi}/config.toml`, USER_CONFIG, { mode: 0o644 });
    await Deno.writeTextFile(`${t.kimi}/mcp.json`, '{"x": 1}\n', { mode: 0o644 });
    await writeConfigModeHome(t.kimi);
    await Deno.mkdir(t.ov, { mode: 0o755 });
    await Deno.chmod(t.ov, 0o755);
    const mode = async (path: string) => ((await Deno.stat(path)).mode! & 0o777).toString(8);
    const modes = () => Promise.all([`${t.kimi}/config.toml`, `${t.kimi}/mcp.json`, t.ov].map(mode));
    assertEquals(await modes(), ["644", "644", "755"]);
    const install = opts({ credentials: { url: "http://127.0.0.1:1933" } });
    assertEquals(await runInstall(t.ctx(self), install), 0, t.all());
    assertEquals(await modes(), ["644", "644", "755"], "installed");
    assertEquals(await mode(`${t.ov}/ovcli.conf`), "600", "created: private");
    assertEquals(await mode(`${t.kimi}/config.toml.bak`), "600", "created: private");
    // Another OpenViking client's queued write: it stays, and so does ovcli.conf, and both are said.
    await Deno.mkdir(`${t.ov}/pending`);
    await Deno.writeTextFile(`${t.ov}/pending/${"a".repeat(64)}_0.json`, "{}");
    await t.run(runUninstall, { purge: true }, { self });
    assertEquals(await read(`${t.kimi}/config.toml`), USER_CONFIG);
    assertEquals(await modes(), ["644", "644", "755"], "uninstalled");
    assertStringIncludes(
      t.all(),
      `Kept: ${t.ov}/ovcli.conf and the queue files of OpenViking's other clients in ${t.ov}/pending.`,
    );
  },
});

async function installUpstreamPlugin(t: Awaited<ReturnType<typeof installSandbox>>, enabled = true) {
  const root = `${t.kimi}/plugins/managed/openviking-memory`;
  await Deno.mkdir(root, { recursive: true });
  await Deno.writeTextFile(
    `${root}/kimi.plugin.json`,
    JSON.stringify({
      name: "openviking-memory",
      hooks: [{
        event: "Stop",
        command: "node ./agent-integrations/kimicode/scripts/hook.mjs stop kimicode",
      }],
      mcpServers: {
        openviking: { command: "node", args: ["./agent-integrations/kimicode/servers/mcp-proxy.mjs"] },
      },
    }),
  );
  await Deno.writeTextFile(
    `${t.kimi}/plugins/installed.json`,
    JSON.stringify({
      version: 1,
      plugins: [{ id: "openviking-memory", root, source: "local-path", enabled }],
    }),
  );
  const block = ["[[hooks]]", 'event = "Stop"', 'command = "node /x/kimicode-hook.mjs stop"', "timeout = 30"];
  await Deno.writeTextFile(`${t.kimi}/config.toml`, [BLOCK_BEGIN, ...block, BLOCK_END, ""].join("\n"));
}

Deno.test("OpenViking's own plugin is detected (registered, or its [[hooks]] outside any block): refused with what to do, --yes or not", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await installUpstreamPlugin(t);
  const loose = '[[hooks]]\nevent = "Stop"\n' +
    "command = \"node '/home/u/.openviking/agent-integrations/kimicode/scripts/kimicode-hook.mjs' stop\"\n";
  const where = [
    /registered \(the "openviking-memory" plugin in .*, its block in \S+config\.toml/,
    /its \[\[hooks\]\] in/,
  ];
  for (const found of where) {
    const before = await snapshot(t.kimi);
    // --yes does not take its place either: two memory integrations would capture every turn twice.
    for (
      const yes of [false, true]
    ) {
      assertMatch(
        await t.run(runInstall, { yes }, {}, 1),
        /ERR .*OpenViking's own Kimi Code plugin is registered .*\/plugins remove openviking-memory/,
      );
      assertEquals(await snapshot(t.kimi), before);
    }
    assertMatch(t.all(), found);
    // Then OpenViking's own [[hooks]] alone, outside any block (Kimi rewrote the file, say).
    await Deno.remove(`${t.kimi}/plugins`, { recursive: true }).catch(() => {});
    await Deno.writeTextFile(`${t.kimi}/config.toml`, loose);
  }
});

Deno.test("OpenViking's own plugin disabled (as an earlier --yes left it) captures nothing: not refused", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await installUpstreamPlugin(t, false);
  await Deno.remove(`${t.kimi}/config.toml`);
  await t.run(runInstall);
});

Deno.test("uninstall leaves what is not ours and says so", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const mcp = JSON.stringify({ mcpServers: { openviking: { url: "http://x/mcp" } } });
  await Deno.writeTextFile(`${t.kimi}/mcp.json`, mcp);
  await t.run(runUninstall);
  assertEquals(await read(`${t.kimi}/mcp.json`), mcp);
  assertMatch(t.all(), /^Nothing to change: nothing of openviking-kimi is registered/m);
  await t.run(runInstall);
  assertEquals(await read(`${t.kimi}/mcp.json`), mcp, "nor does install touch it");
});

Deno.test({
  name: "a symlinked config.toml (dotfiles) stays a symlink; the file it points at is edited",
  ignore: isWindows,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    await Deno.mkdir(`${dir.path}/dotfiles`);
    await Deno.writeTextFile(`${dir.path}/dotfiles/kimi.toml`, USER_CONFIG);
    await Deno.symlink(`${dir.path}/dotfiles/kimi.toml`, `${t.kimi}/config.toml`);
    await writeConfigModeHome(t.kimi);
    assertStringIncludes((await read(`${dir.path}/dotfiles/kimi.toml`))!, "[[hooks]]");
    await t.run(runInstall);
    assertTrue((await Deno.lstat(`${t.kimi}/config.toml`)).isSymlink);
    assertEquals(await read(`${dir.path}/dotfiles/kimi.toml`), USER_CONFIG);
  },
});

Deno.test("a record naming our plugin elsewhere (a checkout registered by hand): that directory is never touched", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await t.run(runInstall);
  const managed = `${t.kimi}/plugins/managed/openviking-memory`;
  const checkout = `${dir.path}/checkout`;
  await Deno.mkdir(checkout);
  for (const name of ["kimi.plugin.json", "system-prompt.md"]) {
    await Deno.copyFile(`${managed}/${name}`, `${checkout}/${name}`);
  }
  const registryPath = `${t.kimi}/plugins/installed.json`;
  const registry = JSON.parse((await read(registryPath))!);
  registry.plugins[0].root = checkout;
  await Deno.writeTextFile(registryPath, JSON.stringify(registry));
  const listing = async () => (await Array.fromAsync(Deno.readDir(checkout))).map((e) => e.name).sort();

  await t.run(runInstall);
  assertEquals(await listing(), ["kimi.plugin.json", "system-prompt.md"], "install again keeps it");
  await t.run(runUninstall, { purge: true });
  assertEquals(await listing(), ["kimi.plugin.json", "system-prompt.md"], "uninstall --purge keeps it");
});

Deno.test("a key for a new address says whose key it replaces, and the replaced ovcli.conf is kept as its .bak", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  await Deno.mkdir(t.ov, { recursive: true });
  const old = `${JSON.stringify({ url: "http://127.0.0.1:42689", api_key: "sk-old" })}\n`;
  await Deno.writeTextFile(`${t.ov}/ovcli.conf`, old);
  const credentials = { url: "http://localhost:42689", apiKey: "sk-new", apiKeyFrom: "stdin" };
  const ctx = { ...t.ctx(await fakeCompiled(dir.path)), fetch: acceptingFetch };
  assertEquals(await runInstall(ctx, opts({ credentials, dryRun: true })), 0, t.all());
  assertMatch(
    t.said(),
    /set api_key \(not shown; from stdin; it replaces the key saved for http:\/\/127\.0\.0\.1:42689\).*\(the previous file kept as \S+ovcli\.conf\.bak\)/,
  );
  assertEquals(await runInstall(ctx, opts({ credentials })), 0, t.all());
  assertStringIncludes(
    t.said(),
    `connection settings saved to ${t.ov}/ovcli.conf (the previous file kept as ${t.ov}/ovcli.conf.bak): ` +
      "url = http://localhost:42689, api_key = (not shown; from stdin; it replaces the key saved for " +
      "http://127.0.0.1:42689)",
  );
  assertEquals(await read(`${t.ov}/ovcli.conf.bak`), old, "the replaced key is recoverable");
  if (!isWindows) assertEquals((await Deno.stat(`${t.ov}/ovcli.conf.bak`)).mode! & 0o777, 0o600);
  assertEquals(JSON.parse((await read(`${t.ov}/ovcli.conf`))!).api_key, "sk-new");
});

Deno.test("install --mode config is refused: exit 2, one line, nothing changed", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const before = await snapshot(t.home);
  const refused = await runCli(["install", "--mode", "config"], {
    env: isolatedEnv(t.home),
    clearEnv: true,
    cwd: t.home,
  });
  assertEquals([refused.code, refused.stdout, refused.stderr], [2, "", `${CONFIG_MODE_GONE}\n`]);
  assertEquals(await snapshot(t.home), before);
});
