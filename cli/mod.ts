/** The command table (flags with their help, positionals, summary, handler loaded on use), and its help texts. */

import { parseArgs } from "node:util";
import { HOOKS } from "../kimi/hooks.ts";
import { VERSION } from "../lib/version.ts";
import { commandName } from "../lib/self.ts";
import { type Env, processEnv, urlProblem } from "../lib/paths.ts";
import { wrap } from "../lib/columns.ts";

const PROGRAM = "openviking-kimi";

/** One flag: what `parseArgs` reads, its help line, its value's name (`DIR`) and fixed choices. */
type Flag = {
  type: "string" | "boolean";
  short?: string;
  default?: string | boolean;
  value?: string;
  choices?: readonly string[];
  /** Why the given value is a wrong command line, if it is; `excludes`: the flag it may not go with. */
  check?: (value: string) => string | undefined;
  excludes?: string;
  help: string;
};
type Flags = Readonly<Record<string, Flag>>;
/** The values strict `parseArgs` gives for flags `F` (booleans are declared with `default: false`). */
type Values<F extends Flags> = ReturnType<
  typeof parseArgs<{ args: string[]; options: F; strict: true; allowPositionals: true }>
>["values"];
type Parsed =
  | { kind: "help" }
  | { kind: "error"; message: string }
  | { kind: "run"; values: Record<string, unknown>; positionals: string[]; run(env: Env): Promise<number> };

const HELP: Flag = { type: "boolean", short: "h", help: "show this help" };

/** How a flag is written in usage lines and messages: `--kimi-home DIR`, `--mode config|plugin`, `--json`. */
const form = (name: string, f: Flag) =>
  f.type === "boolean" ? `--${name}` : `--${name} ${f.value ?? f.choices?.join("|")}`;

/** A command: `args` its positionals (`<name>` required, `[<name>]` optional); `usageExit` 2 (hook's 0). */
function command<const F extends Flags = Record<never, Flag>>(spec: {
  summary: string;
  args?: Readonly<Record<string, string>>;
  flags?: F;
  usageExit?: number;
  run: (values: Values<F>, positionals: string[], env: Env) => Promise<number>;
}) {
  const [args, own] = [spec.args ?? {}, (spec.flags ?? {}) as Flags];
  const names = Object.keys(args);
  const parse = (argv: string[]): Parsed => {
    const end = argv.includes("--") ? argv.indexOf("--") : argv.length;
    if (argv.slice(0, end).some((a) => a === "--help" || a === "-h")) return { kind: "help" };
    const error = (message: string): Parsed => ({ kind: "error", message });
    const options = { ...own, help: HELP };
    let positionals: string[], values: Record<string, unknown>;
    try {
      ({ positionals, values } = parseArgs({ args: argv, options, allowPositionals: true }));
    } catch (e) {
      return error((e as Error).message.replace(/\. To specify a positional argument .*/, "")); // a line
    }
    if (values.help) return { kind: "help" }; // in a group of short flags (-yh)
    const chosen = (n: string, f: Flag) =>
      values[n] === undefined || (f.choices?.includes(`${values[n]}`) ?? true);
    const [n, f] = Object.entries(own).find(([n, f]) => !chosen(n, f)) ?? [];
    if (f) return error(`--${n} must be ${f.choices!.join(" or ")}, not ${JSON.stringify(values[n!])}`);
    const [wrong] = Object.entries(own).flatMap(([n, { excludes: x, check }]) =>
      values[n] === undefined
        ? []
        : x && values[x]
        ? `--${n} and --${x} exclude each other; give one of them`
        : check?.(`${values[n]}`) ?? []
    );
    if (wrong) return error(wrong);
    const missing = names.find((n, i) => n.startsWith("<") && positionals[i] === undefined);
    if (missing) return error(`missing ${missing}`);
    const stray = positionals[names.length];
    if (stray !== undefined) return error(`unexpected argument ${JSON.stringify(stray)}`);
    const run = (env: Env) => spec.run(values as Values<F>, positionals, env);
    return { kind: "run", values, positionals, run };
  };
  return { summary: spec.summary, args, flags: own, usageExit: spec.usageExit ?? 2, parse };
}

const str = <const V extends string>(value: V, help: string) => ({ type: "string", value, help }) as const;
const bool = (help: string) => ({ type: "boolean", default: false, help }) as const;
const kimiHome = str("DIR", "Kimi Code's home directory (default: $KIMI_CODE_HOME, else ~/.kimi-code)");
const workspace = str("DIR", "the workspace (default: here)");
const dryRun = bool("print the changes as diffs and change nothing");
const modes = ["config", "plugin"] as const;
const choice = (help: string) => ({ type: "string", choices: modes, help }) as const;
/** `kimi-home` as `kimiHome`, the name a handler takes. */
type Camel<S> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
const camelCase = (k: string) => k.replace(/-(\w)/g, (_, c) => c.toUpperCase());
const camel = <V extends object>(v: V) =>
  Object.fromEntries(Object.entries(v).map(([k, x]) => [camelCase(k), x])) as {
    [K in keyof V as Camel<K>]: V[K];
  };
