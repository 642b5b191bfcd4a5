/**
 * The detached worker. For Stop, StopFailure, PreCompact and SessionEnd the hook process only hands its stdin to a new
 * process of this same program (own session and process group, no inherited stdio) and exits: it loads no
 * config and no schema, so Kimi waits as little as possible. The parent keeps the worker's stdin open until
 * it exits, so the worker sees end-of-input — and starts working — only after the parent is gone. The worker
 * resolves the config, applies every gate and does the work.
 */

import { type Env, processEnv } from "../lib/paths.ts";
import { selfInvocation } from "../lib/self.ts";

/** Environment variable marking the detached worker process. */
export const WORKER_ENV = "OPENVIKING_KIMI_HOOK_WORKER";

/** Starts this program with `args`, detached, fed with `stdin`; false if it could not start. */
async function spawnDetached(
  args: string[],
  stdin: Uint8Array,
  env: Record<string, string>,
): Promise<boolean> {
  try {
    const inv = await selfInvocation(args);
    const child = new Deno.Command(inv.command, {
      args: inv.args,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
      detached: true,
      env,
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

/** Starts `openviking-kimi hook <event>` as a detached worker fed with `stdin`; false if it could not start. */
export function spawnWorker(event: string, stdin: Uint8Array): Promise<boolean> {
  return spawnDetached(["hook", event], stdin, { [WORKER_ENV]: "1" });
}

/**
 * Starts `openviking-kimi replay` detached (it reads no stdin, so it starts at once, under the queue's own
 * claims): what a synchronous hook had to queue (an interrupt out of time) goes out now, not at the next
 * hook — after a SIGINT in print mode none comes.
 */
export function spawnReplay(): Promise<boolean> {
  return spawnDetached(["replay"], new Uint8Array(), {});
}

const OFF = /^\s*(0|false|no|off)\s*$/i;

/** Whether the environment switches detaching off (then the full hook path runs and applies the gates). */
function detachDisabled(env: Env): boolean {
  return [env.OPENVIKING_MEMORY_ENABLED, env.OPENVIKING_AUTO_CAPTURE, env.OPENVIKING_WRITE_PATH_ASYNC]
    .some((v) => v !== undefined && OFF.test(v));
}

/**
 * The parent of a detached event: drains stdin, starts the worker, returns 0. Returns the stdin it read
 * when the work must run here instead (the worker could not start, or detaching is switched off).
 */
export async function detachParent(
  event: string,
  readStdin: () => Promise<Uint8Array>,
): Promise<{ code: 0 } | { stdin: Uint8Array }> {
  const env = processEnv();
  const stdin = await readStdin();
  if (env[WORKER_ENV] === "1" || detachDisabled(env) || !(await spawnWorker(event, stdin))) return { stdin };
  return { code: 0 };
}
