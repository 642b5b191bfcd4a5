/**
 * What goes wrong on the user's disk, through the hooks: a damaged capture state (set aside, the cursor
 * recovered from what OpenViking holds), a cursor naming another file, a state directory that cannot be written
 * (recall still works, capture sends nothing it cannot record), a nearly full disk (no resend, no temp file).
 */

import { canMountTmpfs } from "../support/temp.ts";
import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FAKE_MEMORY_LINE, type FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, runCli, runProcess } from "../support/run.ts";
import { doctorCheck, pathsUnder, RESUMED, stdinOf, type World, world } from "./world.ts";

const contents = (w: World) => w.fake.messages(w.ov).map((m) => m.content);
const expected = (n: number) => Array.from({ length: n }, (_, i) => [`question ${i}`, `answer ${i}`]).flat();
const asideOf = async (dir: string, session: string) =>
  (await Array.fromAsync(Deno.readDir(dir))).filter((e) => e.name.startsWith(`${session}.json.damaged-`));

const DAMAGES: [string, (file: string) => Promise<void>, ((f: FakeOpenViking) => void)?][] = [
  ["left empty", (f) => Deno.writeTextFile(f, "", { mode: 0o600 })],
  [
    "replaced by a directory",
    (f) => Deno.mkdir(f).then(() => Deno.writeTextFile(`${f}/notes.txt`, "someone's")),
  ],
  [
    "left empty while the server cannot say what it holds (nothing sent until it can)",
    (f) => Deno.writeTextFile(f, ""),
    (fake) => fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 }),
  ],
];

for (const [name, damage, fault] of DAMAGES) {
  Deno.test(`a capture state file ${name}: set aside, and the next Stop sends only the new turn`, async () => {
    await using w = await world({ env: { OPENVIKING_DEBUG: "1" } });
    const log = w.env.OPENVIKING_DEBUG_LOG = `${w.home}/hooks.log`;
    await w.turns(3);
    await w.hook("stop");
    assertEquals([w.stored().length, w.commits()], [6, 1]);
    const file = w.stateFile();
    await Deno.remove(file);
    await damage(file);
    const damaged = await Deno.lstat(file).then((i) => i.isFile ? Deno.readFile(file) : undefined);
    await w.turns(1);
    if (fault) {
      fault(w.fake);
      await w.hook("stop");
      assertEquals(w.stored().length, 6, "nothing sent while the server cannot say what it holds");
      w.fake.clearFaults();
    }
    await w.hook("stop");
    assertEquals(contents(w), expected(4), "8 messages, once each");
    const state = await w.state();
    assertEquals([state.recover, state.ackedBelow], [undefined, 4], "the cursor is whole again");
    const dir = `${w.home}/.openviking/hook-state/kimicode`;
    const aside = await asideOf(dir, w.session);
    assertEquals(aside.length, 1, "kept where the user sees it");
    const kept = `${dir}/${aside[0].name}`;
    if (damaged) assertEquals(await Deno.readFile(kept), damaged, "the damaged bytes, as they were");
    else assertTrue((await Deno.lstat(kept)).isDirectory);
    assertMatch(await Deno.readTextFile(log), /"stage":"state-recovered".*"held":6,"planned":8/);
  });
}

