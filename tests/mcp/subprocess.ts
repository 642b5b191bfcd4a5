/**
 * Runs `openviking-kimi mcp` as a real subprocess, started exactly like production: the permission flags of
 * deno.json's `cli` task, then `mcp`. The environment is built from scratch (temporary HOME), plus the Deno
 * cache location so the child finds its npm packages offline.
 */

import { fileURLToPath } from "node:url";

/** The repository root (where deno.json is). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

let denoDir: string | undefined;

/** The Deno cache directory of this process (so a child with another HOME still finds npm packages). */
export async function cacheDir(): Promise<string> {
  if (denoDir) return denoDir;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  denoDir = (JSON.parse(new TextDecoder().decode(out.stdout)) as { denoDir: string }).denoDir;
  return denoDir;
}

/** `deno` + the arguments of the `cli` task + `mcp`, as `{command, args}`. */
export async function productionCommand(): Promise<{ command: string; args: string[] }> {
  const config = JSON.parse(await Deno.readTextFile(`${REPO_ROOT}/deno.json`)) as { tasks: { cli: string } };
  const [deno, ...args] = config.tasks.cli.trim().split(/\s+/);
  if (deno !== "deno") throw new Error(`unexpected cli task: ${config.tasks.cli}`);
  return { command: Deno.execPath(), args: [...args, "mcp"] };
}

/** A minimal environment for the child: temporary HOME, PATH, Deno's cache, and `extra`. */
export async function childEnv(home: string, extra: Record<string, string>): Promise<Record<string, string>> {
  return { HOME: home, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", DENO_DIR: await cacheDir(), ...extra };
}
