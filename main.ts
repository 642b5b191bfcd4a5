/**
 * openviking-kimi: long-term memory for Kimi Code CLI, backed by OpenViking.
 * Parses argv and hands over to one command; every command module is imported lazily so a hook only
 * loads what its event needs.
 */

import { VERSION } from "./runtime/version.ts";

const HELP = `openviking-kimi ${VERSION} — OpenViking long-term memory for Kimi Code CLI

Usage:
  openviking-kimi hook <event>        event: session-start | user-prompt-submit | pre-tool-use | stop |
                                      stop-failure | pre-compact | session-end | interrupt
                                      (stdin: the hook JSON)
  openviking-kimi mcp                 stdio MCP server proxying to OpenViking /mcp
  openviking-kimi install   [--mode config|plugin] [--kimi-home DIR] [--url URL] [--api-key KEY]
                            [--account A] [--user U] [--dry-run] [--yes]
  openviking-kimi uninstall [--mode config|plugin] [--kimi-home DIR] [--purge] [--yes]
  openviking-kimi doctor    [--json]
  openviking-kimi turns <kimi-session-id> [--json]
  openviking-kimi replay              replay the pending queue now
  openviking-kimi version
  openviking-kimi help

Settings come from OPENVIKING_* environment variables and ~/.openviking/ovcli.conf (see README.md).
`;

/** A command: receives the remaining arguments, returns the exit code. */
type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  hook: async () => (await import("./hooks/entry.ts")).hookEntry,
  mcp: async () => (await import("./mcp/command.ts")).mcpCommand,
  install: async () => (await import("./install/command.ts")).installCommand,
  uninstall: async () => (await import("./install/command.ts")).uninstallCommand,
  doctor: async () => (await import("./install/doctor.ts")).doctorCommand,
  turns: async () => (await import("./wire/command.ts")).turnsCommand,
  replay: async () => (await import("./hooks/replay.ts")).replayCommand,
};

/** Runs the CLI with `argv` and returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "version" || name === "--version" || name === "-V") {
    console.log(VERSION);
    return 0;
  }
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(HELP);
    return name === undefined ? 2 : 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`openviking-kimi: unknown command "${name}". Run "openviking-kimi help" for the list.`);
    return 2;
  }
  return await (await load())(rest);
}

if (import.meta.main) {
  Deno.exitCode = await main(Deno.args);
}
