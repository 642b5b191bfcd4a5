/**
 * The detached worker: the parent hands its stdin to a new process of this same program (own session and
 * process group, no inherited stdio) and returns at once. The parent keeps the worker's stdin open until it
 * exits, so the worker sees end-of-input — and starts working — only after the parent is gone.
 */

import { selfInvocation } from "../runtime/self.ts";
import { WORKER_ENV } from "./dispatch.ts";

/** Starts `openviking-kimi hook <event>` as a detached worker fed with `stdin`; false if it could not start. */
export async function spawnWorker(event: string, stdin: Uint8Array): Promise<boolean> {
  try {
    const inv = await selfInvocation(["hook", event]);
    const child = new Deno.Command(inv.command, {
      args: inv.args,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
      detached: true,
      env: { [WORKER_ENV]: "1" },
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    // Deliberately not closed: the pipe closes when this process exits, which is the worker's start signal.
    child.unref();
    return true;
  } catch {
    return false;
  }
}
