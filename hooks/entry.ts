/**
 * Entry of `openviking-kimi hook <event>`. Stop, StopFailure, PreCompact and SessionEnd take a lean path that only starts
 * the detached worker (no config, no schemas); everything else — and those events when detaching is off or
 * impossible — goes through the full dispatcher.
 */

import { DETACHED_EVENTS, detachParent } from "./detach.ts";
import { readAllStdin } from "./stdin.ts";

/** The `hook` command. Always exits 0. */
export async function hookEntry(args: string[]): Promise<number> {
  let stdin: Uint8Array | undefined;
  if (DETACHED_EVENTS.has(args[0] ?? "")) {
    const parent = await detachParent(args[0], readAllStdin);
    if ("code" in parent) return parent.code;
    stdin = parent.stdin;
  }
  return await (await import("./dispatch.ts")).hookCommand(args, stdin);
}
