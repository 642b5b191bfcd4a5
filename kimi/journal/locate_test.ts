import { assertEquals } from "../../tests/support/assert.ts";
import { tempDir } from "../../tests/support/temp.ts";
import { locateJournal } from "./locate.ts";

/** Makes an empty main journal in session directory `sdir`; its path. */
async function journalIn(sdir: string): Promise<string> {
  await Deno.mkdir(`${sdir}/agents/main`, { recursive: true });
  await Deno.writeTextFile(`${sdir}/agents/main/wire.jsonl`, "");
  return `${sdir}/agents/main/wire.jsonl`;
}

Deno.test("locate: sessions/<workspace>/<id>/agents/main/wire.jsonl; invalid ids are refused", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir.path}/sessions/wd_empty`, { recursive: true });
  const path = await journalIn(`${dir.path}/sessions/wd_x_123/session_a`);
  assertEquals(await locateJournal(dir.path, "session_a"), { ok: true, path });
  assertEquals((await locateJournal(dir.path, "session_b")).ok, false);
  assertEquals((await locateJournal(dir.path, "../session_a")).ok, false);
  assertEquals((await locateJournal(`${dir.path}/none`, "session_a")).ok, false);
});

Deno.test("locate: only a regular file inside this home's sessions/ is a journal (a link out, a directory)", async () => {
  await using dir = await tempDir();
  const other = await journalIn(`${dir.path}/old/sessions/wd_x_123/session_a`);
  const own = await journalIn(`${dir.path}/new/sessions/wd_x_123/session_a`);
  await Deno.remove(own);
  await Deno.symlink(other, own);
  assertEquals((await locateJournal(`${dir.path}/new`, "session_a")).ok, false, "a link out of sessions/");
  await Deno.remove(own);
  await Deno.mkdir(own); // stat, never open: a FIFO there blocked the capture worker until someone wrote to it
  assertEquals((await locateJournal(`${dir.path}/new`, "session_a")).ok, false, "a directory is no journal");
});
