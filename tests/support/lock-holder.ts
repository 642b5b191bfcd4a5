/** Test helper process: takes the lock at argv[0], says "held", and keeps it until killed. */
import { withLock } from "../../lib/lock.ts";

await withLock(Deno.args[0], async () => {
  console.log("held");
  await new Promise(() => setInterval(() => {}, 60_000));
});
