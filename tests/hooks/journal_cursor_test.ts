/**
 * The capture state's cursor names a journal path. Found by an attacker: a cursor naming another session's
 * journal stored that file's messages under this session and never sent this session's; one naming /etc/passwd
 * delivered nothing, forever; a Kimi home copied to a new KIMI_CODE_HOME (the old copy kept, its index rows
 * naming the old place) went on reading the old copy. The journal is the one located for this session in this
 * Kimi home; a cursor naming any other file is recovered from what OpenViking holds: no turn lost, none twice.
 */

import { assertEquals } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";

const SESSION = "session_cursor-owner";
const OV_SESSION = `kc-${SESSION}`;
const stop = JSON.stringify({ hook_event_name: "Stop", session_id: SESSION, cwd: "/home/user/proj" });

/** `n` turns from `first` on, as a journal's text (appended to one of `first` turns when `first` > 0). */
const turns = (first: number, n: number, word = "question") => {
  const j = new JournalBuilder(first ? { continueAt: first } : {});
  for (let i = first; i < first + n; i++) j.simpleTurn(`${word} ${i}`, `answer ${i}`);
  return j.toString();
};

/** What `n` turns put on the server, in order. */
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
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start();
    const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
    await placeJournal(dir.path, SESSION, turns(0, 3));
    const path = await target(dir.path);
    const stateDir = `${dir.path}/.openviking/hook-state/kimicode`;
    await Deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
    const size = (await Deno.stat(path)).size;
    // As a capture of that file would have left it: two turns acknowledged, the cursor at its end.
    const cursor = { path, offset: size, fileId: "1:1", tailHash: "x", nextIndex: 2 };
    await Deno.writeTextFile(
      `${stateDir}/${SESSION}.json`,
      JSON.stringify({ version: 1, capturedKeys: [], ackedBelow: 2, cursor }),
    );
    for (let i = 0; i < 2; i++) assertEquals((await hookIn("stop", { env, stdin: stop })).stdout, "");
    assertEquals(fake.messages(OV_SESSION).map((m) => m.content), expected(3), "this session's 6, once each");
  });
}

Deno.test("Kimi's home copied to a new KIMI_CODE_HOME, the old copy kept: the new turn is captured, once", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_CAPTURE_WAIT_MS: "0" });
  const old = await placeJournal(dir.path, SESSION, turns(0, 3));
  assertEquals((await hookIn("stop", { env, stdin: stop })).stdout, "");
  assertEquals(fake.messages(OV_SESSION).length, 6);
  const moved = `${dir.path}/kimi-new`;
  const cp = await new Deno.Command("cp", { args: ["-a", `${dir.path}/.kimi-code`, moved] }).output();
  assertEquals(cp.code, 0);
  // The copied index still names the old home's session directory (Kimi writes absolute paths).
  await Deno.writeTextFile(old.replace(`${dir.path}/.kimi-code`, moved), turns(3, 1), { append: true });
  const movedEnv = { ...env, KIMI_CODE_HOME: moved };
  // While the server cannot say what the session holds, nothing is sent; the recovery waits for it.
  fake.fault({ route: "GET /api/v1/sessions/:id*", status: 503 });
  assertEquals((await hookIn("stop", { env: movedEnv, stdin: stop })).stdout, "");
  assertEquals(fake.messages(OV_SESSION).length, 6, "nothing sent while the server cannot say");
  fake.clearFaults();
  for (let i = 0; i < 2; i++) assertEquals((await hookIn("stop", { env: movedEnv, stdin: stop })).stdout, "");
  assertEquals(fake.messages(OV_SESSION).map((m) => m.content), expected(4), "the fourth turn, once");
});
