/**
 * A Kimi session still running after `uninstall --purge` keeps our hooks loaded until it exits (finding C,
 * round 12): the installed copy's hooks of a Kimi home the record of homes no longer lists write nothing
 * under ~/.openviking and print nothing; while the home is listed they work.
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { exists, installSandbox, snapshot } from "./helpers.ts";
import { runInstall, runUninstall } from "../../install/install.ts";
import { versionsDir } from "../../install/program.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { sha256Hex } from "../../lib/hash.ts";
import { enqueueMessages, range } from "../support/queue.ts";

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

/**
 * Installed from this checkout (a copy placed) into its Kimi home and `more`, against a fake
 * server: the copy's hooks run as Kimi runs them, one session per home.
 */
async function installedHooks(path: string, fake: FakeOpenViking, more: string[] = []) {
  const t = await installSandbox(path, { OPENVIKING_URL: fake.url });
  for (const kimiHome of [t.kimi, ...more]) {
    await Deno.mkdir(kimiHome, { recursive: true });
    await t.run(runInstall, { kimiHome });
  }
  const versions = versionsDir(t.ctx().env);
  const copy = `${versions}/${[...Deno.readDirSync(versions)][0].name}`;
  const env = { HOME: t.home, OPENVIKING_URL: fake.url, PATH: "/usr/bin:/bin" };
  /** A hook event of the Kimi home `kimi`: its stdout and stderr. */
  const hook = async (kimi: string, event: string, name: string, extra: Record<string, string> = {}) => {
    const session = `session_3f1a9c2e-0b7d-4e5f-9a00-${(await sha256Hex(kimi)).slice(0, 12)}`;
    const stdin = JSON.stringify({ hook_event_name: name, session_id: session, cwd: t.home, ...extra });
    const child = new Deno.Command(`${copy}/bin/openviking-kimi`, {
      args: ["hook", event],
      // A detached event's work, here and now (the prompt hook's worker is the breaker's probe).
      env: { ...env, KIMI_CODE_HOME: kimi, ...(event === "user-prompt-submit" ? {} : { [WORKER_ENV]: "1" }) },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000), // a hook that keeps running (an idle watch, say) fails here
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
    const out = await child.output();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  };
  const prompt = (kimi: string) =>
    hook(kimi, "user-prompt-submit", "UserPromptSubmit", { prompt: "what about indentation?" });
  // Installed: the hooks work (recall printed, state and ledger kept).
  assertStringIncludes(await prompt(t.kimi), "<openviking-context>");
  assertTrue(await exists(`${t.ov}/hook-state/kimicode`));
  assertTrue(await exists(`${t.ov}/ledger/kimicode`));
  /** What is under ~/.openviking but the program copies: every path and file. */
  const ours = async () =>
    Object.entries(await snapshot(t.ov)).filter(([p]) => !p.startsWith(`${versions}/`));
  /** Every hook event of `kimi` after `said` (an uninstall's words): nothing printed, asked or written. */
  const silent = async (said: string, kimi = t.kimi) => {
    const [before, requests] = [await ours(), fake.requests.length];
    const events = [["session-start", "SessionStart"], ["stop", "Stop"], ["session-end", "SessionEnd"]];
    for (const [event, name] of events) assertEquals(await hook(kimi, event, name), "", event);
    assertEquals(await prompt(kimi), "", "the prompt hook prints nothing: memory is gone");
    assertEquals(await ours(), before, `nothing of ours made or changed after:\n${said}`);
    assertEquals(fake.requests.length, requests, "no request to the server");
  };
  return { t, copy, hook, prompt, silent };
}

Deno.test({
  name:
    "after uninstall --purge, a running Kimi's hooks (the copy kept in use) write nothing under ~/.openviking and print nothing",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const { t, copy, silent } = await installedHooks(dir.path, fake);
    const holder = await holdCopy(copy); // Kimi still running: the copy stays
    try {
      const said = await t.run(runUninstall, { purge: true, yes: true });
      assertStringIncludes(said, `the version ${copy} was not removed`);
      await silent(said);
      for (const gone of ["hook-state", "ledger", "pending", "state", "logs"]) {
        assertEquals(await exists(`${t.ov}/${gone}`), false, `${gone} came back after:\n${said}`);
      }
      assertTrue(await exists(copy), "the kept copy is there");
    } finally {
      holder.kill();
      await holder.status;
    }
  },
});

