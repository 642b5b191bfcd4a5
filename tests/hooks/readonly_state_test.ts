/**
 * Issue #11 finding 9, through the real entry point: a state directory that cannot be written must not turn
 * recall off, and capture must not send what it cannot record (the journal stays the truth). The tests run
 * as root too, where permission bits stop nothing, so the state is made unusable in ways that stop root as
 * well: a regular file where a directory should be and, where the platform allows it, a real read-only mount.
 * (A directory where the state file should be is damaged state, set aside: tests/hooks/damaged_state_test.ts.)
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FAKE_MEMORY_LINE, FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { cliArgs, denoEnv, runCli, runProcess } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const SESSION = "session_bb98d39e-e56d-47b5-bd98-4e903585486d";
const FIXTURE = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);

const payload = (event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ hook_event_name: event, session_id: SESSION, cwd: "/home/user/proj", ...extra });

interface Box {
  home: string;
  log: string;
  env: Record<string, string>;
  fake: FakeOpenViking;
  [Symbol.asyncDispose](): Promise<void>;
}

async function box(): Promise<Box> {
  const dir = await tempDir();
  const fake = await FakeOpenViking.start();
  const home = dir.path;
  await placeJournal(home, SESSION, await Deno.readTextFile(FIXTURE));
  const log = `${home}/hooks.log`;
  return {
    home,
    log,
    fake,
    env: {
      HOME: home,
      KIMI_CODE_HOME: `${home}/.kimi-code`,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      OPENVIKING_URL: fake.url,
      OPENVIKING_DEBUG: "1",
      OPENVIKING_DEBUG_LOG: log,
      OPENVIKING_WRITE_PATH_ASYNC: "0",
      OPENVIKING_CAPTURE_WAIT_MS: "0",
      OPENVIKING_TIMEOUT_MS: "1000",
    },
    async [Symbol.asyncDispose]() {
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

/** Every path under `dir` (what "no temp file lingers" compares). */
async function paths(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      out.push(`${d}/${e.name}`.slice(dir.length));
      if (e.isDirectory) await walk(`${d}/${e.name}`);
    }
  };
  await walk(dir);
  return out.sort();
}

/** The `done` lines of the log: [event, outcome]. */
async function outcomes(log: string): Promise<string[][]> {
  const lines = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l));
  return lines.filter((l) => l.stage === "done").map((l) => [l.event, l.outcome]);
}

/**
 * Runs the prompt hook, then each capture event, with `run` (in-process, or a process whose exit code and
 * stderr it checks); checks recall came and nothing was sent.
 */
async function recallButNoCapture(
  b: Box,
  run: (event: string, stdin: string) => Promise<{ stdout: string }>,
) {
  const prompt = await run("user-prompt-submit", payload("UserPromptSubmit", { prompt: "how do I indent?" }));
  assertTrue(
    prompt.stdout.endsWith(`${FAKE_MEMORY_LINE}\n</openviking-context>\n`),
    `recall works: ${prompt.stdout}`,
  );
  const captures = [["stop", "Stop"], ["stop-failure", "StopFailure"], ["interrupt", "Interrupt"], [
    "session-end",
    "SessionEnd",
  ]];
  for (const [event, name] of captures) {
    assertEquals((await run(event, payload(name))).stdout, "");
  }
  assertEquals(b.fake.requestsTo("POST /api/v1/search/search").length, 1);
  assertEquals(
    b.fake.requests.filter((q) => q.path.startsWith("/api/v1/sessions")).map((q) => q.route),
    [],
    "nothing sent that could not be recorded",
  );
  const log = await Deno.readTextFile(b.log);
  assertMatch(log, /"stage":"state-unwritable".*"effect":"nothing sent/);
  assertEquals(await outcomes(b.log), [
    ["user-prompt-submit", "injected"],
    ["stop", "state-unwritable"],
    ["stop-failure", "state-unwritable"],
    ["interrupt", "state-unwritable"],
    ["session-end", "state-unwritable"],
  ]);
}

Deno.test("~/.openviking is a regular file: the prompt hook recalls, capture sends nothing and says so, no temp file lingers", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "not a directory\n");
  const before = (await paths(b.home)).filter((p) => p !== "/hooks.log");
  await recallButNoCapture(b, (event, stdin) => hookIn(event, { env: b.env, stdin }));
  assertEquals((await paths(b.home)).filter((p) => p !== "/hooks.log"), before, "nothing new, no temp file");
  assertEquals(await Deno.readTextFile(`${b.home}/.openviking`), "not a directory\n");
});

