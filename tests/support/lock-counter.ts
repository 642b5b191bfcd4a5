/** Test helper process: increments a counter file `n` times, each time under the lock. */
import { withLock } from "../../lib/lock.ts";

const [lockPath, counterPath, n] = Deno.args;
for (let i = 0; i < Number(n); i++) {
  const res = await withLock(lockPath, async () => {
    const v = Number(await Deno.readTextFile(counterPath).catch(() => "0"));
    await new Promise((r) => setTimeout(r, 1));
    await Deno.writeTextFile(counterPath, String(v + 1));
  }, { waitMs: 60_000 });
  if (!res.acquired) Deno.exit(3);
}
