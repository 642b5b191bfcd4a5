/** Test helper process: tries the lock at argv[0] for 300 ms and prints the outcome as JSON. */
import { withLock } from "../../lib/lock.ts";

console.log(
  JSON.stringify(await withLock(Deno.args[0], () => Promise.resolve("taken"), { waitMs: 300, pollMs: 20 })),
);