Deno.test({
  name:
    "a purge of one Kimi home while another stays installed: the purged home's running hooks write nothing, the other's work",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const b = `${dir.path}/home/kimi-b`;
    const { t, prompt, silent } = await installedHooks(dir.path, fake, [b]);
    const said = await t.run(runUninstall, { purge: true, yes: true });
    assertStringIncludes(said, "Kept for the Kimi home still installed");
    await silent(said);
    assertStringIncludes(await prompt(b), "<openviking-context>", "the home still installed recalls");
    await silent(said);
  },
});

Deno.test({
  name: "a record of homes that is a FIFO, or over 1 MiB, blocks no hook: it is not read, and the hooks work",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const { t, hook } = await installedHooks(dir.path, fake);
    const prompt = (text: string) => hook(t.kimi, "user-prompt-submit", "UserPromptSubmit", { prompt: text });
    const searches = () => fake.requestsTo("POST /api/v1/search/search").length;
    const record = `${t.ov}/agent-integrations/kimicode/kimi-homes`;
    await Deno.remove(record);
    await new Deno.Command("mkfifo", { args: [record] }).output();
    assertTrue((await Deno.lstat(record)).isFifo === true, "a FIFO at the record");
    let asked = searches();
    await prompt("and the tile encoder?"); // fails on its 30 s bound if the hook opens the FIFO
    assertEquals(searches(), asked + 1, "a FIFO: the prompt hook recalls");
    await Deno.remove(record);
    await Deno.writeTextFile(record, `${"x".repeat(2 << 20)}\n`);
    asked = searches();
    await prompt("and the tile decoder?");
    assertEquals(searches(), asked + 1, "a record over 1 MiB: the prompt hook recalls");
  },
});

Deno.test({
  name:
    "the last purge, run by the copy's own launcher once a first purge kept it for a running Kimi: the replay it names runs once installed again",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const b = `${dir.path}/home/kimi-b`;
    const { t, copy } = await installedHooks(dir.path, fake, [b]);
    const holder = await holdCopy(copy); // the first home's Kimi still runs
    try {
      await t.run(runUninstall, { purge: true, yes: true });
    } finally {
      holder.kill();
      await holder.status;
    }
    await enqueueMessages(`${t.ov}/pending`, "kc-left", range(1));
    // The user's Deno cache, which this checkout's task runs with.
    const denoDir = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`;
    const path = `${Deno.execPath().replace(/\/[^/]*$/, "")}:/usr/bin:/bin`;
    const env = { HOME: t.home, OPENVIKING_URL: fake.url, PATH: path, DENO_DIR: denoDir };
    const run = (command: string, args: string[]) =>
      new Deno.Command(command, { args, env, clearEnv: true, stdout: "piped", stderr: "piped" }).output();
    const out = await run(`${copy}/bin/openviking-kimi`, ["uninstall", "--purge", "--kimi-home", b]);
    const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, said);
    assertEquals(await exists(copy), false, said);
    const named = /^Kept: .* \(or run "(.+) replay"\)/m.exec(said.replace(/\n  +/g, " "));
    assertTrue(named, said);
    // The command install places again, not the checkout's task: the checkout may be gone by then.
    assertEquals(named[1], `${t.home}/.local/bin/openviking-kimi`, said);
    await t.run(runInstall);
    const replay = await run("sh", ["-c", `${named[1]} replay`]);
    assertEquals(replay.code, 0, `${named[1]} replay: ${new TextDecoder().decode(replay.stderr)}\n${said}`);
    assertEquals(fake.messages("kc-left").length, 1, "the queued write sent");
  },
});
