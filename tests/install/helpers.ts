/** Helpers for running the real CLI in an isolated HOME without losing Deno's module cache. */

import { denoDir } from "../support/run.ts";

export { denoDir };

/** The test process's environment with HOME replaced and every Kimi/OpenViking variable removed. */
export function isolatedEnv(
  home: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(Deno.env.toObject())) {
    if (/^(KIMI_|OPENVIKING_)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, HOME: home, USERPROFILE: home, DENO_DIR: denoDir(), NO_COLOR: "1", ...extra };
}