/** The command table, in the order the top-level help lists it. */
export const COMMANDS: Readonly<Record<string, ReturnType<typeof command>>> = {
  hook: command({
    summary: `Runs one Kimi Code hook, <event> being ${HOOKS.map((h) => h.cli).join(", ")}; reads the hook ` +
      "JSON on stdin, always exits 0.",
    args: { "<event>": "the Kimi Code event (see above)" },
    usageExit: 0,
    run: async (_, [event]) => (await import("./hook.ts")).hookEntry(event),
  }),
  mcp: command({
    summary: "The stdio MCP server Kimi Code starts, proxying to OpenViking's /mcp.",
    run: async () => (await import("./mcp.ts")).mcpCommand(),
  }),
  install: command({
    summary:
      "Wires openviking-kimi into Kimi Code (hooks and MCP server), and saves the connection settings " +
      "given to ~/.openviking/ovcli.conf (0600). From a checkout it installs a copy of the program that " +
      "runs without it. The API key comes from --api-key-stdin, OPENVIKING_API_KEY, or a prompt.",
    flags: {
      mode: {
        ...choice(
          "plugin: a native Kimi plugin, the only mode (config mode is gone)",
        ),
        default: "plugin",
      },
      "kimi-home": kimiHome,
      url: { ...str("URL", 'OpenViking server URL ("" removes it)'), check: urlProblem },
      "api-key-stdin": bool(
        "read the OpenViking API key from stdin (its first line); on a terminal, ask without echo",
      ),
      "api-key": {
        ...str(
          "KEY",
          'the key on the command line, kept in shell history: prefer --api-key-stdin ("" removes it)',
        ),
        excludes: "api-key-stdin",
      },
      account: str("A", 'OpenViking account ("" removes it)'),
      user: str("U", 'OpenViking user ("" removes it)'),
      "dry-run": dryRun,
      yes: { ...bool("take the place of OpenViking's own Kimi plugin when it is registered"), short: "y" },
    },
    run: async (v) => (await import("./install.ts")).installCommand(camel(v)),
  }),
  uninstall: command({
    summary: "Removes exactly what install added; config.toml comes back byte for byte.",
    flags: {
      "kimi-home": kimiHome,
      purge: bool("also delete the program (copy or executable), the plugin directory and per-session state"),
      "dry-run": dryRun,
      yes: { ...bool("with --purge: drop captures it cannot commit (another server's)"), short: "y" },
    },
    run: async (v) => (await import("./install.ts")).uninstallCommand(camel(v)),
  }),
  doctor: command({
    summary: "Checks the setup and the server; each problem comes with its fix. Exits 1 when one fails.",
    flags: { json: bool("print the checks as JSON"), "kimi-home": kimiHome },
    run: async (v, _, env) => (await import("./doctor.ts")).doctorCommand(camel(v), env),
  }),
  status: command({
    summary: "What memory did: recalls, captures, commits and what OpenViking made of them, the queue.",
    flags: {
      session: str("ID", "one Kimi session (session_…) instead of the newest"),
      json: bool('the same as JSON (its shape: README "status")'),
    },
    run: async (v, _, env) => (await import("./status.ts")).statusCommand(v, env),
  }),
  recall: command({
    summary:
      "Shows exactly what the prompt hook would inject for <text> here now, then each memory with its " +
      "score and URI (changes nothing). Exits 1 when recall failed.",
    args: { "<text>": "the prompt to recall for" },
    flags: { cwd: workspace, json: bool('the same as JSON (its shape: README "recall")') },
    run: async (v, [text], env) => (await import("./recall.ts")).recallCommand({ ...v, text }, env),
  }),
  memories: command({
    summary: "Lists the memories recall can bring here (this project's and yours) by kind, newest first; " +
      "`show <uri>`: one in full with the Kimi session, turns and commit it came from; `forget <uri>`; " +
      "`export <file>` / `import <file>`: your memories as an OpenViking .ovpack (import replaces them, " +
      "keeping what it replaced in a file). Exits 3 for no such memory, 4 for a server without the route.",
    args: {
      "[<action>]": "show, forget, export or import (none: the list)",
      "[<uri-or-file>]": "the memory's viking:// URI (show, forget) or the .ovpack file (export, import)",
    },
    flags: {
      search: str("TEXT", "only the memories OpenViking's search finds for TEXT, best first"),
      cwd: workspace,
      json: bool("the same as JSON"),
    },
    run: async (v, [action, arg], env) =>
      (await import("./memories.ts")).memoriesCommand({ ...v, action, arg }, env),
  }),
  replay: command({
    summary: "Replays the pending queue now and says what it sent. Exits 1 when entries remain.",
    flags: {
      rejected: bool(
        "send again the writes OpenViking refused (kept in ~/.openviking/pending/kimicode-rejected)",
      ),
      json: bool("the report as JSON"),
    },
    run: async (v, _, env) => (await import("./replay.ts")).replayCommand(v, env),
  }),
  version: command({
    summary: "Prints the version.",
    run: () => print(VERSION),
  }),
  help: command({
    summary: "Shows this help, or one command's.",
    args: { "[<command>]": "the command to describe" },
    run: (_, [name], env) => {
      if (name === undefined || Object.hasOwn(COMMANDS, name)) {
        return print(name ? commandHelp(name) : helpText());
      }
      console.error(usageError("help", `unknown command ${JSON.stringify(name)}`, env));
      return Promise.resolve(2);
    },
  }),
};

