/**
 * The installed copy's entry for `hook <event>` (its launcher routes exactly the calls main.ts sends to
 * hooks/entry.ts here): bundled on its own, so a hook loads neither the command table nor install, doctor
 * or the MCP proxy — half the code to load on every prompt and every turn.
 */

import { holdCopyLock } from "../lib/self.ts";
import { hookEntry } from "./hook.ts";

if (import.meta.main) {
  holdCopyLock();
  Deno.exitCode = await hookEntry({ event: Deno.args[1] ?? "" });
}
