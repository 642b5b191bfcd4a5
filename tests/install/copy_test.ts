/**
 * The program copy an install from a checkout places (install/program.ts, issue #15 point 1): bundled, with
 * its npm dependencies inside, versioned by content under ~/.openviking/agent-integrations/kimicode/versions;
 * never changed once placed (a new Deno only rewrites its launcher); a previous version kept while a
 * process of it runs or another Kimi home registers it, and removed once nothing uses it.
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import type { Context, InstallOptions } from "../../install/transaction.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { versionsDir } from "../../install/program.ts";
import { cloneCheckout, exists, installSandbox } from "./helpers.ts";
import { launcherInfo } from "../../install/program.ts";
import { COPY_FILES, COPY_RUN_FLAGS, productionFlags } from "../../lib/self.ts";
import { VERSION } from "../../lib/version.ts";
import { ROOT } from "../support/run.ts";

const posix = Deno.build.os !== "windows";

type Home = Awaited<ReturnType<typeof setup>>;

async function setup(root: string) {
  const t = await installSandbox(root, { OPENVIKING_URL: "http://127.0.0.1:9" });
  return {
    ...t,
    versions: versionsDir(t.ctx().env),
    /** install in-process, now (exit 0 expected): what it printed. */
    install: (partial: Partial<InstallOptions> = {}, extra: Partial<Context> = {}) =>
      t.run(runInstall, partial, { now: new Date(), ...extra }),
  };
}

/** The one version directory there is. */
function onlyVersion(t: Home): string {
  const names = [...Deno.readDirSync(t.versions)].map((e) => e.name);
  assertEquals(names.length, 1, names.join(", "));
  return `${t.versions}/${names[0]}`;
}

/** Copies a directory tree (what an older install left). */
async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    else await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

Deno.test({
  name:
    "install from a checkout places a versioned, self-contained copy; the same copy again changes nothing",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await setup(dir.path);
    const out = await t.install();
    const copy = onlyVersion(t);
    assertMatch(copy, new RegExp(`/versions/${VERSION.replace(/\./g, "\\.")}-[0-9a-f]{12}$`));
    assertStringIncludes(out, `program copy in place: ${copy}`);
    for (
      const f of [COPY_FILES.main, COPY_FILES.hook, COPY_FILES.info, COPY_FILES.lock, "bin/openviking-kimi"]
    ) {
      assertTrue((await Deno.stat(`${copy}/${f}`)).isFile, f);
    }
    // Everything inside: no import the bundle would have to resolve or fetch when it runs.
    for (const f of [COPY_FILES.main, COPY_FILES.hook]) {
      const js = await Deno.readTextFile(`${copy}/${f}`);
      assertNotMatch(js, /\bfrom\s+["'](npm:|jsr:|https?:)|import\(\s*["'](npm:|jsr:|https?:|\.\/)/, f);
    }
    const info = JSON.parse(await Deno.readTextFile(`${copy}/${COPY_FILES.info}`));
    assertEquals(info.flags, await productionFlags(ROOT), "the production flags, from deno.json's cli task");
    assertEquals([info.version, info.deno, info.source], [VERSION, Deno.execPath(), ROOT]);
    assertEquals(
      info.bundledBy,
      `deno ${Deno.version.deno}`,
      "the experimental bundler that made it, recorded",
    );
    const launcher = await Deno.readTextFile(`${copy}/bin/openviking-kimi`);
    assertStringIncludes(launcher, [...info.flags, ...COPY_RUN_FLAGS].join(" "));
    assertEquals(launcherInfo(launcher), { dir: copy, deno: Deno.execPath(), id: copy.split("/").at(-1)! });
    const v = await new Deno.Command(`${copy}/bin/openviking-kimi`, {
      args: ["version"],
      env: { HOME: t.home, PATH: "/usr/bin:/bin" },
      clearEnv: true,
      stdout: "piped",
    }).output();
    assertEquals(new TextDecoder().decode(v.stdout).trim(), VERSION);
    const stats = await Promise.all(
      [COPY_FILES.main, COPY_FILES.hook].map((f) =>
        Deno.stat(`${copy}/${f}`).then((s) => s.mtime?.getTime())
      ),
    );

    assertMatch(await t.install(), /^Nothing to change/m);
    assertEquals(
      await Promise.all(
        [COPY_FILES.main, COPY_FILES.hook].map((f) =>
          Deno.stat(`${copy}/${f}`).then((s) => s.mtime?.getTime())
        ),
      ),
      stats,
      "the bundles are not written again",
    );
    const kept = await t.run(runUninstall);
    assertMatch(
      kept,
      /Files kept \(remove them with --purge\): the program copies in .*\/versions, the command \S+, the plugin directory \S+\.$/m,
    );
    assertNotMatch(kept, /executable/);
  },
});

/** What a version directory is on disk: each entry's inode and mtime (the same when nothing was rewritten). */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    const s = await Deno.lstat(d);
    out.push(`${d.slice(dir.length) || "/"} ${s.ino} ${s.mtime?.getTime()}`);
    if (s.isDirectory) { for await (const e of Deno.readDir(d)) await walk(`${d}/${e.name}`); }
  };
  await walk(dir);
  return out.sort();
}

