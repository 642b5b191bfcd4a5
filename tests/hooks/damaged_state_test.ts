/**
 * Issue 19 §7, through the real entry point: a capture state file that is empty, half-written, garbage or a
 * directory made the next Stop resend the whole session (14 messages for 8, silently). Now the damaged file is
 * set aside and kept, the log says so, and the cursor is recovered from what OpenViking already holds (its
 * newest message, here in the archive of the last commit): the next Stop sends only the new turn.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";

const SESSION = "session_damaged-state";
const OV_SESSION = `kc-${SESSION}`;

const stop = JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: "/home/user/proj" });

/** Three turns captured and committed, the state then damaged by `damage`, a fourth turn, Stop again. */
async function recoverAfter(
  damage: (file: string, intact: string) => Promise<void>,
  fault?: (fake: FakeOpenViking) => void,
): Promise<void> {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const log = `${dir.path}/hooks.log`;
  const env = {
    HOME: dir.path,
    KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    OPENVIKING_URL: fake.url,
    OPENVIKING_DEBUG: "1",
    OPENVIKING_DEBUG_LOG: log,
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_TIMEOUT_MS: "1000",
    OPENVIKING_COMMIT_POLICY: "every-turn",
  };
  const j = new JournalBuilder();
  for (let i = 0; i < 3; i++) j.simpleTurn(`question ${i}`, `answer ${i}`);
  const journal = await placeJournal(dir.path, SESSION, j.toString());
  const run = async () => {
    const r = await hookIn("stop", { env, stdin: stop });
    assertEquals(r.stdout, "");
  };
  await run();
  assertEquals([fake.messages(OV_SESSION).length, fake.sessions.get(OV_SESSION)?.commits], [6, 1]);
  const file = `${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`;
  const intact = await Deno.readTextFile(file);
  await Deno.remove(file);
  await damage(file, intact);
  const damaged = await Deno.lstat(file).then((i) => i.isFile ? Deno.readFile(file) : undefined);
  const next = new JournalBuilder({ continueAt: 3 }).simpleTurn("question 3", "answer 3");
  await Deno.writeTextFile(journal, next.toString(), { append: true });
  if (fault) {
    fault(fake);
    await run();
    assertEquals(
      fake.messages(OV_SESSION).length,
      6,
      "nothing sent while the server cannot say what it holds",
    );
    fake.clearFaults();
  }
  await run();

  const stored = fake.messages(OV_SESSION).map((m) => m.content);
  assertEquals(
    stored,
    [0, 1, 2, 3].flatMap((i) => [`question ${i}`, `answer ${i}`]),
    "8 messages, once each",
  );
  const state = await readState(file);
  assertEquals([state.recover, state.ackedBelow], [undefined, 4], "the cursor is whole again");
  const aside = (await Array.fromAsync(Deno.readDir(`${dir.path}/.openviking/hook-state/kimicode`)))
    .map((e) => e.name).filter((n) => n.startsWith(`${SESSION}.json.damaged-`));
  assertEquals(aside.length, 1, `kept where the user sees it: ${aside}`);
  const kept = `${dir.path}/.openviking/hook-state/kimicode/${aside[0]}`;
  if (damaged) assertEquals(await Deno.readFile(kept), damaged, "the damaged bytes, as they were");
  else assertTrue((await Deno.lstat(kept)).isDirectory);
  assertMatch(await Deno.readTextFile(log), /"stage":"state-recovered".*"held":6,"planned":8/);
}

Deno.test("a capture state file left empty: the next Stop sends only the new turn", async () => {
  await recoverAfter((f) => Deno.writeTextFile(f, "", { mode: 0o600 }));
});

Deno.test("a capture state file half-written: the next Stop sends only the new turn", async () => {
  // The first half of what the capture wrote: a write cut off by a crash.
  await recoverAfter((f, intact) => Deno.writeTextFile(f, intact.slice(0, Math.floor(intact.length / 2))));
});

Deno.test("a capture state file of garbage bytes: the next Stop sends only the new turn", async () => {
  await recoverAfter((f) => Deno.writeFile(f, new Uint8Array([0xff, 0xd8, 0x00, 0x13, 0x9c, 0x0a, 0x7f])));
});

Deno.test("a directory where the capture state file goes: set aside, and the next Stop sends only the new turn", async () => {
  await recoverAfter(async (f) => {
    await Deno.mkdir(f);
    await Deno.writeTextFile(`${f}/notes.txt`, "someone's files");
  });
});

Deno.test("a damaged capture state while the server cannot say what it holds: nothing sent until it can", async () => {
  await recoverAfter(
    (f) => Deno.writeTextFile(f, ""),
    (fake) => fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 }),
  );
});

Deno.test("a FIFO where the capture state file goes: Stop never opens it, sets it aside and captures", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, {
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
  });
  const j = new JournalBuilder();
  for (let i = 0; i < 3; i++) j.simpleTurn(`question ${i}`, `answer ${i}`);
  await placeJournal(dir.path, SESSION, j.toString());
  const states = `${dir.path}/.openviking/hook-state/kimicode`;
  await Deno.mkdir(states, { recursive: true, mode: 0o700 });
  assertEquals((await new Deno.Command("mkfifo", { args: [`${states}/${SESSION}.json`] }).output()).code, 0);
  // Reading a FIFO blocks until someone writes to it: the hook hung until it was killed.
  const r = await runCli(["hook", "stop"], { env, clearEnv: true, stdin: stop, timeoutMs: 30_000 });
  assertEquals([r.code, r.stdout], [0, ""]);
  assertEquals(fake.messages(OV_SESSION).length, 6, "the session captured");
  const aside = (await Array.fromAsync(Deno.readDir(states))).filter((e) =>
    e.name.includes(".json.damaged-")
  );
  assertEquals(aside.map((e) => e.isFile), [false], "the FIFO kept aside, as it was");
});
