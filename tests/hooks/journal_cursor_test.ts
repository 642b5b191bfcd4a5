/**
 * A cursor naming another file (another session's journal, /etc/passwd, a copied Kimi home's old copy) is
 * recovered from what OpenViking holds: this session's journal is captured, no turn lost, none twice.
 */

import { assertEquals } from "../support/assert.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { world } from "./world.ts";

/** `n` turns from `first` on, as a journal's text. */
const turns = (first: number, n: number, word = "question") => {
  const j = new JournalBuilder(first ? { continueAt: first } : {});
  for (let i = first; i < first + n; i++) j.simpleTurn(`${word} ${i}`, `answer ${i}`);
  return j.toString();
};
const expected = (n: number) => Array.from({ length: n }, (_, i) => [`question ${i}`, `answer ${i}`]).flat();

for (
  const [name, target] of [
    [
      "another session's journal",
      (home: string) => placeJournal(home, "session_other", turns(0, 1, "other")),
    ],
    ["/etc/passwd", () => Promise.resolve("/etc/passwd")],
  ] as const
) {
  Deno.test(`a capture cursor naming ${name}: this session's journal is captured, once`, async () => {
    await using w = await world();
    await w.journal(turns(0, 3));
    const path = await target(w.home);
    await Deno.mkdir(`${w.home}/.openviking/hook-state/kimicode`, { recursive: true, mode: 0o700 });
    // As a capture of that file would have left it: two turns acknowledged, the cursor at its end.
    const cursor = { path, offset: (await Deno.stat(path)).size, fileId: "1:1", tailHash: "x", nextIndex: 2 };
    await Deno.writeTextFile(
      w.stateFile(),
      JSON.stringify({ version: 1, capturedKeys: [], ackedBelow: 2, cursor }),
    );
    for (let i = 0; i < 2; i++) await w.hook("stop");
    assertEquals(w.fake.messages(w.ov).map((m) => m.content), expected(3), "this session's 6, once each");
  });
}

Deno.test("Kimi's home copied to a new KIMI_CODE_HOME, the old copy kept: the new turn is captured, once", async () => {
  await using w = await world();
  const old = await w.journal(turns(0, 3));
  await w.hook("stop");
  const moved = `${w.home}/kimi-new`;
  assertEquals(
    (await new Deno.Command("cp", { args: ["-a", `${w.home}/.kimi-code`, moved] }).output()).code,
    0,
  );
  // The copied index still names the old home's session directory (Kimi writes absolute paths).
  await Deno.writeTextFile(old.replace(`${w.home}/.kimi-code`, moved), turns(3, 1), { append: true });
  w.env.KIMI_CODE_HOME = moved;
  w.fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 });
  await w.hook("stop");
  assertEquals(w.stored().length, 6, "nothing sent while the server cannot say what it holds");
  w.fake.clearFaults();
  for (let i = 0; i < 2; i++) await w.hook("stop");
  assertEquals(w.fake.messages(w.ov).map((m) => m.content), expected(4), "the fourth turn, once");
});
