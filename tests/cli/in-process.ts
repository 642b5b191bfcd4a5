/** A command run in-process through the command table, as main.ts runs it, with what it prints captured. */

import { runCommand } from "../../cli/mod.ts";
import type { RunResult } from "../support/run.ts";

/**
 * `openviking-kimi <args>` in-process in `env`: its exit code and its console output (stdin is not given:
 * `hook <event>` goes through a process).
 */
export async function runIn(env: Record<string, string>, args: string[]): Promise<RunResult> {
  const out = { stdout: "", stderr: "" };
  const { log, error } = console;
  console.log = (text: string) => out.stdout += `${text}\n`;
  console.error = (text: string) => out.stderr += `${text}\n`;
  try {
    const code = await runCommand(args[0], args.slice(1), env);
    return { code, ...out };
  } finally {
    Object.assign(console, { log, error });
  }
}
