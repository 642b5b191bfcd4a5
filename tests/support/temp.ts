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