Deno.test({
  name:
    "the same code installed again from another clone, run from elsewhere: nothing to change, the copy untouched",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await setup(dir.path);
    await t.install();
    const copy = onlyVersion(t);
    const before = await snapshot(copy);
    // Another place, another depth: the bundles name Deno's npm cache by another relative path.
    const clone = await cloneCheckout(`${dir.path}/elsewhere/deeper/clone`);
    const self = { kind: "checkout", root: clone } as const;
    assertMatch(await t.install({ dryRun: true }, { self }), /^Dry run: nothing to change/m);
    const here = Deno.cwd();
    Deno.chdir(`${dir.path}/elsewhere`); // where install runs does not name the modules either
    const again = await t.install({}, { self }).finally(() => Deno.chdir(here));
    assertMatch(again, /^Nothing to change: /m);
    assertNotMatch(again, /program copy in place|launcher of the program copy updated/);
    assertEquals(onlyVersion(t), copy, "one version for one program");
    assertEquals(await snapshot(copy), before, "nothing of the placed version is written again");
  },
});

Deno.test({
  name: "another Deno rewrites only the launcher; a damaged copy is placed again whole",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await setup(dir.path);
    await t.install();
    const copy = onlyVersion(t);
    const main = await Deno.readFile(`${copy}/${COPY_FILES.main}`);
    const relaunched = await t.install({}, { deno: "/opt/other/deno" });
    assertStringIncludes(relaunched, "launcher of the program copy updated");
    assertStringIncludes(await Deno.readTextFile(`${copy}/bin/openviking-kimi`), "\ndeno=/opt/other/deno\n");
    assertEquals(await Deno.readFile(`${copy}/${COPY_FILES.main}`), main, "its code is not touched");

    await Deno.remove(`${copy}/${COPY_FILES.hook}`);
    assertStringIncludes(await t.install(), `program copy in place: ${copy}`);
    assertTrue((await Deno.stat(`${copy}/${COPY_FILES.hook}`)).isFile);
    assertEquals(onlyVersion(t), copy, "no leftover of the damaged one");
  },
});

