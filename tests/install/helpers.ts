/** Helpers for running the real CLI in an isolated HOME without losing Deno's module cache. */

let denoDirCache: string | undefined;

/** Deno's cache directory as the test process sees it (a new HOME would otherwise start an empty cache). */
export async function denoDir(): Promise<string> {
  if (denoDirCache) return denoDirCache;
  const fromEnv = Deno.env.get("DENO_DIR");
  if (fromEnv) return denoDirCache = fromEnv;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  denoDirCache = (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
  return denoDirCache;
}

/** The test process's environment with HOME replaced and every Kimi/OpenViking variable removed. */
export async function isolatedEnv(
  home: string,
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(Deno.env.toObject())) {
    if (/^(KIMI_|OPENVIKING_)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, HOME: home, USERPROFILE: home, DENO_DIR: await denoDir(), NO_COLOR: "1", ...extra };
}
