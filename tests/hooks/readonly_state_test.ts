/**
 * A state directory that cannot be written (as root too: a regular file where it goes, a read-only mount)
 * must not turn recall off, and capture must not send what it cannot record (the journal stays the truth).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FAKE_MEMORY_LINE } from "../support/fake-openviking.ts";
import { hookIn } from "../support/hook-context.ts";
import { cliArgs, denoEnv, runProcess } from "../support/run.ts";
import { doctorCheck, pathsUnder, stdinOf, type World, world } from "./world.ts";

const FIXTURE = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);
type Box = World & { log: string };

async function box(): Promise<Box> {
  const w = await world({ env: { OPENVIKING_DEBUG: "1", OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  await w.journal(await Deno.readTextFile(FIXTURE));
  const log = w.env.OPENVIKING_DEBUG_LOG = `${w.home}/hooks.log`;
  return { ...w, log };
}

/** The `done` lines of the log: [event, outcome]. */
async function outcomes(log: string): Promise<string[][]> {
  const lines = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l));
  return lines.filter((l) => l.stage === "done").map((l) => [l.event, l.outcome]);
}

/** Runs the prompt hook, then each capture event, with `run`; checks recall came and nothing was sent. */
async function recallButNoCapture(
  b: Box,
  run: (event: string, stdin: string) => Promise<{ stdout: string }>,
) {
  const prompt = await run(
    "user-prompt-submit",
    stdinOf("user-prompt-submit", b.session, { prompt: "how do I indent?" }),
  );
  assertTrue(
    prompt.stdout.endsWith(`${FAKE_MEMORY_LINE}\n</openviking-context>\n`),
    `recall works: ${prompt.stdout}`,
  );
  const captures = ["stop", "stop-failure", "interrupt", "session-end"];
  for (const event of captures) assertEquals((await run(event, stdinOf(event, b.session))).stdout, "");
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
    ...captures.map((e) => [e, "state-unwritable"]),
  ]);
}

Deno.test("~/.openviking is a regular file: the prompt hook recalls, capture sends nothing and says so, no temp file lingers; writable again, every turn is sent once", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "not a directory\n");
  const before = pathsUnder(b.home).filter((p) => p !== "/hooks.log");
  await recallButNoCapture(b, (event, stdin) => hookIn(event, { env: b.env, stdin }));
  assertEquals(pathsUnder(b.home).filter((p) => p !== "/hooks.log"), before, "nothing new, no temp file");
  assertEquals(await Deno.readTextFile(`${b.home}/.openviking`), "not a directory\n");
  // Writable again: the journal was the truth, the next captures send every turn once.
  await Deno.remove(`${b.home}/.openviking`);
  for (let i = 0; i < 2; i++) await b.hook("stop");
  assertEquals(b.stored().length, 6);
});

Deno.test("doctor names an unwritable state directory and the fix, and creates nothing", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "in the way\n");
  const check = await doctorCheck(b.env, "state-dirs");
  assertEquals(check.status, "fail");
  assertMatch(
    check.detail!.join("\n"),
    new RegExp(`cannot write ${b.home}/.openviking/hook-state/kimicode`),
  );
  assertMatch(check.fix ?? "", /OPENVIKING_HOOK_STATE_DIR/);
  assertEquals(check.code, 1);

  // A fresh home: doctor probes by writing, and leaves no directory it had to create.
  await Deno.remove(`${b.home}/.openviking`);
  assertEquals((await doctorCheck(b.env, "state-dirs")).status, "ok");
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
    const mount = 'mount -t tmpfs -o ro tmpfs "$1" && shift && exec "$@"';
    const argv = [
      "-rm",
      "sh",
      "-c",
      mount,
      "sh",
      `${b.home}/.openviking`,
      Deno.execPath(),
      ...args,
      "hook",
      event,
    ];
    const r = await runProcess("unshare", argv, { env: { ...denoEnv(), ...b.env }, clearEnv: true, stdin });
    assertEquals([r.code, r.stderr], [0, ""]);
    return r;
  };
  await recallButNoCapture(b, run);
  assertEquals(pathsUnder(`${b.home}/.openviking`), [], "the mount point underneath stayed empty");
});
