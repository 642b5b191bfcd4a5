import { assertEquals } from "../../tests/support/assert.ts";
import { tempDir } from "../../tests/support/temp.ts";
import { locateJournal, sessionDirFromIndex } from "./locate.ts";

/** Makes an empty main journal in session directory `sdir`; its path. */
async function journalIn(sdir: string): Promise<string> {
  await Deno.mkdir(`${sdir}/agents/main`, { recursive: true });
  await Deno.writeTextFile(`${sdir}/agents/main/wire.jsonl`, "");
  return `${sdir}/agents/main/wire.jsonl`;
}

Deno.test("index: last non-deleted row wins; tombstones delete; torn and garbled lines are tolerated", () => {
  const id = "session_1";
  const text = [
    JSON.stringify({ sessionId: id, sessionDir: "/a", workDir: "/w" }),
    "{torn",
    "garbage " + id,
    JSON.stringify({ sessionId: "session_10", sessionDir: "/other" }),
    JSON.stringify({ sessionId: id, sessionDir: "/b", workDir: "/w" }),
    '{"sessionId":"session_1","sessionDir":"/c"', // torn last line
  ].join("\n");
  assertEquals(sessionDirFromIndex(text, id), "/b");
  assertEquals(sessionDirFromIndex(`${text}\n${JSON.stringify({ sessionId: id, deleted: true })}`, id), null);
  assertEquals(sessionDirFromIndex(text, "session_2"), null);
});

Deno.test("locate: via the index, else by scanning sessions/*/<id>/; invalid ids are refused", async () => {
  await using dir = await tempDir();
  const home = dir.path;
  const sdir = `${home}/sessions/wd_x_123/session_a`;
  const path = await journalIn(sdir);
  assertEquals(await locateJournal(home, "session_a"), { ok: true, path, via: "scan" });
  const row = JSON.stringify({ sessionId: "session_a", sessionDir: sdir });
  await Deno.writeTextFile(`${home}/session_index.jsonl`, `${row}\n`);
  assertEquals((await locateJournal(home, "session_a")).ok && "index", "index");
  assertEquals((await locateJournal(home, "session_b")).ok, false);
  assertEquals((await locateJournal(home, "../session_a")).ok, false);
});

Deno.test("locate: an index that is no regular file is never opened; the scan finds the journal", async () => {
  // A FIFO blocked the capture worker until someone wrote to it (every Stop left one more hung), /dev/zero
  // never ended; stat refuses both alike (a device here: no process to make a FIFO).
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const path = await journalIn(`${dir.path}/sessions/wd_x_123/session_a`);
  await Deno.symlink("/dev/zero", `${dir.path}/session_index.jsonl`);
  assertEquals(await locateJournal(dir.path, "session_a"), { ok: true, path, via: "scan" });
});

Deno.test("locate: only a file inside this home's sessions/ is a journal (a copied home's index, a link out)", async () => {
  await using dir = await tempDir();
  const [home, elsewhere] = [`${dir.path}/new`, `${dir.path}/old/sessions/wd_x_123/session_a`];
  const other = await journalIn(elsewhere);
  const own = await journalIn(`${home}/sessions/wd_x_123/session_a`);
  await Deno.remove(own);
  await Deno.writeTextFile(
    `${home}/session_index.jsonl`,
    JSON.stringify({ sessionId: "session_a", sessionDir: elsewhere }),
  );
  assertEquals((await locateJournal(home, "session_a")).ok, false, "the index names another home");
  await Deno.symlink(other, own);
  assertEquals((await locateJournal(home, "session_a")).ok, false, "a link out of sessions/");
  await Deno.remove(own);
  await Deno.writeTextFile(own, "");
  assertEquals(await locateJournal(home, "session_a"), { ok: true, path: own, via: "scan" });
});
