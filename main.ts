/**
 * openviking-kimi: long-term memory for Kimi Code CLI, backed by OpenViking.
 * `hook <event>` — every prompt and turn, the hot path — goes straight to hooks/entry.ts; everything else
 * is parsed against the command table (cli/commands.ts), loaded only then, and handed to its command.
 */

import { commandName, holdCopyLock } from "./lib/self.ts";

/** Runs the CLI with `argv` and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  holdCopyLock(); // an installed copy is not removed while it runs
  const [name, ...rest] = argv;
  try {
    // What Kimi runs: `hook <event>`. Anything else (`hook --help`, no event, a stray argument) goes through
    // the table like every command, which would parse `hook <event>` to the same options.
    if (name === "hook" && rest.length === 1 && !rest[0].startsWith("-")) {
      return await (await import("./commands/hook.ts")).hookEntry({ event: rest[0] });
    }
    return await runCommand(name, rest);
  } catch (error) {
    // A command that needs a home directory when there is none (runtime/paths.ts): say so, no stack trace.
    if ((error as Error)?.name !== "NoHomeError") throw error;
    console.error(`openviking-kimi ${name}: ${(error as Error).message}`);
    return 1;
  }
}

/** Parses `args` against command `name`'s entry in the table and runs it. */
async function runCommand(name: string | undefined, args: string[]): Promise<number> {
  const { PROGRAM, findCommand, helpText } = await import("./commands/mod.ts");
  const { commandHelp, parseCommand, usageError } = await import("./commands/args.ts");
  if (name === undefined || name === "--help" || name === "-h") {
    if (name === undefined) {
      console.error(helpText());
      return 2;
    }
    console.log(helpText());
    return 0;
  }
  if (name === "--version" || name === "-V") name = "version";
  const cmd = findCommand(name);
  if (!cmd) {
    console.error(
      `${PROGRAM}: unknown ${name.startsWith("-") ? "flag" : "command"} ${JSON.stringify(name)}. ` +
        `Run "${commandName()} help" for the list.`,
    );
    return 2;
  }
  const parsed = parseCommand(cmd, args);
  if (parsed.kind === "help") {
    console.log(commandHelp(PROGRAM, name, cmd));
    return 0;
  }
  if (parsed.kind === "error") {
    console.error(usageError(PROGRAM, name, cmd, parsed.message, commandName()));
    return cmd.usageErrorExit;
  }
  return await cmd.run(parsed.options);
}

if (import.meta.main) {
  Deno.exitCode = await main(Deno.args);
}