Deno.test("a state that becomes writable again: the next capture sends every turn once", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "in the way\n");
  const stop = () => hookIn("stop", { env: b.env, stdin: payload("Stop") });
  assertEquals((await stop()).stdout, "");
  assertEquals(b.fake.messages(`kc-${SESSION}`).length, 0);
  await Deno.remove(`${b.home}/.openviking`);
  assertEquals((await stop()).stdout, "");
  assertEquals((await stop()).stdout, "");
  assertEquals(b.fake.messages(`kc-${SESSION}`).length, 6, "the journal was the truth: six messages, once");
});

Deno.test("doctor names an unwritable state directory and the fix, and creates nothing", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "in the way\n");
  const r = await runCli(["doctor", "--json"], { env: b.env, clearEnv: true });
  const report = JSON.parse(r.stdout) as {
    checks: { id: string; status: string; detail?: string[]; fix?: string }[];
  };
  const check = report.checks.find((c) => c.id === "state-dirs");
  assertEquals(check?.status, "fail");
  assertMatch(
    check!.detail!.join("\n"),
    new RegExp(`cannot write ${b.home}/.openviking/hook-state/kimicode`),
  );
  assertMatch(check!.fix ?? "", /OPENVIKING_HOOK_STATE_DIR/);
  assertEquals(r.code, 1);

  // A fresh home: doctor probes by writing, and leaves no directory it had to create.
  await Deno.remove(`${b.home}/.openviking`);
  const ok = await runCli(["doctor", "--json"], { env: b.env, clearEnv: true });
  const okReport = JSON.parse(ok.stdout) as { checks: { id: string; status: string }[] };
  assertEquals(okReport.checks.find((c) => c.id === "state-dirs")?.status, "ok");
  assertTrue(!(await Deno.stat(`${b.home}/.openviking`).then(() => true, () => false)), "nothing created");
});

/** Whether `unshare -rm` can mount a read-only tmpfs here (a user namespace and mount rights). */
async function readOnlyMountProblem(dir: string): Promise<string> {
  try {
    const out = await new Deno.Command("unshare", {
      args: [
        "-rm",
        "sh",
        "-c",
        'mount -t tmpfs -o ro tmpfs "$1" && ! touch "$1/probe" 2>/dev/null',
        "sh",
        dir,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    return out.success
      ? ""
      : `unshare/mount refused: ${new TextDecoder().decode(out.stderr).trim() || out.code}`;
  } catch (error) {
    return `no unshare: ${(error as Error).message}`;
  }
}

Deno.test("a read-only mount at ~/.openviking: recall works, capture sends nothing (skipped where mounts are not allowed)", async () => {
  await using b = await box();
  await Deno.mkdir(`${b.home}/.openviking`);
  const problem = Deno.build.os === "linux"
    ? await readOnlyMountProblem(`${b.home}/.openviking`)
    : "not Linux";
  if (problem) {
    console.log(`skipped: a read-only mount needs unshare -rm and tmpfs (${problem})`);
    return;
  }
  const args = await cliArgs();
  const run = async (event: string, stdin: string) => {
    const r = await runProcess("unshare", [
      "-rm",
      "sh",
      "-c",
      'mount -t tmpfs -o ro tmpfs "$1" && shift && exec "$@"',
      "sh",
      `${b.home}/.openviking`,
      Deno.execPath(),
      ...args,
      "hook",
      event,
    ], { env: { ...denoEnv(), ...b.env }, clearEnv: true, stdin });
    assertEquals([r.code, r.stderr], [0, ""]);
    return r;
  };
  await recallButNoCapture(b, run);
  assertEquals(await paths(`${b.home}/.openviking`), [], "the mount point underneath stayed empty");
});
