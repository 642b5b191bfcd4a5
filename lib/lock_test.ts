import { assertEquals } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { withLock } from "./lock.ts";

/** What a lock that was had gives back. */
const RAN = { acquired: true, value: "ran" };

Deno.test("a link at the lock's place (dangling, or to a directory) is removed, never what it names; the lock works", async () => {
  await using dir = await tempDir();
  const keep = `${dir.path}/kept`;
  await Deno.mkdir(keep);
  await Deno.writeTextFile(`${keep}/precious.txt`, "mine");
  for (const target of [`${dir.path}/nowhere/x`, keep]) {
    const lock = `${dir.path}/session.json.lock`;
    await Deno.symlink(target, lock);
    assertEquals(await withLock(lock, () => Promise.resolve("ran"), { waitMs: 0 }), RAN);
    assertEquals(await Deno.lstat(lock).then(() => "still there", () => "gone"), "gone");
  }
  assertEquals(await Deno.readTextFile(`${keep}/precious.txt`), "mine");
});

Deno.test("a waiter whose lock's directory went while it waited (a purge) gives up and makes nothing again; makeDir false never makes it", async () => {
  await using dir = await tempDir();
  const [place, aside] = [`${dir.path}/state`, `${dir.path}/state-aside`];
  const lock = `${place}/s.json.lock`;
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  let holding = () => {};
  const got = new Promise<void>((r) => holding = r);
  const holder = withLock(lock, async () => {
    holding();
    await held;
  });
  await got;
  const waiter = withLock(lock, () => Promise.resolve("ran"), { waitMs: 5000 });
  await new Promise((r) => setTimeout(r, 100));
  await Deno.rename(place, aside); // the purge moves the hook state aside, then lets go
  release();
  await holder;
  assertEquals(await waiter, { acquired: false });
  assertEquals(await Deno.lstat(place).then(() => "made again", () => "gone"), "gone");
  const refused = await withLock(lock, () => Promise.resolve("ran"), { makeDir: false }).catch(() => "threw");
  assertEquals([refused, await Deno.lstat(place).then(() => "made again", () => "gone")], ["threw", "gone"]);
});
