/**
 * Issue #19 points 4 and 6, installing in-process from this checkout into temporary Kimi homes (the hooks and
 * `status` as processes; install's own process path: key_test.ts, path_command_test.ts): purging one home keeps everything another installed home uses (the
 * program copy, per-session state, the ledger, the log, the queue, the tool cache, the PATH command) and
 * names the version that home runs as in use, not as "the previous version"; purging the last one leaves
 * nothing of ours — no tool cache, no empty directory we made, no `.bak` still holding our block — and none
 * of the user's files changed; a dry run announces removing unused versions only when there is one.
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { cli, closedAddress, fakeCompiled, installSandbox, isolatedEnv, opts, tree } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import type { InstallOptions } from "../../install/transaction.ts";
import { BLOCK_BEGIN } from "../../install/spec.ts";
import { writeConfigModeHome } from "./config_mode_home.ts";
import { StatusSchema } from "../../cli/status.ts";
import { noteRecall } from "../../openviking/breaker.ts";
import { failure } from "../../openviking/client.ts";
import { mcpToolCachePath } from "../../lib/paths.ts";
import { enqueueMessages, range } from "../support/queue.ts";

const posix = Deno.build.os !== "windows";
const SESSION = "session_19040000-0000-4000-8000-000000000004";

/** A session's prompt through the real hook: the ledger line and the prompt state it leaves. */
async function prompt(env: Record<string, string>, cwd: string): Promise<void> {
  const r = await runCli(["hook", "user-prompt-submit"], {
    env,
    clearEnv: true,
    stdin: JSON.stringify({
      hook_event_name: "UserPromptSubmit",
      session_id: SESSION,
      cwd,
      prompt: "how do I indent the tile encoder?",
    }),
  });
  assertEquals(r.code, 0, r.stderr);
}

Deno.test({
  name: "uninstall --purge of one Kimi home keeps what the other installed home uses, and says it is in use",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const more = { OPENVIKING_URL: fake.url, PATH: `${dir.path}/home/.local/bin:/usr/bin:/bin` };
    const t = await installSandbox(dir.path, more);
    const [home, env] = [t.home, isolatedEnv(t.home, more)];
    const [a, b] = [`${home}/kimi-a`, `${home}/kimi-b`];
    await Deno.mkdir(a, { recursive: true });
    await Deno.mkdir(b, { recursive: true });
    await t.run(runInstall, { kimiHome: a });
    await t.run(runInstall, { kimiHome: b });
    await prompt(env, home);
    const ov = `${home}/.openviking`;
    await enqueueMessages(`${ov}/pending`, `kc-${SESSION}`, range(2)); // writes waiting: A's to send
    const before = await tree(ov, /^\/agent-integrations\/kimicode\/kimi-homes$/);
    // Uninstalled first without --purge: what --purge would remove, and what it keeps for A.
    const plain = await t.run(runUninstall, { kimiHome: b });
    assertMatch(
      plain,
      /^Files kept \(remove them with --purge\): the plugin directory \S+openviking-memory\.$/m,
    );
    assertMatch(plain, new RegExp(`^Kept for the Kimi home still installed \\(${a}\\): .*the command `, "m"));
    const purged = await t.run(runUninstall, { kimiHome: b, purge: true });

    // B is gone: its plugin directory and its registration.
    assertEquals(
      await Deno.lstat(`${b}/plugins/managed/openviking-memory`).then(() => true, () => false),
      false,
    );
    assertNotMatch(
      await Deno.readTextFile(`${b}/plugins/installed.json`).catch(() => ""),
      /openviking-memory/,
    );
    // What A uses stays: the program copy it runs, the state, the ledger, the log, the queue, the command.
    assertEquals(await tree(ov, /^\/agent-integrations\/kimicode\/kimi-homes$/), before, purged);
    const status = StatusSchema.parse(JSON.parse(await cli(env, ["status", "--json"])));
    assertEquals(status.sessions.map((s) => s.kimiSessionId), [SESSION], "A's session is still recorded");
    const launcher = `${a}/plugins/managed/openviking-memory/bin/openviking-kimi`;
    const version = await runProcess(launcher, ["version"], { env, clearEnv: true });
    assertEquals(version.code, 0, version.stderr);
    // The messages name the version A runs as in use by A, and what was kept for it.
    const id = /"id":"([^"]+)"/.exec(await Deno.readTextFile(launcher))![1];
    assertNotMatch(purged, /previous version/);
    assertMatch(
      purged,
      new RegExp(
        `Kept for the Kimi home still installed \\(${a}\\): \\S*${id} \\(the Kimi home ${a} runs it\\), `,
      ),
    );
    assertNotMatch(purged, /removed \S*(hook-state|ledger)/);
    assertNotMatch(
      purged,
      /install again|Kept: \d+ queued/i,
      "the queue stays for A: nothing to install again",
    );

    // Then A: nothing of ours is left but the writes still waiting, which the last purge names; nor a
    // directory install made (the Kimi homes were there before).
    const last = await t.run(runUninstall, { kimiHome: a, purge: true });
    assertMatch(
      last,
      /^Kept: 1 queued write\(s\) \(2 message\(s\), 0 commit\(s\) of 1 session\(s\)\) not yet delivered/m,
    );
    const queued = `/.openviking/pending/kimicode/kc-${SESSION}/`;
    const left = [
      "/.kimi-code/",
      "/.openviking/",
      "/.openviking/pending/",
      "/.openviking/pending/kimicode/",
      queued,
    ];
    assertEquals(await tree(home), [...left, `${queued}0000000001-m2.json`, "/kimi-a/", "/kimi-b/"]);
  },
});

