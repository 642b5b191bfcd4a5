/** Test helpers for temporary directories. */

/** A temporary directory removed at the end of its `await using` scope. */
export async function tempDir(prefix = "ovk-"): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}

/** Whether this process may mount a small tmpfs (root with CAP_SYS_ADMIN on Linux): a disk that can be filled. */
export function canMountTmpfs(): boolean {
  if (Deno.build.os !== "linux") return false;
  const dir = Deno.makeTempDirSync({ prefix: "ovk-mount-" });
  try {
    const args = ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir];
    const ok = new Deno.Command("mount", { args, stderr: "null" }).outputSync().success;
    if (ok) new Deno.Command("umount", { args: [dir] }).outputSync();
    return ok;
  } catch {
    return false;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}
