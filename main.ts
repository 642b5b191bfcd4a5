/** openviking-kimi: long-term memory for Kimi Code CLI, backed by OpenViking. */

import { holdCopyLock } from "./lib/self.ts";

/** Runs the CLI with `argv` and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  holdCopyLock(); // an installed copy is not removed while it runs
  const [name, ...rest] = argv;
  try {
    // What Kimi runs; anything else (`hook --help`, no event, a stray argument) goes through the table.
    if (name === "hook" && rest.length === 1 && !rest[0].startsWith("-")) {
      return await (await import("./cli/hook.ts")).hookEntry(rest[0]);
    }
    return await (await import("./cli/mod.ts")).runCommand(name, rest);
  } catch (error) {
    // A command that needs a home directory when there is none (lib/paths.ts): say so, no stack trace.
    if ((error as Error)?.name !== "NoHomeError") throw error;
    console.error(`openviking-kimi ${name}: ${(error as Error).message}`);
    return 1;
  }
}

if (import.meta.main) {
  Deno.exitCode = await main(Deno.args);
}
