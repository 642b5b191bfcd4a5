/** Whether another process is still there, asked without more permissions than the production flags grant. */

/**
 * Whether process `pid` is certainly gone. A harmless SIGCONT probes it (it needs only the run permission the
 * production flags grant; /proc would need --allow-all). Anything but "no such process" counts as alive.
 */
export function isProcessGone(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === Deno.pid || Deno.build.os === "windows") return false;
  try {
    Deno.kill(pid, "SIGCONT");
    return false;
  } catch (error) {
    return error instanceof Deno.errors.NotFound;
  }
}
