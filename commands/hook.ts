/**
 * Entry of `openviking-kimi hook <event>`. Stop, StopFailure, PreCompact and SessionEnd take a lean path that only starts
 * the detached worker (no config, no schemas); everything else — and those events when detaching is off or
 * impossible — goes through the full dispatcher.
 */

import { detachParent } from "../kimi/detach.ts";
import { DETACHED_EVENTS, HOOK_EVENTS, isHookEvent } from "../kimi/hooks.ts";
import { readAllStdin } from "../kimi/stdin.ts";

/** Options of the `hook` command. */
export interface HookOptions {
  /** The event's CLI name (`user-prompt-submit`); an unknown one does nothing. */
  event: string;
}

/** The `hook` command. Always exits 0; an unknown event is said on stderr only. */
export async function hookEntry(options: HookOptions): Promise<number> {
  const { event } = options;
  let stdin: Uint8Array | undefined;
  if (DETACHED_EVENTS.has(event)) {
    const parent = await detachParent(event, readAllStdin);
    if ("code" in parent) return parent.code;
    stdin = parent.stdin;
  }
  const { hookCommand } = await import("../memory/dispatch.ts");
  if (!isHookEvent(event)) {
    console.error(
      `openviking-kimi hook: unknown event ${JSON.stringify(event)}; nothing done. Events: ${
        HOOK_EVENTS.join(", ")
      }.`,
    );
  }
  return await hookCommand([event], stdin);
}
