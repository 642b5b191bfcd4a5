/** Helpers to run this project's entry points as real processes, with the production flags. */

import { productionFlags } from "../../runtime/self.ts";

/** Repository root. */
export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");

/** Output of a finished process. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `run` + the production flags + the config: a helper script then runs with exactly the binary's permissions. */
export async function prodRunArgs(): Promise<string[]> {
  return ["run", ...(await productionFlags(ROOT)), "--config", `${ROOT}/deno.json`];
}

/** The argv prefix that runs main.ts exactly as production does (`deno run <cli task flags> main.ts`). */
export async function cliArgs(): Promise<string[]> {
  return ["run", ...(await productionFlags(ROOT)), "--config", `${ROOT}/deno.json`, `${ROOT}/main.ts`];
}

let denoDirCache: string | undefined;

/** Deno's module cache of this test run; child processes with a temporary HOME must share it. */
export function denoDir(): string {
  if (denoDirCache) return denoDirCache;
  const fromEnv = Deno.env.get("DENO_DIR");
  if (fromEnv) return denoDirCache = fromEnv;
  const out = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped", stderr: "null" })
    .outputSync();
  denoDirCache = (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
  return denoDirCache;
}

/** Runs `openviking-kimi <args>` under the production flags with the given env and stdin bytes. */
export async function runCli(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string | Uint8Array; cwd?: string; clearEnv?: boolean } =
    {},
): Promise<RunResult> {
  const cmd = new Deno.Command(Deno.execPath(), {
    args: [...(await cliArgs()), ...args],
    env: options.env ? { DENO_DIR: denoDir(), ...options.env } : undefined,
    clearEnv: options.clearEnv,
    cwd: options.cwd,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(
      typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin,
    );
    await w.close().catch(() => {});
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
