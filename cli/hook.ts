/** `openviking-kimi hook <event>`, always exit 0; the entry of the program copy's hook.js too (no table). */

import { handToWorker } from "../kimi/detach.ts";
import { hasTrait, HOOK_EVENTS, HOOKS, isHookEvent } from "../kimi/hooks.ts";
import { readAllStdin } from "../lib/bytes.ts";
import { holdCopyLock } from "../lib/self.ts";

/** The `hook` command: runs `event` (its CLI name) on this process's stdin. */
export async function hookEntry(name: string): Promise<number> {
  const event = HOOKS.find((h) => h.event === name)?.cli ?? name; // Kimi's spelling too
  const stdin = await readAllStdin();
  if (hasTrait(event, "detached") && await handToWorker(event, stdin)) return 0;
  if (!isHookEvent(event)) {
    const events = HOOK_EVENTS.join(", ");
    console.error(
      `openviking-kimi hook: unknown event ${JSON.stringify(event)}; nothing done. Events: ${events}.`,
    );
  }
  const { hookCommand } = await import("../memory/dispatch.ts");
  return await hookCommand([event], stdin);
}

if (import.meta.main) {
  holdCopyLock();
  Deno.exitCode = await hookEntry(Deno.args[1] ?? "");
}
