import { assertEquals, assertTrue } from "../../tests/support/assert.ts";
import { tempDir } from "../../tests/support/temp.ts";
import { cursorAt, readJournal } from "./read.ts";

const line = (o: unknown) => `${JSON.stringify(o)}\n`;

Deno.test("read: complete lines only; a last line without newline is left for later", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  await Deno.writeTextFile(p, line({ a: 1 }) + line({ b: 2 }) + '{"c":3');
  const r1 = await readJournal(p);
  assertEquals(r1.lines.map((l) => l.value), [{ a: 1 }, { b: 2 }]);
  assertEquals(r1.endOffset, line({ a: 1 }).length + line({ b: 2 }).length);
  await Deno.writeTextFile(p, "}\n" + line({ d: 4 }), { append: true });
  const r2 = await readJournal(p, await cursorAt(p, r1.endOffset));
  assertEquals(r2.lines.map((l) => l.value), [{ c: 3 }, { d: 4 }]);
  assertEquals(r2.rewritten, false);
  assertEquals(r2.lines[0].offset, r1.endOffset);
});

Deno.test("read: garbage lines, blank lines, arrays and scalars are skipped and counted", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  await Deno.writeTextFile(p, `not json\n\n[1,2]\n42\n${line({ ok: true })}\u0000\u0001binary\n`);
  const r = await readJournal(p);
  assertEquals(r.lines.map((l) => l.value), [{ ok: true }]);
  assertEquals(r.garbage, 4);
});

Deno.test("read: a rewritten (shorter, or same length with other bytes) or replaced file is re-read from 0", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  const content = line({ n: 1 }) + line({ n: 2 });
  await Deno.writeTextFile(p, content);
  const c = await cursorAt(p, content.length);
  // shorter
  await Deno.writeTextFile(p, line({ n: 1 }));
  assertEquals((await readJournal(p, c)).rewritten, true);
  // same length, different bytes
  await Deno.writeTextFile(p, line({ n: 3 }) + line({ n: 4 }));
  const same = await readJournal(p, c);
  assertEquals([same.rewritten, same.lines.length], [true, 2]);
  // replaced by another file (new inode) with identical content
  await Deno.writeTextFile(`${dir.path}/new`, content + line({ n: 5 }));
  await Deno.rename(`${dir.path}/new`, p);
  const replaced = await readJournal(p, c);
  assertTrue(
    replaced.rewritten || replaced.lines.length === 1,
    "a new inode is noticed where the platform has one",
  );
  if (Deno.build.os !== "windows") assertEquals(replaced.rewritten, true);
});

Deno.test("read: a filter skips JSON parsing of uninteresting lines", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  await Deno.writeTextFile(p, line({ type: "usage.record" }) + line({ type: "turn.prompt" }));
  const r = await readJournal(p, undefined, (l) => l.includes("turn."));
  assertEquals(r.lines.map((l) => l.value.type), ["turn.prompt"]);
});

Deno.test("read: lines longer than the read chunk (multi-MB) are read whole", async () => {
  await using dir = await tempDir();
  const p = `${dir.path}/wire.jsonl`;
  const big = "x".repeat(3 * 1024 * 1024);
  await Deno.writeTextFile(p, line({ big }) + line({ after: 1 }));
  const r = await readJournal(p);
  assertEquals(r.lines.length, 2);
  assertEquals((r.lines[0].value.big as string).length, big.length);
});
