/**
 * Issue #19 point 5, install and uninstall in-process and what they place run by a shell: install puts a
 * runnable `openviking-kimi` where the user's shell finds it (`~/.local/bin`, or `$OPENVIKING_KIMI_BIN_DIR`),
 * says where and what to add to PATH when that place is not on it, never overwrites a file there that is not
 * ours, and `uninstall --purge` removes it; every message names a command that works on this machine —
 * `openviking-kimi` when that is ours on PATH, else ours by its absolute path.
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { ROOT, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import {
  closedAddress,
  exists,
  installSandbox,
  isolatedEnv,
  NO_SERVER_HEADING,
  noServerFix,
  tree,
} from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { VERSION } from "../../lib/version.ts";

const posix = Deno.build.os !== "windows";
const BARE_PATH = "/usr/bin:/bin";

/** Runs `line` in /bin/sh with `env`, as the user's shell would; exit `code`. */
async function shell(env: Record<string, string>, line: string, code = 0): Promise<string> {
  const r = await runProcess("/bin/sh", ["-c", line], {
    env,
    clearEnv: true,
    cwd: env.HOME,
    timeoutMs: 60_000,
  });
  assertEquals(r.code, code, `${line}\n${r.stdout}\n${r.stderr}`);
  return `${r.stdout}${r.stderr}`;
}

Deno.test({
  name: "install puts openviking-kimi in ~/.local/bin, says what to add to PATH, and messages name it",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const home = t.home;
    const bin = `${home}/.local/bin`;
    const command = `${bin}/openviking-kimi`;
    const url = closedAddress();
    const bare = isolatedEnv(home, { OPENVIKING_URL: url, PATH: BARE_PATH });
    const onPath = { ...bare, PATH: `${bin}:${BARE_PATH}` };

    // Not on PATH: where it is, what to add, and the absolute path in every message.
    const out = await t.run(runInstall, {}, { env: bare });
    assertStringIncludes(out, `Command: openviking-kimi is ${command} — ${bin} is not on PATH: add it`);
    assertStringIncludes(out, `\`export PATH="${bin}:$PATH"\``);
    assertStringIncludes(out, `\`${command} doctor\` checks the setup`);
    // Nothing answers at the address: the note and its fix pointing to README's "No server yet?".
    const [note, fix] = out.trimEnd().split("\n").slice(-3, -1);
    assertMatch(
      note,
      new RegExp(`^Note: ${url} \\(from env\\): OpenViking at ${url} is not reachable: `),
    );
    assertEquals(fix, `  fix: ${noServerFix(command, true)}`, "the command install placed");
    assertStringIncludes(await Deno.readTextFile(`${ROOT}/README.md`), `\n${NO_SERVER_HEADING}\n`);
    assertEquals((await shell(bare, `${command} version`)).trim(), VERSION);
    const doctor = await shell(bare, `${command} doctor`, 1);
    assertStringIncludes(doctor, `    fix: ${noServerFix(command, true)}`);
    const usage = await shell(bare, `${command} status --bogus`, 2);
    assertStringIncludes(usage, `Run "${command} status --help" for its help.`);

    // On PATH: its name.
    assertStringIncludes(
      await t.run(runInstall, {}, { env: onPath }),
      `Command: openviking-kimi is ${command} (${bin} is on PATH).`,
    );
    assertEquals((await shell(onPath, "openviking-kimi version")).trim(), VERSION);
    const named = await shell(onPath, "openviking-kimi doctor", 1);
    assertStringIncludes(named, `    fix: ${noServerFix("openviking-kimi", true)}`);
    assertNotMatch(named, new RegExp(`${command} `), "no path where the name works");
    const help = await shell(onPath, "openviking-kimi status --bogus", 2);
    assertStringIncludes(help, 'Run "openviking-kimi status --help" for its help.');
    // Another openviking-kimi first on PATH: ours by its path again.
    await Deno.mkdir(`${dir.path}/other`);
    await Deno.writeTextFile(`${dir.path}/other/openviking-kimi`, "#!/bin/sh\nexit 3\n", { mode: 0o755 });
    const shadowed = { ...onPath, PATH: `${dir.path}/other:${onPath.PATH}` };
    assertStringIncludes(
      await shell(shadowed, `${command} doctor`, 1),
      `    fix: ${noServerFix(command, true)}`,
    );

    // uninstall keeps it with the program (and says so); --purge removes it.
    assertMatch(
      await t.run(runUninstall, {}, { env: bare }),
      new RegExp(`Files kept .*the command ${command}, `, "m"),
    );
    assertEquals((await shell(bare, `${command} version`)).trim(), VERSION);
    await t.run(runUninstall, { purge: true }, { env: bare });
    assertEquals(await exists(command), false);
  },
});

