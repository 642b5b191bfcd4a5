/**
 * Child process for the kill -9 test: rewrites one file forever through the installer's own write path
 * (`fileStep`: backup, temp + fsync + rename), alternating between two contents, and prints "ready"
 * once the first write is done. The parent kills it with SIGKILL at a random moment.
 *
 * Usage: deno run -A kill_writer.ts <target> <contentA-file> <contentB-file>
 */

import { fileStep } from "../../install/transaction.ts";

const [target, aFile, bFile] = Deno.args;
const a = await Deno.readTextFile(aFile);
const b = await Deno.readTextFile(bFile);
let current = await Deno.readTextFile(target);
let announced = false;
while (true) {
  const next = current === a ? b : a;
  await (await fileStep({ path: target, before: current, after: next, backup: "bak" }, "kill test").run())
    .commit?.();
  current = next;
  if (!announced) {
    await Deno.stdout.write(new TextEncoder().encode("ready\n"));
    announced = true;
  }
}
