import { assertEquals } from "../../tests/support/assert.ts";
import { tempDir } from "../../tests/support/temp.ts";
import { locateJournal, sessionDirFromIndex } from "./locate.ts";

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
  await Deno.mkdir(`${sdir}/agents/main`, { recursive: true });
  await Deno.writeTextFile(`${sdir}/agents/main/wire.jsonl`, "");
  assertEquals(await locateJournal(home, "session_a"), {
    ok: true,
    path: `${sdir}/agents/main/wire.jsonl`,
    via: "scan",
  });
  await Deno.writeTextFile(
    `${home}/session_index.jsonl`,
    JSON.stringify({ sessionId: "session_a", sessionDir: sdir }) + "\n",
  );
  assertEquals((await locateJournal(home, "session_a")).ok && "index", "index");
  assertEquals((await locateJournal(home, "session_b")).ok, false);
  assertEquals((await locateJournal(home, "../session_a")).ok, false);
});

Deno.test("locate: an index that is no regular file is never opened; the scan finds the journal", async () => {
  // A FIFO blocked the capture worker until someone wrote to it (every Stop left one more hung), /dev/zero
  // never ended; stat refuses both alike (a device here: no process to make a FIFO).
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const sdir = `${dir.path}/sessions/wd_x_123/session_a`;
  await Deno.mkdir(`${sdir}/agents/main`, { recursive: true });
  await Deno.writeTextFile(`${sdir}/agents/main/wire.jsonl`, "");
  await Deno.symlink("/dev/zero", `${dir.path}/session_index.jsonl`);
  assertEquals(await locateJournal(dir.path, "session_a"), {
    ok: true,
    path: `${sdir}/agents/main/wire.jsonl`,
    via: "scan",
  });
});

Deno.test("locate: only a file inside this home's sessions/ is a journal (a copied home's index, a link out)", async () => {
  await using dir = await tempDir();
  const [home, elsewhere] = [`${dir.path}/new`, `${dir.path}/old/sessions/wd_x_123/session_a`];
  await Deno.mkdir(`${elsewhere}/agents/main`, { recursive: true });
  await Deno.writeTextFile(`${elsewhere}/agents/main/wire.jsonl`, "");
  await Deno.mkdir(`${home}/sessions/wd_x_123/session_a/agents/main`, { recursive: true });
  await Deno.writeTextFile(
    `${home}/session_index.jsonl`,
    JSON.stringify({ sessionId: "session_a", sessionDir: elsewhere }),
  );
  assertEquals((await locateJournal(home, "session_a")).ok, false, "the index names another home");
  const own = `${home}/sessions/wd_x_123/session_a/agents/main/wire.jsonl`;
  await Deno.symlink(`${elsewhere}/agents/main/wire.jsonl`, own);
  assertEquals((await locateJournal(home, "session_a")).ok, false, "a link out of sessions/");
  await Deno.remove(own);
  await Deno.writeTextFile(own, "");
  assertEquals(await locateJournal(home, "session_a"), { ok: true, path: own, via: "scan" });
});
