/**
 * A Kimi session still running after `uninstall --purge` keeps our hooks loaded until it exits (finding C,
 * round 12): the installed copy's hooks of a Kimi home the record of homes no longer lists write nothing
 * under ~/.openviking and print nothing; while the home is listed they work.
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { exists, installSandbox, tree } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { versionsDir } from "../../install/program.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";

/** A process holding the copy's in-use.lock shared, as a running Kimi's MCP server or hook does. */
async function holdCopy(copy: string) {
  const code = `
    const use = await Deno.open(${JSON.stringify(`${copy}/in-use.lock`)}, { read: true });
    if (!use.tryLockSync(false)) Deno.exit(3);
    console.log("ready");
    await new Promise((r) => setTimeout(r, 60_000));`;
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", code], stdout: "piped" }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assertEquals((await reader.read()).value?.trim(), "ready");
  reader.releaseLock();
  return child;
}

Deno.test({
  name:
    "after uninstall --purge, a running Kimi's hooks (the copy kept in use) write nothing under ~/.openviking and print nothing",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const t = await installSandbox(dir.path, { OPENVIKING_URL: fake.url });
    await t.run(runInstall, { mode: "config" });
    const versions = versionsDir(t.ctx().env);
    const copy = `${versions}/${[...Deno.readDirSync(versions)][0].name}`;
    const session = "session_3f1a9c2e-0b7d-4e5f-9a00-00000000afaf";
    const env = {
      HOME: t.home,
      KIMI_CODE_HOME: t.kimi,
      OPENVIKING_URL: fake.url,
      PATH: "/usr/bin:/bin",
    };
    const hook = async (event: string, name: string, extra: Record<string, string> = {}) => {
      const stdin = JSON.stringify({ hook_event_name: name, session_id: session, cwd: t.home, ...extra });
      const child = new Deno.Command(`${copy}/bin/openviking-kimi`, {
        args: ["hook", event],
        // A detached event's work, here and now (the prompt hook's worker is the breaker's probe).
        env: event === "user-prompt-submit" ? env : { ...env, [WORKER_ENV]: "1" },
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(stdin));
      await writer.close();
      const out = await child.output();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    };
    const prompt = () =>
      hook("user-prompt-submit", "UserPromptSubmit", { prompt: "what about indentation?" });

    // Installed: the hooks work (recall printed, state and ledger kept).
    assertStringIncludes(await prompt(), "<openviking-context>");
    assertTrue(await exists(`${t.ov}/hook-state/kimicode`));
    assertTrue(await exists(`${t.ov}/ledger/kimicode`));

    const holder = await holdCopy(copy); // Kimi still running: the copy stays
    try {
      const said = await t.run(runUninstall, { purge: true, yes: true });
      assertStringIncludes(said, `the version ${copy} was not removed`);
      const skip = /^\/agent-integrations\/kimicode\/versions\//;
      const left = await tree(t.ov, skip);
      const requests = fake.requests.length;
      for (const [event, name] of [["session-start", "SessionStart"], ["stop", "Stop"]]) {
        assertEquals(await hook(event, name), "", event);
      }
      assertEquals(await prompt(), "", "the prompt hook prints nothing: memory is gone");
      assertEquals(await tree(t.ov, skip), left, "nothing of ours made again");
      for (const gone of ["hook-state", "ledger", "pending", "state", "logs"]) {
        assertEquals(await exists(`${t.ov}/${gone}`), false, `${gone} came back after:\n${said}`);
      }
      assertEquals(fake.requests.length, requests, "no request to the server");
      assertTrue(left.includes("/agent-integrations/kimicode/versions/"), "the kept copy is there");
    } finally {
      holder.kill();
      await holder.status;
    }
  },
});
