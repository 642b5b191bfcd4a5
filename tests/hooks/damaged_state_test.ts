/**
 * A damaged capture state (empty, a directory, a FIFO) once made the next Stop resend the whole session: it is
 * set aside and kept, and the cursor recovered from what OpenViking holds. Torn and garbage bytes take the same
 * path (set aside by tests/runtime/state_test.ts's table, recovered here as the empty file is).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import type { FakeOpenViking } from "../support/fake-openviking.ts";
import { runCli } from "../support/run.ts";
import { JournalBuilder } from "../support/journal.ts";
import { stdinOf, world } from "./world.ts";

const threeTurns = () => {
  const j = new JournalBuilder();
  for (let i = 0; i < 3; i++) j.simpleTurn(`question ${i}`, `answer ${i}`);
  return j.toString();
};
const asideOf = async (dir: string, session: string) =>
  (await Array.fromAsync(Deno.readDir(dir))).filter((e) => e.name.startsWith(`${session}.json.damaged-`));

const DAMAGES: [string, (file: string) => Promise<void>, ((f: FakeOpenViking) => void)?][] = [
  ["left empty", (f) => Deno.writeTextFile(f, "", { mode: 0o600 })],
  ["replaced by a directory", async (f) => {
    await Deno.mkdir(f);
    await Deno.writeTextFile(`${f}/notes.txt`, "someone's files");
  }],
  [
    "left empty while the server cannot say what it holds (nothing sent until it can)",
    (f) => Deno.writeTextFile(f, ""),
    (fake) => fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 }),
  ],
  [
    "left empty while a proxy's 404 page answers for the server (nothing sent until it can)",
    (f) => Deno.writeTextFile(f, ""),
    (fake) => fake.fault({ route: "GET /api/v1/sessions/:id*", raw: { status: 404, body: "<h1>404</h1>" } }),
  ],
];

for (const [name, damage, fault] of DAMAGES) {
  Deno.test(`a capture state file ${name}: set aside, and the next Stop sends only the new turn`, async () => {
    const log = "hooks.log";
    await using w = await world({ env: { OPENVIKING_DEBUG: "1" } });
    w.env.OPENVIKING_DEBUG_LOG = `${w.home}/${log}`;
    const journal = await w.journal(threeTurns());
    await w.hook("stop");
    assertEquals([w.stored().length, w.commits()], [6, 1]);
    const file = w.stateFile();
    await Deno.remove(file);
    await damage(file);
    const damaged = await Deno.lstat(file).then((i) => i.isFile ? Deno.readFile(file) : undefined);
    await Deno.writeTextFile(
      journal,
      new JournalBuilder({ continueAt: 3 }).simpleTurn("question 3", "answer 3").toString(),
      {
        append: true,
      },
    );
    if (fault) {
      fault(w.fake);
      await w.hook("stop");
      assertEquals(w.stored().length, 6, "nothing sent while the server cannot say what it holds");
      w.fake.clearFaults();
    }
    await w.hook("stop");
    const stored = w.fake.messages(w.ov).map((m) => m.content);
    assertEquals(
      stored,
      [0, 1, 2, 3].flatMap((i) => [`question ${i}`, `answer ${i}`]),
      "8 messages, once each",
    );
    const state = await w.state();
    assertEquals([state.recover, state.ackedBelow], [undefined, 4], "the cursor is whole again");
    const dir = `${w.home}/.openviking/hook-state/kimicode`;
    const aside = await asideOf(dir, w.session);
    assertEquals(aside.length, 1, "kept where the user sees it");
    const kept = `${dir}/${aside[0].name}`;
    if (damaged) assertEquals(await Deno.readFile(kept), damaged, "the damaged bytes, as they were");
    else assertTrue((await Deno.lstat(kept)).isDirectory);
    assertMatch(
      await Deno.readTextFile(w.env.OPENVIKING_DEBUG_LOG),
      /"stage":"state-recovered".*"held":6,"planned":8/,
    );
  });
}

Deno.test("a FIFO where the capture state file goes: Stop never opens it, sets it aside and captures", async () => {
  if (Deno.build.os === "windows") return;
  await using w = await world({ env: { OPENVIKING_WRITE_PATH_ASYNC: "0" } });
  await w.journal(threeTurns());
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
