/**
 * kill -9 at any moment of a write leaves the old or the new file, never a torn one: real child processes
 * (the installer's write path in a loop, and the real `install` / `uninstall` CLI) are killed with SIGKILL
 * at random moments (seeded, printed), then every file is checked.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { cliArgs } from "../support/run.ts";
import { isolatedEnv } from "./helpers.ts";
import { Rng } from "../chaos/rng.ts";
import { olderConfigBlock, writeConfigModeHome } from "./config_mode_home.ts";

const HERE = new URL(".", import.meta.url).pathname;
const canKill = Deno.build.os !== "windows";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readUntilReady(stream: ReadableStream<Uint8Array>): Promise<void> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("writer exited before it was ready");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  await stream.cancel().catch(() => {});
}

Deno.test({
  name: "kill -9 during the installer's file writes leaves the old or the new content",
  ignore: !canKill,
  async fn() {
    await using dir = await tempDir();
    const seed = Number(Deno.env.get("KILL_TEST_SEED") ?? Date.now() % 1_000_000);
    console.log(`seed ${seed} (KILL_TEST_SEED=${seed} reproduces)`);
    const rng = new Rng(seed);
    const random = () => rng.next();
    // Two valid configs of different sizes (~1.5 MB and ~1.5 MB + our block), so a kill lands mid-write.
    const user = Array.from({ length: 40_000 }, (_, i) => `k${i} = "value ${i} ✓"`).join("\n") + "\n";
    const installed = `${user}${olderConfigBlock("/opt/bin/openviking-kimi")}\n`;
    const target = `${dir.path}/config.toml`;
    await Deno.writeTextFile(`${dir.path}/a`, user);
    await Deno.writeTextFile(`${dir.path}/b`, installed);
    const valid = new Set([user, installed]);
    for (let i = 0; i < 20; i++) {
      await Deno.writeTextFile(target, random() < 0.5 ? user : installed);
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", `${HERE}kill_writer.ts`, target, `${dir.path}/a`, `${dir.path}/b`],
        stdout: "piped",
        stderr: "null",
        stdin: "null",
      }).spawn();
      await readUntilReady(child.stdout);
      await sleep(random() * 40);
      child.kill("SIGKILL");
      const status = await child.status;
      assertEquals(status.signal, "SIGKILL", "the writer was killed, not finished");
      const now = await Deno.readTextFile(target);
      assertTrue(valid.has(now), `torn config.toml after kill #${i} (${now.length} bytes)`);
      const bak = await Deno.readTextFile(`${target}.bak`).catch(() => undefined);
      assertTrue(bak === undefined || valid.has(bak), `torn config.toml.bak after kill #${i}`);
    }
  },
});

Deno.test({
  name:
    "kill -9 of the real install / uninstall at random moments never leaves a torn or half-registered file",
  ignore: !canKill,
  async fn() {
    await using dir = await tempDir();
    const seed = Number(Deno.env.get("KILL_TEST_SEED") ?? Date.now() % 1_000_000);
    console.log(`seed ${seed} (KILL_TEST_SEED=${seed} reproduces)`);
    const rng = new Rng(seed + 1);
    const random = () => rng.next();
    const home = `${dir.path}/home`;
    const kimi = `${home}/.kimi-code`;
    await Deno.mkdir(kimi, { recursive: true });
    const userConfig = '# mine\r\n[models.k]\r\nprovider = "p"\r\n';
    await Deno.writeTextFile(`${kimi}/config.toml`, userConfig);
    const env = await isolatedEnv(home);
    const prefix = await cliArgs();
    const run = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: [...prefix, ...args],
        env,
        clearEnv: true,
        stdout: "null",
        stderr: "piped",
        stdin: "null",
      });
    // A config-mode home an older version left: the first install that finishes takes it out.
    const { config: installedConfig, mcp: installedMcp } = await writeConfigModeHome(kimi);
    const started = performance.now();
    const finished = await run(["install"]).output();
    // Kill delays spread over one whole run, so kills land before, during and after the writes.
    const span = Math.max(50, (performance.now() - started) * 1.2);
    assertEquals(finished.code, 0, new TextDecoder().decode(finished.stderr));
    assertEquals(
      await Deno.readTextFile(`${kimi}/config.toml`),
      userConfig,
      "the config-mode block taken out",
    );
    await writeConfigModeHome(kimi);

    const modes = [["install"], ["uninstall"], ["install", "--mode", "plugin"], ["uninstall", "--purge"]];
    let killed = 0;
    for (let i = 0; i < 12; i++) {
      const child = run(modes[i % modes.length]).spawn();
      await sleep(random() * span);
      try {
        child.kill("SIGKILL");
      } catch {
        // already exited
      }
      if ((await child.output()).signal === "SIGKILL") killed++;
      const config = await Deno.readTextFile(`${kimi}/config.toml`);
      assertTrue(config === userConfig || config === installedConfig, `config.toml torn after kill #${i}`);
      const mcp = await Deno.readTextFile(`${kimi}/mcp.json`).catch(() => undefined);
      assertTrue(mcp === undefined || mcp === installedMcp, `mcp.json torn after kill #${i}`);
      const registry = await Deno.readTextFile(`${kimi}/plugins/installed.json`).catch(() => undefined);
      const registered = registry !== undefined &&
        (JSON.parse(registry).plugins as { id: string }[]).some((p) => p.id === "openviking-memory");
      if (registered) {
        // A registered plugin directory is always complete (it is renamed into place whole).
        JSON.parse(await Deno.readTextFile(`${kimi}/plugins/managed/openviking-memory/kimi.plugin.json`));
        await Deno.stat(`${kimi}/plugins/managed/openviking-memory/bin/openviking-kimi`);
      }
    }
    console.log(`${killed} of 12 runs were killed before they finished`);
    // Whatever state the kills left, install and uninstall recover it and give back the user's bytes.
    for (const args of [["install"], ["uninstall", "--purge"]]) {
      const out = await run(args).output();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    }
    assertEquals(await Deno.readTextFile(`${kimi}/config.toml`), userConfig);
    assertEquals(await Deno.readTextFile(`${kimi}/mcp.json`).catch(() => undefined), undefined);
  },
});
