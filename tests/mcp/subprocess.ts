/**
 * Runs `openviking-kimi mcp` as a real subprocess, started exactly like production: the permission flags of
 * deno.json's `cli` task, then `mcp`. The environment is built from scratch (temporary HOME), plus the Deno
 * cache location and the machine's network settings (run.ts denoEnv).
 */

import { fileURLToPath } from "node:url";
import { denoEnv } from "../support/run.ts";

/** The repository root (where deno.json is). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

/** `deno` + the arguments of the `cli` task + `mcp`, as `{command, args}`. */
export async function productionCommand(): Promise<{ command: string; args: string[] }> {
  const config = JSON.parse(await Deno.readTextFile(`${REPO_ROOT}/deno.json`)) as { tasks: { cli: string } };
  const [deno, ...args] = config.tasks.cli.trim().split(/\s+/);
  if (deno !== "deno") throw new Error(`unexpected cli task: ${config.tasks.cli}`);
  return { command: Deno.execPath(), args: [...args, "mcp"] };
}

/** A minimal environment for the child: temporary HOME, PATH, Deno's cache, and `extra`. */
export function childEnv(home: string, extra: Record<string, string>): Promise<Record<string, string>> {
  return Promise.resolve({
    HOME: home,
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    ...denoEnv(),
    ...extra,
  });
}