const print = (text: string) => (console.log(text), Promise.resolve(0));

/** The usage lines of command `name` (every positional and flag), starting with `lead`. */
export function usageLines(name: string, lead = "Usage: "): string[] {
  const cmd = COMMANDS[name];
  const words = [...Object.keys(cmd.args), ...Object.entries(cmd.flags).map(([n, f]) => `[${form(n, f)}]`)];
  const prefix = `${lead}${PROGRAM} ${name} `;
  // Each word kept whole by `wrap`: its inner spaces are no-break ones until the line is made.
  const line = prefix + words.map((w) => w.replaceAll(" ", "\u00a0")).join(" ");
  return wrap(line.trimEnd(), " ".repeat(prefix.length)).map((l) => l.replaceAll("\u00a0", " "));
}

/** Two indented columns: the left one padded to its widest entry (at most 24), the right one wrapped. */
function columns(rows: readonly (readonly [string, string])[]): string[] {
  const left = Math.min(24, Math.max(...rows.map(([l]) => l.length)));
  return rows.flatMap(([l, r]) => {
    const own = l.length > left ? [`  ${l}`] : [];
    return [...own, ...wrap(`  ${(own.length ? "" : l).padEnd(left + 2)}${r}`, " ".repeat(left + 4))];
  });
}

/** `<command> --help`: usage, summary, arguments and every flag with its help and default. */
export function commandHelp(name: string): string {
  const cmd = COMMANDS[name];
  const lines = [...usageLines(name), "", ...wrap(cmd.summary, "")];
  const args = Object.entries(cmd.args).map(([n, h]) => [n.replace(/^\[(.*)\]$/, "$1"), h] as const);
  if (args.length) lines.push("", "Arguments:", ...columns(args));
  const flags = Object.entries({ ...cmd.flags, help: HELP }).map(([n, f]): [string, string] => [
    `${f.short ? `-${f.short}, ` : ""}${form(n, f)}`,
    typeof f.default === "string" ? `${f.help} (default: ${f.default})` : f.help,
  ]);
  return [...lines, "", "Flags:", ...columns(flags)].join("\n");
}

/** The top-level help (README's command list): every command's usage and summary. */
export function helpText(): string {
  const lines = [`${PROGRAM} — OpenViking long-term memory for Kimi Code CLI`, "", "Usage:"];
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    lines.push(...usageLines(name, "  "), ...wrap(`      ${cmd.summary}`, "      "));
  }
  const footer = `"${PROGRAM} <command> --help" describes each flag. Settings come from OPENVIKING_* ` +
    "environment variables and ~/.openviking/ovcli.conf (see README.md). Exit codes: 0 done; 2 the command " +
    "line is wrong; 1 what it asked for failed (the message says what to do); hook: always 0; memories: also " +
    "3 and 4.";
  return [...lines, "", ...wrap(footer, "")].join("\n");
}

/** What a usage error prints: the problem, the command's usage, and how to run its help here. */
export function usageError(name: string, message: string, env = processEnv()): string {
  const help = `Run "${commandName(env)} ${name} --help" for its help.`;
  return [`${PROGRAM} ${name}: ${message}`, ...usageLines(name), help].join("\n");
}

/** Runs command `name` with `args` (what follows its name) in `env`; returns the exit code. */
export async function runCommand(
  name: string | undefined,
  args: string[],
  env = processEnv(),
): Promise<number> {
  if (name === undefined) return (console.error(helpText()), 2);
  if (name === "--help" || name === "-h") return print(helpText());
  if (name === "--version" || name === "-V") name = "version";
  if (!Object.hasOwn(COMMANDS, name)) {
    const what = `unknown ${name.startsWith("-") ? "flag" : "command"} ${JSON.stringify(name)}`;
    return (console.error(`${PROGRAM}: ${what}. Run "${commandName(env)} help" for the list.`), 2);
  }
  const parsed = COMMANDS[name].parse(args);
  if (parsed.kind === "help") return print(commandHelp(name));
  if (parsed.kind === "run") return await parsed.run(env);
  console.error(usageError(name, parsed.message, env));
  return COMMANDS[name].usageExit;
}
