/**
 * A new user's walk through `uninstall --purge` (round 6): a `.bak` install made that holds nothing but what
 * the file holds goes, in every Kimi home; a changed URL names the other homes it moves; what waits in the
 * queue for another server is named with where it goes.
 */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { closedAddress, fakeCompiled, installSandbox, opts } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";

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
