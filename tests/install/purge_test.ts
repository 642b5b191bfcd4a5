/**
 * A new user's walk through `uninstall --purge` (round 6): a `.bak` install made that holds nothing but what
 * the file holds goes, in every Kimi home; a changed URL names the other homes it moves; what waits in the
 * queue for another server is named with where it goes.
 */

import { assertEquals, assertNotMatch, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { closedAddress, fakeCompiled, installSandbox, opts } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { SessionQueue } from "../../openviking/queue.ts";

const exists = (p: string) => Deno.lstat(p).then(() => true, () => false);

Deno.test("uninstall --purge deletes the config.toml.bak install made, byte-identical to config.toml, in each home", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: closedAddress() });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  await Deno.mkdir(second, { recursive: true });
  const config = '# mine\ndefault_model = "k3"\n';
  for (const home of [t.kimi, second]) await Deno.writeTextFile(`${home}/config.toml`, config);
  for (const kimiHome of [undefined, second]) {
    assertEquals(await runInstall(ctx, opts({ kimiHome })), 0, t.all());
  }
  for (const kimiHome of [second, undefined]) {
    const home = kimiHome ?? t.kimi;
    assertEquals(await Deno.readTextFile(`${home}/config.toml.bak`), config);
    t.said();
    assertEquals(await runUninstall(ctx, opts({ kimiHome, purge: true })), 0, t.all());
    const said = t.said();
    assertEquals(await Deno.readTextFile(`${home}/config.toml`), config);
    assertEquals(await exists(`${home}/config.toml.bak`), false, said);
    assertStringIncludes(said, `${home}/config.toml.bak`);
  }
});

Deno.test("uninstall says where writes queued for another server go and the command delivering them", async () => {
  await using dir = await tempDir();
  const here = closedAddress();
  const t = await installSandbox(dir.path, { OPENVIKING_URL: here });
  const ctx = t.ctx(await fakeCompiled(dir.path));
  assertEquals(await runInstall(ctx, opts()), 0, t.all());
  const pending = `${t.ov}/pending`;
  const other = { url: "http://10.0.0.9:1933", account: "acme", user: "bob" };
  const msg = { role: "user" as const, content: "hello" };
  await (await SessionQueue.open(pending, "kc-elsewhere", other)).messages([msg]);
  await (await SessionQueue.open(pending, "kc-here", { url: here, account: "", user: "" })).messages([msg]);
  t.said();
  assertEquals(await runUninstall(ctx, opts({ purge: true })), 0, t.all());
  const said = t.said();
  assertStringIncludes(said, "1 queued write(s) are for another server or identity");
  assertStringIncludes(
    said,
    "OPENVIKING_URL=http://10.0.0.9:1933 OPENVIKING_ACCOUNT=acme OPENVIKING_USER=bob",
  );
  assertStringIncludes(said, "replay`");
  // Only the one queued for this server is replayed by the next session start.
  assertStringIncludes(
    said,
    "1 of them (1 session(s)) the next session start replays once you install again",
  );
});

Deno.test("install --url into one Kimi home names the other homes that now use the new address, in a dry run too", async () => {
  await using dir = await tempDir();
  const t = await installSandbox(dir.path);
  const ctx = t.ctx(await fakeCompiled(dir.path));
  const second = `${t.home}/kimi2`;
  const [a, b] = ["http://127.0.0.1:9", "http://127.0.0.1:8"];
  assertEquals(await runInstall(ctx, opts({ credentials: { url: a } })), 0, t.all());
  assertEquals(await runInstall(ctx, opts({ kimiHome: second })), 0, t.all());
  assertNotMatch(t.said(), /now use|would use/);
  for (const dryRun of [true, false]) {
    assertEquals(await runInstall(ctx, opts({ dryRun, credentials: { url: b } })), 0, t.all());
    const said = t.said();
    const verb = dryRun ? "would then use" : "now uses";
    assertStringIncludes(said, `the Kimi home ${second} shares ${t.ov}/ovcli.conf: it ${verb} ${b} too`);
  }
  // The same address again moves nothing.
  assertEquals(await runInstall(ctx, opts({ credentials: { url: b } })), 0, t.all());
  assertNotMatch(t.said(), /shares/);
});
