/**
 * Every command of openviking-kimi, declared once: its positional arguments, its flags (value or boolean,
 * short alias, default, one-line description), its one-line summary and where its handler lives. The
 * parser, `<command> --help`, the top-level help and README's command list all come from this table
 * (cli/spec.ts). A new command is one entry here plus its handler; a new flag is one line in its command's
 * `flags` and one field in the handler's options type (which the compiler checks against the entry).
 *
 * Handlers are imported only when their command runs. `hook <event>` normally never gets here: main.ts runs
 * it before loading this table (the hot path), and comes here only for `hook --help` and mistakes.
 */

import { HOOKS } from "../kimi/hooks.ts";
import { VERSION } from "../lib/version.ts";
import { commandName } from "../lib/self.ts";
import { type Command, command, commandHelp, type FlagSpec, topLevelHelp, usageError } from "./args.ts";

/** The program's name in usage lines. */
export const PROGRAM = "openviking-kimi";

// Flags several commands share (`as const` keeps their literal types for the handlers' option types).
const kimiHome = {
  type: "string",
  value: "DIR",
  description: "Kimi Code's home directory (default: $KIMI_CODE_HOME, else ~/.kimi-code)",
} as const satisfies FlagSpec;
const modes = { type: "string", choices: ["config", "plugin"] } as const;
const workspace = {
  type: "string",
  value: "DIR",
  description: "the workspace (default: here)",
} as const satisfies FlagSpec;
const dryRun = {
  type: "boolean",
  description: "print the changes as diffs and change nothing",
} as const satisfies FlagSpec;

