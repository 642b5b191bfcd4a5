/**
 * An installed plugin stands on its own (issue #15): installed from a temporary clone in each mode, with a
 * Deno that can later disappear, and the clone then deleted, `doctor` passes; with the recorded Deno gone and
 * another on PATH the hooks work again and doctor says which Deno runs. (Kimi running the copy once the clone
 * is gone: tests/e2e/kimi_standalone_test.ts; the launcher without any Deno: tests/install/launcher_test.ts.)
 * Doctor, run from the installed copy, names each problem of a half-removed plugin directory, an unreadable
 * config and a damaged copy, and never crashes.
 */

import { assertEquals, assertMatch, assertNotMatch, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { echoContext, FakeOpenViking } from "../support/fake-openviking.ts";
import { ROOT, runProcess, type RunResult } from "../support/run.ts";
import { cloneCheckout, installSandbox, isolatedEnv } from "./helpers.ts";
import { runInstall } from "../../install/install.ts";
import { productionFlags } from "../../lib/self.ts";

const posix = Deno.build.os !== "windows";
const KEY = "sk-standalone-9f3e1d";
/** The PATH of a machine without Deno (the launcher must find the one install recorded, or none). */
const BARE_PATH = "/usr/bin:/bin";

/** Runs `command` through /bin/sh in `cwd`, as Kimi runs a hook, with `stdin`. */
async function sh(command: string, cwd: string, env: Record<string, string>, stdin = ""): Promise<RunResult> {
  return await runProcess("/bin/sh", ["-c", command], { cwd, env, clearEnv: true, stdin, timeoutMs: 60_000 });
}

/** A Deno of our own that can be taken away later (a hard link when possible, else a copy). */
async function ownDeno(dir: string): Promise<string> {
  await Deno.mkdir(`${dir}/deno-bin`);
  const path = `${dir}/deno-bin/deno`;
  await Deno.link(Deno.execPath(), path).catch(() => Deno.copyFile(Deno.execPath(), path));
  return path;
}

/** What Kimi would run: the plugin's hook commands (and their cwd), doctor's program. */
async function registered(home: string) {
  const kimi = `${home}/.kimi-code`;
  const env = { HOME: home, PATH: BARE_PATH };
  const root = `${kimi}/plugins/managed/openviking-memory`;
  const manifest = JSON.parse(await Deno.readTextFile(`${root}/kimi.plugin.json`));
  return {
    hook: (e: string) =>
      (manifest.hooks as { command: string }[]).find((h) => h.command.endsWith(` hook ${e}`))!.command,
    hookCwd: root,
    hookEnv: { ...env, KIMI_CODE_HOME: kimi, KIMI_PLUGIN_ROOT: root },
    launcher: `${root}/bin/openviking-kimi`,
  };
}

for (const mode of ["plugin"] as const) {
  Deno.test({
    name:
      `installed from a clone (${mode} mode) that is then deleted: it all works, and with another Deno too`,
    ignore: !posix,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn(t) {
      await using dir = await tempDir();
      await using fake = await FakeOpenViking.start({ apiKey: KEY });
      fake.contextFor = echoContext; // a memory per query: a later prompt has one the session has not seen
      const home = `${dir.path}/home`;
      const project = `${dir.path}/project`;
      await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
      await Deno.mkdir(project);
      const deno = await ownDeno(dir.path);
      const source = await cloneCheckout(`${dir.path}/clone`);

      await t.step("install from the clone, the key on stdin", async () => {
        const args = [...await productionFlags(ROOT), "--config", `${source}/deno.json`, `${source}/main.ts`];
        const install = ["install", "--mode", mode, "--url", fake.url, "--api-key-stdin"];
        const env = isolatedEnv(home);
        const { code, stdout, stderr } = await runProcess(deno, ["run", ...args, ...install], {
          cwd: source,
          env,
          clearEnv: true,
          stdin: `${KEY}\n`,
        });
        assertEquals(code, 0, stderr);
        assertNotMatch(stdout + stderr, new RegExp(KEY), "the key is never printed");
        assertMatch(stdout, /program copy in place: .*\/versions\//);
        assertMatch(stdout, /Server: OpenViking/);
        await Deno.remove(source, { recursive: true });
      });

      const reg = await registered(home);
      const sid = "session_00000000-0000-4000-8000-0000000000p1";
      const prompt = JSON.stringify({
        session_id: sid,
        cwd: project,
        prompt: [{ type: "text", text: "how should I indent this file?" }],
      });

      // The clone gone, Kimi itself recalls, captures and lists the MCP tools through the copy:
      // tests/e2e/kimi_standalone_test.ts, in both modes.
      await t.step("the clone gone: doctor passes", async () => {
        const doctor = await sh(`'${reg.launcher}' doctor --json`, project, reg.hookEnv);
        const report = JSON.parse(doctor.stdout);
        assertEquals([doctor.code, report.ok], [0, true], doctor.stdout);
        assertEquals(report.checks.find((c: { id: string }) => c.id === "program").status, "ok");
      });

      await Deno.remove(deno);
      await t.step("another Deno on PATH: it works again, and doctor says which Deno runs", async () => {
        const onPath = { ...reg.hookEnv, PATH: `${Deno.execPath().replace(/\/[^/]*$/, "")}:${BARE_PATH}` };
        const recall = await sh(
          reg.hook("user-prompt-submit"),
          reg.hookCwd,
          onPath,
          prompt.replace("indent", "name"),
        );
        assertEquals(recall.code, 0);
        assertStringIncludes(recall.stdout, "<openviking-context");
        const doctor = await sh(`'${reg.launcher}' doctor --json`, project, onPath);
        const deno = JSON.parse(doctor.stdout).checks.find((c: { id: string }) => c.id === "deno");
        assertEquals(deno.status, "warn");
        assertMatch(deno.summary, /the Deno install used \(.*\) is gone; the launcher runs /);
      });
    },
  });
}

/** A plugin-mode install in-process into `<dir>/home` (nothing answers at the URL). */
async function installedPlugin(dir: string): Promise<{ home: string; kimi: string; root: string }> {
  const t = await installSandbox(dir, { OPENVIKING_URL: "http://127.0.0.1:9" });
  await t.run(runInstall);
  return { home: t.home, kimi: t.kimi, root: t.plugin };
}

/** Doctor's JSON report, checked to come from a run that did not crash. */
function report(
  r: RunResult,
): { ok: boolean; checks: { id: string; status: string; summary: string; fix?: string }[] } {
  assertNotMatch(r.stderr, /Uncaught|\n\s+at /, `doctor crashed:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

Deno.test({
  name: "doctor, run from the installed copy, names each problem of a damaged setup and never crashes",
  ignore: !posix,
  async fn(t) {
    await using dir = await tempDir();
    const { home, kimi, root } = await installedPlugin(dir.path);
    const doctor = async () =>
      report(
        await sh(`'${root}/bin/openviking-kimi' doctor --json`, dir.path, { HOME: home, PATH: BARE_PATH }),
      );
    const failing = (r: ReturnType<typeof report>, id: string) =>
      r.checks.find((c) => c.id === id && c.status === "fail");
    const launcher = await Deno.readTextFile(`${root}/bin/openviking-kimi`);

    await t.step("a plugin directory without its manifest", async () => {
      await Deno.rename(`${root}/kimi.plugin.json`, `${dir.path}/manifest`);
      const r = await doctor();
      assertEquals(r.ok, false);
      assertMatch(failing(r, "plugin")!.summary, /has no kimi\.plugin\.json/);
      assertMatch(failing(r, "plugin")!.fix!, /install`/);
      await Deno.rename(`${dir.path}/manifest`, `${root}/kimi.plugin.json`);
    });

    await t.step(
      "an unreadable config.toml, mcp.json that is not UTF-8, ovcli.conf a directory",
      async () => {
        await Deno.mkdir(`${kimi}/config.toml`);
        await Deno.writeFile(`${kimi}/mcp.json`, new Uint8Array([0xff, 0xfe, 0x7b]));
        await Deno.mkdir(`${home}/.openviking/ovcli.conf`, { recursive: true });
        const r = await doctor();
        assertEquals(r.ok, false);
        assertMatch(failing(r, "config")!.summary, /config\.toml cannot be read: it is a directory/);
        assertMatch(failing(r, "mcp")!.summary, /mcp\.json/);
        await Deno.remove(`${kimi}/config.toml`);
        await Deno.remove(`${kimi}/mcp.json`);
        await Deno.remove(`${home}/.openviking/ovcli.conf`);
      },
    );

    await t.step("a damaged program copy", async () => {
      const copy = JSON.parse(/# openviking-kimi copy (.*)/.exec(launcher)![1]).dir as string;
      await Deno.rename(`${copy}/hook.js`, `${dir.path}/hook.js`);
      const r = await doctor();
      assertMatch(failing(r, "command")!.summary, /the program copy .* is incomplete \(missing hook\.js\)/);
      assertMatch(failing(r, "command")!.fix!, /run install again/);
      await Deno.rename(`${dir.path}/hook.js`, `${copy}/hook.js`);
    });

    await t.step("a plugin directory without its bin/ (doctor run from the copy itself)", async () => {
      const copy = JSON.parse(/# openviking-kimi copy (.*)/.exec(launcher)![1]).dir as string;
      await Deno.remove(`${root}/bin`, { recursive: true });
      const r = report(
        // Nothing answers at its address, whatever runs on this machine's default port.
        await sh(`'${copy}/bin/openviking-kimi' doctor --json`, dir.path, {
          HOME: home,
          PATH: BARE_PATH,
          OPENVIKING_URL: "http://127.0.0.1:9",
        }),
      );
      assertMatch(failing(r, "plugin")!.summary, /bin\/openviking-kimi is missing/);
      assertEquals(
        r.checks.filter((c) => c.status === "fail").map((c) => c.id).sort(),
        ["plugin", "server"],
        JSON.stringify(r.checks),
      );
    });
  },
});
