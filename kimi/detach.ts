/** The detached worker: the hook process hands its stdin to a new process of this program and exits. */

import { processEnv } from "../lib/paths.ts";
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
    const io = { stdin: "piped", stdout: "null", stderr: "null" } as const;
    const child = new Deno.Command(inv.command, { args: inv.args, ...io, detached: true, env }).spawn();
    await child.stdin.getWriter().write(stdin); // not closed: the pipe closes when this process exits
    child.unref();
    return true;
  } catch {
    return false;
  }
}

/** Starts `openviking-kimi hook <event>` as a detached worker fed with `stdin`; false if it could not start. */
export const spawnWorker = (event: string, stdin: Uint8Array): Promise<boolean> =>
  spawnDetached(["hook", event], stdin, { [WORKER_ENV]: "1" });

/** Starts `openviking-kimi replay` detached: it reads no stdin, so it starts at once. */
export const spawnReplay = (): Promise<boolean> => spawnDetached(["replay"], new Uint8Array(), {});

/**
 * The parent of a detached event: hands `stdin` to a worker of `hook <event>`, unless this is the worker or the
 * environment switches detaching off (then the full hook path runs and applies the gates).
 */
export async function handToWorker(event: string, stdin: Uint8Array): Promise<boolean> {
  const env = processEnv();
  const off = [env.OPENVIKING_MEMORY_ENABLED, env.OPENVIKING_AUTO_CAPTURE, env.OPENVIKING_WRITE_PATH_ASYNC]
    .some((v) => v !== undefined && /^\s*(0|false|no|off)\s*$/i.test(v));
  return env[WORKER_ENV] !== "1" && !off && await spawnWorker(event, stdin);
}