Deno.test({
  name: "install never overwrites an openviking-kimi that is not ours; OPENVIKING_KIMI_BIN_DIR moves it",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const bin = `${t.home}/.local/bin`;
    await Deno.mkdir(bin, { recursive: true });
    const mine = "#!/bin/sh\necho my own openviking-kimi\n";
    await Deno.writeTextFile(`${bin}/openviking-kimi`, mine, { mode: 0o755 });
    const env = isolatedEnv(t.home, { OPENVIKING_URL: closedAddress(), PATH: `${bin}:${BARE_PATH}` });

    const out = await t.run(runInstall, {}, { env });
    assertMatch(
      out,
      new RegExp(`no openviking-kimi command placed at ${bin}/openviking-kimi \\(a file that is not ours`),
    );
    assertEquals(await Deno.readTextFile(`${bin}/openviking-kimi`), mine);
    // The shell would run that one: the note names ours by its path, and messages from this checkout its task.
    const launcher = `${out.match(/^Hooks run: .*: the program copy (\S+),/m)![1]}/bin/openviking-kimi`;
    assertMatch(out, new RegExp(`not ours.*; run ${launcher}\\.$`, "m"));
    assertStringIncludes(out, `\`deno task -q --config ${ROOT}/deno.json cli doctor\` checks the setup`);
    await t.run(runUninstall, { purge: true }, { env });
    assertEquals(await Deno.readTextFile(`${bin}/openviking-kimi`), mine, "a purge leaves it too");

    const elsewhere = `${dir.path}/tools`;
    const moved = { ...env, OPENVIKING_KIMI_BIN_DIR: elsewhere, PATH: `${elsewhere}:${BARE_PATH}` };
    assertStringIncludes(
      await t.run(runInstall, {}, { env: moved }),
      `Command: openviking-kimi is ${elsewhere}/openviking-kimi (`,
    );
    assertEquals((await shell(moved, "openviking-kimi version")).trim(), VERSION);
    await t.run(runUninstall, { purge: true }, { env: moved });
    assertEquals(await exists(`${elsewhere}/openviking-kimi`), false);
  },
});

Deno.test({
  name:
    "uninstall --purge through the installed command removes its own version and leaves nothing install made",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const home = t.home;
    await Deno.remove(t.kimi); // no Kimi home yet: install makes it, the purge takes it out
    const command = `${home}/.local/bin/openviking-kimi`;
    const env = isolatedEnv(home, { OPENVIKING_URL: closedAddress(), PATH: BARE_PATH });
    await t.run(runInstall, {}, { env });
    // What a session start leaves in the shared state directory (its housekeeping stamp).
    const payload = JSON.stringify({
      hook_event_name: "SessionStart",
      session_id: "s1",
      cwd: home,
      source: "startup",
    });
    await shell(env, `printf '%s' '${payload}' | ${command} hook session-start`);
    // Its detached worker writes it: wait until it is there (the test fails if it never comes).
    const stamp = `${home}/.openviking/state/kimicode-housekeeping.json`;
    for (let i = 0; i < 600 && !(await exists(stamp)); i++) await new Promise((r) => setTimeout(r, 100));
    assertTrue(await exists(stamp), "session start's worker left its stamp");
    // And until the worker has ended (its hold on the copy's lock gone), so only the uninstall holds it.
    const versions = `${home}/.openviking/agent-integrations/kimicode/versions`;
    const [version] = await Array.fromAsync(Deno.readDir(versions), (e) => e.name);
    const lock = await Deno.open(`${versions}/${version}/in-use.lock`, { read: true, write: true });
    await lock.lock(true);
    lock.close();
    const out = await shell(env, `${command} uninstall --purge`);
    assertNotMatch(out, /was not removed/);
    assertEquals(await tree(home), [], out);
  },
});

Deno.test({
  name:
    "the command outlives its program copy: with versions/ deleted it says the copy is gone and what to run",
  ignore: !posix,
  async fn() {
    await using dir = await tempDir();
    const t = await installSandbox(dir.path);
    const command = `${t.home}/.local/bin/openviking-kimi`;
    const env = isolatedEnv(t.home, { OPENVIKING_URL: closedAddress(), PATH: BARE_PATH });
    await t.run(runInstall, {}, { env });
    await Deno.remove(`${t.home}/.openviking/agent-integrations/kimicode/versions`, { recursive: true });

    const said = await shell(env, `${command} doctor`, 1);
    assertMatch(said, /^openviking-kimi: the program copy \S+ is gone or incomplete .*; run install again: /);
    assertEquals(await shell(env, `echo '{}' | ${command} hook stop`), "", "a hook stays silent");
    await t.run(runInstall, {}, { env });
    assertEquals((await shell(env, `${command} version`)).trim(), VERSION);
  },
});