/** The command table, in the order the top-level help lists it. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  hook: command({
    summary: `Runs one Kimi Code hook, <event> being ${HOOKS.map((h) => h.cli).join(", ")}; reads the hook ` +
      "JSON on stdin, always exits 0.",
    positionals: [{ name: "event", required: true, description: "the Kimi Code event (see above)" }],
    flags: {},
    // Kimi reads a hook's exit 2 as "block the prompt / the tool": a hook never exits 2.
    usageErrorExit: 0,
    handler: async () => (await import("./hook.ts")).hookEntry,
  }),
  mcp: command({
    summary: "The stdio MCP server Kimi Code starts, proxying to OpenViking's /mcp.",
    positionals: [],
    flags: {},
    handler: async () => (await import("./mcp.ts")).mcpCommand,
  }),
  install: command({
    summary:
      "Wires openviking-kimi into Kimi Code (hooks and MCP server), and saves the connection settings " +
      "given to ~/.openviking/ovcli.conf (0600). From a checkout it installs a copy of the program that " +
      "runs without it. The API key comes from --api-key-stdin, OPENVIKING_API_KEY, or a prompt.",
    positionals: [],
    flags: {
      mode: {
        ...modes,
        default: "config",
        description: "config: hooks in config.toml, the server in mcp.json; plugin: a native Kimi plugin",
      },
      "kimi-home": kimiHome,
      url: { type: "string", value: "URL", description: 'OpenViking server URL ("" removes it)' },
      "api-key-stdin": {
        type: "boolean",
        description:
          "read the OpenViking API key from stdin (its first line); on a terminal, ask without echo",
      },
      "api-key": {
        type: "string",
        value: "KEY",
        description:
          'the key on the command line, kept in shell history: prefer --api-key-stdin ("" removes it)',
      },
      account: { type: "string", value: "A", description: 'OpenViking account ("" removes it)' },
      user: { type: "string", value: "U", description: 'OpenViking user ("" removes it)' },
      "dry-run": dryRun,
      yes: {
        type: "boolean",
        short: "y",
        description: "take the place of OpenViking's own Kimi plugin when it is registered",
      },
    },
    handler: async () => (await import("./install.ts")).installCommand,
  }),
  uninstall: command({
    summary: "Removes exactly what install added; config.toml comes back byte for byte.",
    positionals: [],
    flags: {
      mode: { ...modes, description: "remove only config mode or only plugin mode (default: both)" },
      "kimi-home": kimiHome,
      purge: {
        type: "boolean",
        description:
          "also delete the program (copy or executable), the plugin directory and per-session state",
      },
      "dry-run": dryRun,
      yes: { type: "boolean", short: "y", description: "accepted and ignored (uninstall never asks)" },
    },
    handler: async () => (await import("./install.ts")).uninstallCommand,
  }),
  doctor: command({
    summary: "Checks the setup and the server; each problem comes with its fix. Exits 1 when one fails.",
    positionals: [],
    flags: { json: { type: "boolean", description: "print the checks as JSON" }, "kimi-home": kimiHome },
    handler: async () => (await import("../install/doctor.ts")).doctorCommand,
  }),
  turns: command({
    summary: "Shows what capture would send from a session's journal (no network, no state change).",
    positionals: [{
      name: "kimi-session-id",
      required: true,
      description: 'the session id ("session_…"; `kimi session list --json` lists them)',
    }],
    flags: { json: { type: "boolean", description: "one JSON object per message, in full" } },
    handler: async () => (await import("./turns.ts")).turnsCommand,
  }),
  status: command({
    summary: "What memory did: recalls, captures, commits and what OpenViking made of them, the queue.",
    positionals: [],
    flags: {
      session: {
        type: "string",
        value: "ID",
        description: "one Kimi session (session_…) instead of the latest",
      },
      all: { type: "boolean", description: "every session the ledger knows" },
      cwd: workspace,
      json: { type: "boolean", description: 'the same as JSON (its shape: README "status")' },
    },
    handler: async () => (await import("./status.ts")).statusCommand,
  }),
  recall: command({
    summary:
      "Shows exactly what the prompt hook would inject for <text> here now, then each memory with its " +
      "score and URI (changes nothing). Exits 1 when recall failed.",
    positionals: [{ name: "text", required: true, description: "the prompt to recall for" }],
    flags: {
      cwd: workspace,
      json: { type: "boolean", description: 'the same as JSON (its shape: README "recall")' },
    },
    handler: async () => (await import("./recall.ts")).recallCommand,
  }),
  replay: command({
    summary: "Replays the pending queue now and says what it sent. Exits 1 when entries remain.",
    positionals: [],
    flags: {
      rejected: {
        type: "boolean",
        description:
          "send again the writes OpenViking refused (kept in ~/.openviking/pending/kimicode-rejected)",
      },
      json: { type: "boolean", description: "the report as JSON" },
    },
    handler: async () => (await import("./replay.ts")).replayCommand,
  }),
  version: command({
    summary: "Prints the version.",
    positionals: [],
    flags: {},
    handler: () => Promise.resolve(versionCommand),
  }),
  help: command({
    summary: "Shows this help, or one command's.",
    positionals: [{ name: "command", required: false, description: "the command to describe" }],
    flags: {},
    handler: () => Promise.resolve(helpCommand),
  }),
};

const TITLE = `${PROGRAM} — OpenViking long-term memory for Kimi Code CLI`;
const FOOTER =
  `"${PROGRAM} <command> --help" describes each flag. Settings come from OPENVIKING_* environment ` +
  "variables and ~/.openviking/ovcli.conf (see README.md).";

/** The top-level help (README's command list is exactly this text). */
export function helpText(): string {
  return topLevelHelp(PROGRAM, TITLE, COMMANDS, FOOTER);
}

/** The command of that name, if there is one. */
export function findCommand(name: string): Command | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}

/** `version`: prints the version. */
function versionCommand(): Promise<number> {
  console.log(VERSION);
  return Promise.resolve(0);
}

/** `help [<command>]`: the top-level help, or that command's. */
function helpCommand(options: { command: string | undefined }): Promise<number> {
  if (options.command === undefined) {
    console.log(helpText());
    return Promise.resolve(0);
  }
  const cmd = findCommand(options.command);
  if (!cmd) {
    console.error(
      usageError(
        PROGRAM,
        "help",
        COMMANDS.help,
        `unknown command ${JSON.stringify(options.command)}`,
        commandName(),
      ),
    );
    return Promise.resolve(2);
  }
  console.log(commandHelp(PROGRAM, options.command, cmd));
  return Promise.resolve(0);
}
