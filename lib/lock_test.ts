import { assertEquals } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { withLock } from "./lock.ts";

Deno.test("a link at the lock's place (dangling, or to a directory) is removed, never what it names; the lock works", async () => {
  await using dir = await tempDir();
  const keep = `${dir.path}/kept`;
  await Deno.mkdir(keep);
  await Deno.writeTextFile(`${keep}/precious.txt`, "mine");
  for (const target of [`${dir.path}/nowhere/x`, keep]) {
    const lock = `${dir.path}/session.json.lock`;
    await Deno.symlink(target, lock);
    assertEquals(await withLock(lock, () => Promise.resolve("ran"), { waitMs: 0 }), {
      acquired: true,
      value: "ran",
    });
    assertEquals(await Deno.lstat(lock).then(() => "still there", () => "gone"), "gone");
  }
  assertEquals(await Deno.readTextFile(`${keep}/precious.txt`), "mine");
});