Deno.test({
  name:
    "uninstall --purge leaves no tool cache, no breaker, no empty directory we made and no .bak holding our block",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const more = { OPENVIKING_URL: "http://127.0.0.1:9", PATH: "/usr/bin:/bin" };
    const t = await installSandbox(dir.path, more);
    const [home, kimi, env] = [t.home, t.kimi, isolatedEnv(t.home, more)];
    const config = '# mine\ndefault_model = "k3"\n';
    const mcp = `${JSON.stringify({ mcpServers: { mine: { command: "my-server" } } }, null, 2)}\n`;
    await Deno.writeTextFile(`${kimi}/config.toml`, config);
    await Deno.writeTextFile(`${kimi}/mcp.json`, mcp);
    // A config-mode home moved to the plugin: the move kept a .bak of config.toml as it was, our block in it.
    await writeConfigModeHome(kimi);
    // The older install recorded making Kimi's skills directory and ~/.openviking, as install records what it makes.
    const made = `${home}/.openviking/agent-integrations/kimicode/made-dirs`;
    await Deno.mkdir(made.slice(0, made.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(made, `${kimi}/skills\n${home}/.openviking\n`);
    await t.run(runInstall);
    assertTrue((await Deno.readTextFile(`${kimi}/config.toml.bak`)).includes(BLOCK_BEGIN));
    // The MCP server's last tool list, as `mcp` of an older version kept it.
    await Deno.mkdir(`${home}/.openviking/state`, { recursive: true });
    await Deno.writeTextFile(mcpToolCachePath(env), '{"mcpUrl":"http://127.0.0.1:9/mcp","tools":[]}\n');
    // A recall breaker, as a prompt against a server that never answered leaves it.
    const timeout = failure("unreachable", 0, { code: "TIMEOUT", message: "no answer" });
    await noteRecall(`${home}/.openviking/state`, env.OPENVIKING_URL, undefined, {
      asked: true,
      failure: timeout,
    });
    const purged = await t.run(runUninstall, { purge: true });
    // What happened, said: a backup left with nothing but what the file holds is deleted; nothing not there is "kept".
    for (const bak of [`${kimi}/config.toml.bak`, `${kimi}/mcp.json.bak`]) {
      const said = `✓ backup deleted (nothing in it but our part and what the file holds): ${bak}`;
      assertStringIncludes(purged, said);
      assertEquals(await Deno.lstat(bak).then(() => true, () => false), false, bak);
    }
    assertNotMatch(purged, /ovcli\.conf/, "there is no ovcli.conf to keep");
    assertNotMatch(purged, /queue files of OpenViking's other clients/, "there are none");

    assertEquals(await Deno.readTextFile(`${kimi}/config.toml`), config);
    assertEquals(await Deno.readTextFile(`${kimi}/mcp.json`), mcp);
    for (const bak of await tree(home)) {
      if (!bak.includes(".bak")) continue;
      const text = await Deno.readTextFile(`${home}${bak}`);
      assertNotMatch(
        text,
        new RegExp(`${BLOCK_BEGIN}|openviking-kimi|agent-integrations`),
        `${bak}:\n${text}`,
      );
    }
    const left = (await tree(home)).filter((p) => !/\.bak(\.\d+)?$/.test(p));
    assertEquals(left, [
      "/.kimi-code/",
      "/.kimi-code/config.toml",
      "/.kimi-code/mcp.json",
    ]);
  },
});

Deno.test("a dry run announces removing unused versions only when there is one", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const dry = async (run: typeof runInstall, partial: Partial<InstallOptions>) => {
    t.said();
    assertEquals(await run(t.ctx(), opts({ dryRun: true, ...partial })), 0, t.all());
    return t.said();
  };
  await t.run(runInstall);
  const sweep = /remove the versions .* that nothing uses/;
  assertNotMatch(await dry(runInstall, { credentials: { url: "http://127.0.0.1:8" } }), sweep);
  assertNotMatch(await dry(runInstall, {}), sweep);
  // An older version nothing registers: now there is one to remove.
  await Deno.mkdir(`${t.home}/.openviking/agent-integrations/kimicode/versions/0.0.1-0123456789ab`);
  assertMatch(await dry(runInstall, { credentials: { url: "http://127.0.0.1:8" } }), sweep);
  assertMatch(await dry(runUninstall, { purge: true }), sweep);
});

Deno.test({
  name:
    "uninstall --purge: its dry run names exactly the directories the run removes, never one the user had; a purged home leaves the record",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path, { OPENVIKING_URL: closedAddress() });
    const ctx = t.ctx(await fakeCompiled(dir.path));
    const [made, mine] = [`${t.home}/kimi2`, `${t.home}/kimi3`];
    await Deno.mkdir(`${mine}/plugins`, { recursive: true }); // the user's, before any install
    await t.run(runInstall, {}, ctx);
    for (const home of [made, mine]) {
      await t.run(runInstall, { kimiHome: home }, ctx);
    }
    const homes = `${t.ov}/agent-integrations/kimicode/kimi-homes`;
    for (const kimiHome of [made, mine, undefined]) {
      const before = await tree(t.home);
      const dry = await t.run(runUninstall, { kimiHome, purge: true, dryRun: true }, ctx);
      await t.run(runUninstall, { kimiHome, purge: true }, ctx);
      const after = await tree(t.home);
      const removed = before.filter((p) => !after.includes(p)).map((p) => `${t.home}${p.replace(/\/$/, "")}`);
      const topmost = removed.filter((p) => !removed.includes(p.slice(0, p.lastIndexOf("/"))));
      const named = dry.split("\n").filter((l) => l.startsWith("  - ")).join("\n");
      const names = (p: string) =>
        new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=[\\s,)]|$)`, "m").test(named);
      for (const p of topmost) assertTrue(names(p), `${p} removed, not in the dry run:\n${dry}`);
      const emptied = /^ {2}- delete the directories left empty \((.*)\)$/m.exec(dry)?.[1].split(", ") ?? [];
      for (const p of emptied) assertTrue(removed.includes(p), `${p} in the dry run, not removed:\n${dry}`);
      const listed = (await Deno.readTextFile(homes).catch(() => "")).split("\n");
      if (kimiHome) assertTrue(!listed.includes(kimiHome), `${kimiHome} purged, still in ${homes}`);
    }
    assertEquals(await tree(mine), ["/plugins/"], "the user's directory stays, empty");
  },
});

Deno.test({
  name:
    "the last purge names the program copy a home uninstalled without --purge still runs, and the command removing both",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const more = { OPENVIKING_URL: closedAddress(), PATH: "/usr/bin:/bin" };
    const t = await installSandbox(dir.path, more);
    const b = `${t.home}/kimi-b`;
    await Deno.mkdir(b, { recursive: true });
    await t.run(runInstall);
    await t.run(runInstall, { kimiHome: b });
    await t.run(runUninstall, { kimiHome: b }); // its plugin directory stays, running the copy
    const launcher = `${b}/plugins/managed/openviking-memory/bin/openviking-kimi`;
    const copy = (await Deno.readTextFile(launcher)).match(/^dir=(\S+)$/m)![1];
    const finish = `${copy}/bin/openviking-kimi uninstall --purge --kimi-home ${b}`;
    for (const dryRun of [true, false]) {
      const said = await t.run(runUninstall, { purge: true, dryRun });
      const kept = `which the plugin directory ${b} kept (uninstalled without --purge) still runs`;
      assertStringIncludes(said, `Kept: ${copy}, ${kept} (\`${finish}\` removes both)`);
      assertNotMatch(said, /left empty \(.*\/versions[,)]/, "the copy stays: so does its directory");
    }
    const [bin, ...args] = finish.split(" ");
    const r = await runProcess(bin, args, { env: isolatedEnv(t.home, more), clearEnv: true });
    assertEquals(r.code, 0, r.stderr);
    const gone = (p: string) => Deno.lstat(p).then(() => false, () => true);
    assertTrue(await gone(`${t.ov}/agent-integrations`) && await gone(launcher), r.stdout);
  },
});
