/** The program copy's `hook <event>` entry (hook.js): bundled alone, so a hook loads no command table. */

import { holdCopyLock } from "../lib/self.ts";
import { hookEntry } from "./hook.ts";

if (import.meta.main) {
  holdCopyLock();
  Deno.exitCode = await hookEntry(Deno.args[1] ?? "");
}
