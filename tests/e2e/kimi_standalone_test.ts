/**
 * End to end against an install whose checkout is gone (issue #15): the plugin installed by `openviking-kimi
 * install` run from a temporary clone — on the newest Kimi release of the matrix — and the
 * clone deleted before Kimi starts. (The command on PATH, a link to the same launcher, without the clone:
 * tests/install/standalone_test.ts and path_command_test.ts.)
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { kimiE2eVersions } from "../support/kimi.ts";
import { ROOT, runProcess } from "../support/run.ts";
import { cloneCheckout } from "../install/helpers.ts";
import { productionFlags } from "../../lib/self.ts";
import {
  assertRecallBeforeEachPrompt,
  E2E_TEST,
  expectFakeSession,
  kimiOrSkip,
  mcpTools,
  type Msg,
  offeredTools,
  Rig,
} from "./harness.ts";

const version = kimiE2eVersions()[0];

const name = `e2e kimi ${version} -p, installed from a clone that is then deleted`;
const install = await kimiOrSkip(version, name);
Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
  await using rig = await Rig.create(install!, { noInstall: true });
  const fake = rig.fake!;

  await t.step("install from the clone, then delete it", async () => {
    const clone = await cloneCheckout(await Deno.makeTempDir({ prefix: "ovk-clone-" }));
    const main = [...await productionFlags(ROOT), "--config", `${clone}/deno.json`, `${clone}/main.ts`];
    const args = ["run", ...main, "install", ...rig.credentialArgs];
    const out = await runProcess(Deno.execPath(), args, { cwd: clone, env: rig.env.env(), clearEnv: true });
    assertEquals(out.code, 0, out.stderr);
    assertStringIncludes(out.stdout, `Command: openviking-kimi is ${rig.env.home}/.local/bin/`);
    await Deno.remove(clone, { recursive: true });
    const kimi = `${rig.env.home}/.kimi-code`;
    const run = (await Deno.readTextFile(`${kimi}/plugins/managed/openviking-memory/bin/openviking-kimi`))
      .split("\n").filter((l) => /^(dir=|deno=| {2}DENO_DIR=)/.test(l));
    assertTrue(
      run.length > 0 && run.every((text) => !text.includes(clone)),
      "nothing that runs is in the clone",
    );
  });

  await t.step(
    "recall before each prompt, each turn captured whole and committed, MCP tools offered",
    async () => {
      const prompts = ["hello, remember that I prefer tabs over spaces", "second: thanks, that is all"];
      const expected: Msg[] = [];
      let sessionId: string | undefined;
      for (const [i, prompt] of prompts.entries()) {
        const r = await rig.print(prompt, { sessionId });
        sessionId = r.sessionId!;
        expected.push([String(i), "user", prompt], [String(i), "assistant", `ACK: ${prompt}`]);
        await expectFakeSession(fake, `kc-${sessionId}`, expected, i + 1);
      }
      assertRecallBeforeEachPrompt(rig, prompts);
      assertEquals(mcpTools(rig.mainRequests()[0]), offeredTools());
    },
  );
});