Deno.test("a FIFO where the capture state file goes: Stop never opens it, sets it aside and captures", async () => {
  if (Deno.build.os === "windows") return;
  await using w = await world({ env: { OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  await w.turns(3);
  const states = `${w.home}/.openviking/hook-state/kimicode`;
  await Deno.mkdir(states, { recursive: true, mode: 0o700 });
  assertEquals((await new Deno.Command("mkfifo", { args: [w.stateFile()] }).output()).code, 0);
  // A process: reading a FIFO blocks until someone writes to it.
  const r = await runCli(["hook", "stop"], {
    env: w.env,
    clearEnv: true,
    stdin: stdinOf("stop"),
    timeoutMs: 30_000,
  });
  assertEquals([r.code, r.stdout, w.stored().length], [0, "", 6]);
  assertEquals(
    (await asideOf(states, w.session)).map((e) => e.isFile),
    [false],
    "the FIFO kept aside, as it was",
  );
});

const other = (w: World) =>
  placeJournal(w.home, "session_other", new JournalBuilder().simpleTurn("o", "x").toString());
const OTHER_FILES: [string, (w: World) => Promise<string>][] = [
  ["another session's journal", other],
  ["/etc/passwd", () => Promise.resolve("/etc/passwd")],
];
for (const [name, target] of OTHER_FILES) {
  Deno.test(`a capture cursor naming ${name}: this session's journal is captured, once`, async () => {
    await using w = await world();
    await w.turns(3);
    const path = await target(w);
    await Deno.mkdir(`${w.home}/.openviking/hook-state/kimicode`, { recursive: true, mode: 0o700 });
    // As a capture of that file would have left it: two turns acknowledged, the cursor at its end.
    const cursor = { path, offset: (await Deno.stat(path)).size, fileId: "1:1", tailHash: "x", nextIndex: 2 };
    await Deno.writeTextFile(
      w.stateFile(),
      JSON.stringify({ version: 1, capturedKeys: [], ackedBelow: 2, cursor }),
    );
    for (let i = 0; i < 2; i++) await w.hook("stop");
    assertEquals(contents(w), expected(3), "this session's 6, once each");
  });
}

Deno.test("Kimi's home copied to a new KIMI_CODE_HOME, the old copy kept: the new turn is captured, once", async () => {
  await using w = await world();
  const old = await w.turns(3);
  await w.hook("stop");
  const moved = `${w.home}/kimi-new`;
  assertEquals(
    (await new Deno.Command("cp", { args: ["-a", `${w.home}/.kimi-code`, moved] }).output()).code,
    0,
  );
  // The copied index still names the old home's session directory (Kimi writes absolute paths).
  const fourth = new JournalBuilder({ continueAt: 3 }).simpleTurn("question 3", "answer 3").toString();
  await Deno.writeTextFile(old.replace(`${w.home}/.kimi-code`, moved), fourth, { append: true });
  w.env.KIMI_CODE_HOME = moved;
  w.fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 });
  await w.hook("stop");
  assertEquals(w.stored().length, 6, "nothing sent while the server cannot say what it holds");
  w.fake.clearFaults();
  for (let i = 0; i < 2; i++) await w.hook("stop");
  assertEquals(contents(w), expected(4), "the fourth turn, once");
});

/** A world on the recorded session whose hooks log to `log`. */
async function box() {
  const w = await world({ env: { OPENVIKING_DEBUG: "1", OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  await w.journal(await Deno.readTextFile(RESUMED));
  return Object.assign(w, { log: w.env.OPENVIKING_DEBUG_LOG = `${w.home}/hooks.log` });
}

/** Runs the prompt hook, then each capture event, with `run`; checks recall came and nothing was sent. */
async function recallButNoCapture(
  b: World & { log: string },
  run: (event: string, stdin: string) => Promise<{ stdout: string }>,
) {
  const prompt = await run(
    "user-prompt-submit",
    stdinOf("user-prompt-submit", b.session, { prompt: "indent?" }),
  );
  assertTrue(
    prompt.stdout.endsWith(`${FAKE_MEMORY_LINE}\n</openviking-context>\n`),
    `recall: ${prompt.stdout}`,
  );
  const captures = ["stop", "stop-failure", "interrupt", "session-end"];
  for (const event of captures) assertEquals((await run(event, stdinOf(event, b.session))).stdout, "");
  assertEquals(b.fake.requestsTo("POST /api/v1/search/search").length, 1);
  const sent = b.fake.requests.filter((q) => q.path.startsWith("/api/v1/sessions")).map((q) => q.route);
  assertEquals(sent, [], "nothing sent that could not be recorded");
  const log = await Deno.readTextFile(b.log);
  assertMatch(log, /"stage":"state-unwritable".*"effect":"nothing sent/);
  const outcomes = log.trim().split("\n").map((l) => JSON.parse(l)).filter((l) => l.stage === "done");
  const want = [["user-prompt-submit", "injected"], ...captures.map((e) => [e, "state-unwritable"])];
  assertEquals(outcomes.map((l) => [l.event, l.outcome]), want);
}

Deno.test("~/.openviking is a regular file: the prompt hook recalls, capture sends nothing and says so, no temp file lingers; writable again, every turn is sent once; doctor names it and the fix, and creates nothing", async () => {
  await using b = await box();
  await Deno.writeTextFile(`${b.home}/.openviking`, "not a directory\n");
  const before = pathsUnder(b.home).filter((p) => p !== "/hooks.log");
  await recallButNoCapture(b, (event, stdin) => hookIn(event, { env: b.env, stdin }));
  assertEquals(pathsUnder(b.home).filter((p) => p !== "/hooks.log"), before, "nothing new, no temp file");
  assertEquals(await Deno.readTextFile(`${b.home}/.openviking`), "not a directory\n");
  const check = await doctorCheck(b.env, "state-dirs");
  assertEquals([check.status, check.code], ["fail", 1]);
  assertMatch(check.detail!.join("\n"), new RegExp(`cannot write ${b.home}/.openviking/hook-state/kimicode`));
  assertMatch(check.fix ?? "", /OPENVIKING_HOOK_STATE_DIR/);
  // Writable again: doctor probes by writing and leaves no directory it had to create; the journal was the
  // truth, the next captures send every turn once.
  await Deno.remove(`${b.home}/.openviking`);
  assertEquals((await doctorCheck(b.env, "state-dirs")).status, "ok");
  assertTrue(!(await Deno.stat(`${b.home}/.openviking`).then(() => true, () => false)), "nothing created");
  for (let i = 0; i < 2; i++) await b.hook("stop");
  assertEquals(b.stored().length, 6);
});

Deno.test("a read-only mount at ~/.openviking: recall works, capture sends nothing (skipped where mounts are not allowed)", async () => {
  await using b = await box();
  const ov = `${b.home}/.openviking`;
  await Deno.mkdir(ov);
  const mount = 'mount -t tmpfs -o ro tmpfs "$1"';
  const probe = Deno.build.os !== "linux" ? undefined : await new Deno.Command("unshare", {
    args: ["-rm", "sh", "-c", `${mount} && ! touch "$1/probe" 2>/dev/null`, "sh", ov],
    stdout: "null",
    stderr: "piped",
  }).output().catch(() => undefined);
  if (!probe?.success) {
    const why = probe ? new TextDecoder().decode(probe.stderr).trim() : "none";
    return console.log(`skipped: a read-only mount needs unshare -rm and tmpfs (${why})`);
  }
  const args = await cliArgs();
  await recallButNoCapture(b, async (event, stdin) => {
    const argv = [
      "-rm",
      "sh",
      "-c",
      `${mount} && shift && exec "$@"`,
      "sh",
      ov,
      Deno.execPath(),
      ...args,
      "hook",
      event,
    ];
    const r = await runProcess("unshare", argv, { env: { ...denoEnv(), ...b.env }, clearEnv: true, stdin });
    assertEquals([r.code, r.stderr], [0, ""]);
    return r;
  });
  assertEquals(pathsUnder(ov), [], "the mount point underneath stayed empty");
});

/** Fills `dir`'s file system, leaving `room` bytes (pages of 4 KiB on tmpfs). */
async function fill(dir: string, room: number): Promise<void> {
  using filler = await Deno.open(`${dir}/filler`, { write: true, create: true, truncate: true });
  while (await filler.write(new Uint8Array(4096)).catch(() => 0)); // until full
  await Deno.truncate(`${dir}/filler`, Math.max(0, (await Deno.stat(`${dir}/filler`)).size - room));
}

Deno.test({
  name:
    "disk nearly full under ~/.openviking: no message is sent twice, none is lost, no temp file lingers " +
    "(needs a tmpfs mount: root + CAP_SYS_ADMIN)",
  ignore: !canMountTmpfs(),
  async fn() {
    for (const pages of [0, 1, 2, 3, 4, 6, 8]) {
      await using w = await world({
        env: { OPENVIKING_TIMEOUT_MS: "2000", OPENVIKING_WRITE_PATH_ASYNC: "0" },
      });
      const ov = `${w.home}/.openviking`;
      await Deno.mkdir(ov, { mode: 0o700 });
      await new Deno.Command("mount", { args: ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", ov] })
        .output();
      try {
        // Some state first (as in a running session), then the disk fills up with a little room left.
        await w.turns(1);
        await w.hook("stop");
        await fill(ov, pages * 4096);
        for (const down of [false, true, false, true, false]) {
          await w.turns(1);
          if (down) w.fake.fault({ route: "*", status: 503 });
          else w.fake.clearFaults();
          await w.hook("stop");
          await w.hook("session-start");
        }
        // The disk is freed and the server is up: everything is delivered, exactly once each.
        w.fake.clearFaults();
        await Deno.remove(`${ov}/filler`);
        await w.hook("stop");
        assertEquals((await w.cli("replay")).code, 0);
        const want = [0, 1, 2, 3, 4, 5].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
        assertEquals(w.stored(), want, `${pages} page(s) of room: each message once, in order`);
        assertEquals(
          pathsUnder(ov, (p) => p.endsWith(".tmp")),
          [],
          `${pages} page(s) of room: no temp file left`,
        );
      } finally {
        await new Deno.Command("umount", { args: [ov] }).output();
      }
    }
  },
});