Deno.test({
  name: "a previous version stays while a process of it runs or another Kimi home registers it, then goes",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await setup(dir.path);
    await t.install();
    const current = onlyVersion(t);
    const old = `${t.versions}/0.0.1-0123456789ab`;
    const other = `${t.versions}/0.0.2-ba9876543210`;
    await copyTree(current, old);
    await copyTree(current, other);
    const stale = `${t.versions}/.0.0.3-ffffffffffff.1234abcd.staging`;
    await Deno.mkdir(stale);
    await Deno.utime(stale, new Date(Date.now() - 2 * 3_600_000), new Date(Date.now() - 2 * 3_600_000));
    // A second Kimi home, installed into earlier, still registers the other version.
    const kimi2 = `${dir.path}/home/.kimi-code-work`;
    await Deno.mkdir(kimi2);
    await Deno.writeTextFile(
      `${kimi2}/config.toml`,
      `[[hooks]]\nevent = "Stop"\ncommand = "${other}/bin/openviking-kimi hook stop"\n`,
    );
    await Deno.writeTextFile(
      `${t.home}/.openviking/agent-integrations/kimicode/kimi-homes`,
      `${t.kimi}\n${kimi2}\n`,
    );
    // A process of the old version runs (an MCP server lives as long as its Kimi session).
    const server = new Deno.Command(Deno.execPath(), {
      args: ["run", ...await productionFlags(ROOT), ...COPY_RUN_FLAGS, `${old}/${COPY_FILES.main}`, "mcp"],
      env: { HOME: t.home, OPENVIKING_URL: "http://127.0.0.1:9", DENO_DIR: `${old}/${COPY_FILES.denoDir}` },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const writer = server.stdin.getWriter();
    const reader = server.stdout.getReader();
    await writer.write(new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"method":"ping"}\n'));
    await reader.read(); // it answers: it runs, and holds its copy's lock

    const files = async (d: string) => await Array.fromAsync(Deno.readDir(d), (e) => e.name);
    const oldFiles = (await files(old)).sort();
    const kept = await t.install({ credentials: { url: "http://127.0.0.1:2" } });
    // Not removed, said so, and not ticked off as done.
    assertStringIncludes(
      kept,
      `\nNote: the previous version ${old} was not removed: a running process uses it`,
    );
    assertStringIncludes(
      kept,
      `\nNote: the previous version ${other} was not removed: the Kimi home ${kimi2} runs it.`,
    );
    assertNotMatch(kept, /✓.*(0\.0\.1|0\.0\.2)-/);
    assertEquals((await files(old)).sort(), oldFiles, "nothing of a running version changes");
    assertEquals(await exists(stale), false, "an old leftover goes");

    await writer.close();
    reader.releaseLock();
    await server.status;
    await server.stdout.cancel().catch(() => {});
    const removed = await t.install({ credentials: { url: "http://127.0.0.1:3" } });
    assertStringIncludes(removed, `previous version removed: ${old}`);
    assertEquals(await exists(old), false);
    assertTrue(await exists(other), "still registered elsewhere");
    assertTrue(await exists(current), "the current one stays");
  },
});

Deno.test({
  name: "a version the openviking-kimi command's launcher runs stays at a purge of another home, said so",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await setup(dir.path);
    const kimi2 = `${dir.path}/home/.kimi-code-work`;
    await t.install();
    await t.install({ kimiHome: kimi2 });
    const current = onlyVersion(t);
    const [id, oldId] = [current.slice(current.lastIndexOf("/") + 1), "0.0.1-0123456789ab"];
    const old = `${t.versions}/${oldId}`;
    await copyTree(current, old);
    // The command's launcher (beside versions/) runs the old copy, as an install of it left it.
    const command = `${t.home}/.local/bin/openviking-kimi`;
    const launcher = await Deno.realPath(command);
    assertTrue(!launcher.startsWith(`${t.versions}/`), launcher);
    await Deno.writeTextFile(launcher, (await Deno.readTextFile(launcher)).replaceAll(id, oldId));
    assertEquals(launcherInfo(await Deno.readTextFile(command))?.id, oldId);

    const out = await t.run(runUninstall, { purge: true });
    assertStringIncludes(out, `Note: the version ${old} was not removed: the command ${command} runs it.`);
    assertTrue(await exists(old));
  },
});
