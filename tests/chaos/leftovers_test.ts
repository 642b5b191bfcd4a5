/**
 * What a kill -9 leaves on disk must still be private (invariant 6), because nothing cleans it up until the
 * next process needs it: found by the fault campaign's file audit.
 */

import { assertEquals } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { withLock } from "../../lib/lock.ts";

Deno.test("a lock file (left behind by a holder killed inside it) is private: 0600 in a 0700 directory", async () => {
  await using dir = await tempDir();
  const lock = `${dir.path}/hook-state/kimicode/session_x.json.lock`;
  const modes = await withLock(lock, async () => {
    const [d, f] = await Promise.all([Deno.stat(`${dir.path}/hook-state/kimicode`), Deno.stat(lock)]);
    return [d.mode! & 0o777, f.mode! & 0o777];
  });
  assertEquals(modes, { acquired: true, value: [0o700, 0o600] });
});
