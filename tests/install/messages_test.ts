/**
 * Install's and uninstall's messages say what happened (issue #15, point 5): an empty plan says "nothing to
 * change"; a dry run says what would be done, never what was (install_test.ts; its diffs: json_files_test.ts);
 * uninstall names only what is left on disk; no `.bak` of a file install created is left behind (the user's
 * own file keeps its `.bak`).
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { exists, fakeCompiled, installSandbox } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { currentSelf } from "../../install/spec.ts";
import { writeConfigModeHome } from "./config_mode_home.ts";

/** The `.bak` files of a Kimi home and of its `plugins/`. */
async function backups(kimi: string): Promise<string[]> {
  const names = async (d: string) =>
    (await Array.fromAsync(Deno.readDir(d)).catch(() => [])).map((e) => e.name);
  return [...await names(kimi), ...await names(`${kimi}/plugins`)].filter((n) => n.endsWith(".bak"));
}

Deno.test("an install with nothing to change says so, in a dry run too", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const self = await fakeCompiled(dir.path);
  await t.run(runInstall, {}, { self });
  const again = await t.run(runInstall, {}, { self });
  assertMatch(again, /^Nothing to change: openviking-kimi is installed in .* \(plugin mode\)/m);
  assertNotMatch(again, /^Installing|✓/m);
  const dry = await t.run(runInstall, { dryRun: true }, { self });
  assertMatch(dry, /^Dry run: nothing to change/m);
  assertNotMatch(dry, /would be made/);
});

Deno.test("a dry run on an empty home says what it would create and what would run, not what runs", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const self = await currentSelf();
  const url = "http://127.0.0.1:9";
  const versions = `${t.home}/.openviking/agent-integrations/kimicode/versions`;
  const lines = (await t.run(runInstall, { dryRun: true, credentials: { url } }, { self })).split("\n");
  assertTrue(
    lines.includes(`  - create ${t.home}/.openviking/ovcli.conf: set url to ${url}`),
    lines.join("\n"),
  );
  const copy = /^ {2}- place the program copy (\S+) /.exec(lines.find((l) => l.includes(versions))!)![1];
  assertEquals(lines.slice(-1), [
    `Hooks would run: ./bin/openviking-kimi hook <event>, in ${t.kimi}/plugins/managed/openviking-memory: ` +
    `the program copy ${copy}, with ${Deno.execPath()}, not this checkout (moving or deleting the checkout ` +
    "would change nothing; run install again to update them)",
  ]);
  assertEquals(lines.filter((l) => /^Hooks run\b|\bupdate .*ovcli\.conf/.test(l)), []);
  // Once installed, a real run says what runs; with the file there, a dry run says "update".
  assertMatch(
    await t.run(runInstall, { credentials: { url } }, { self }),
    /^Hooks run: \.\/bin\/openviking-kimi hook <event>, in \S+: the program copy \S+, with /m,
  );
  const again = await t.run(runInstall, { dryRun: true, credentials: { url: "http://127.0.0.1:8" } }, {
    self,
  });
  assertStringIncludes(again, `  - update ${t.home}/.openviking/ovcli.conf: set url to http://127.0.0.1:8`);
  assertMatch(again, /^Hooks would run: /m);
});

Deno.test("uninstall names only what it left on disk", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const self = await fakeCompiled(dir.path);
  await t.run(runInstall, {}, { self });
  const plugin = await t.run(runUninstall, {}, { self });
  assertMatch(
    plugin,
    /Files kept \(remove them with --purge\): the executable \S+, the command \S+, the plugin directory .*openviking-memory\.$/m,
    "the command runs the executable's copy, not a plugin directory another purge may delete",
  );
  await t.run(runUninstall, { purge: true }, { self });
  assertNotMatch(await t.run(runUninstall, {}, { self }), /Files kept/, "nothing left, nothing named");
});

Deno.test("no .bak of a file install created (or only it wrote) is left behind; the user's own file keeps its .bak", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const self = await fakeCompiled(dir.path);
  await writeConfigModeHome(t.kimi); // an older version's block, entry and skill: all of it ours
  assertNotMatch(await t.run(runInstall, {}, { self }), /previous copy/, "nothing of the user's was in them");
  // The same binary installed again from another place rewrites only our registry record.
  await t.run(runInstall, {}, { self: await fakeCompiled(`${dir.path}/newer`) });
  await t.run(runUninstall, {}, { self });
  assertEquals(await backups(t.kimi), [], "an install created them all");

  const other = { id: "other", root: "/elsewhere", source: "github", enabled: true };
  const theirs = JSON.stringify({ version: 1, plugins: [other] });
  await Deno.writeTextFile(`${t.kimi}/plugins/installed.json`, theirs);
  await t.run(runInstall, {}, { self });
  assertEquals(await Deno.readTextFile(`${t.kimi}/plugins/installed.json.bak`), theirs);
  await t.run(runUninstall, {}, { self });
  assertTrue(await exists(`${t.kimi}/plugins/installed.json.bak`), "the .bak of the user's registry stays");

  // A record with our id that install did not write (by hand, root "."): the file and its .bak stay.
  const hand = JSON.stringify({ version: 1, plugins: [{ id: "openviking-memory", root: "." }] });
  await Deno.writeTextFile(`${t.kimi}/plugins/installed.json`, hand);
  await t.run(runInstall, {}, { self });
  assertEquals(await Deno.readTextFile(`${t.kimi}/plugins/installed.json.bak`), hand);
  assertTrue(await exists(`${t.kimi}/plugins/installed.json`), "not deleted for being left empty");
  await t.run(runUninstall, { purge: true }, { self });
  assertEquals(await Deno.readTextFile(`${t.kimi}/plugins/installed.json.bak`), hand, "purge keeps it");
});

Deno.test("every ✓ line says what was done: the silent steps (the record of homes, of directories) print none", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: "http://127.0.0.1:9" });
  const self = await fakeCompiled(dir.path);
  const second = `${dir.path}/kimi-two`;
  const said = [
    await t.run(runInstall, {}, { self }),
    await t.run(runInstall, { kimiHome: second }, { self }),
    await t.run(runUninstall, { purge: true }, { self }),
    await t.run(runUninstall, { kimiHome: second, purge: true }, { self }),
  ];
  for (const out of said) {
    assertMatch(out, /^ {2}✓ \S/m);
    assertNotMatch(out, /^ *✓ *$/m, out);
  }
});
