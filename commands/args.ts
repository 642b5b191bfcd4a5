/**
 * The machinery of the command table (cli/commands.ts): how a command is declared, how its argv is parsed
 * into typed options, and how its usage and help are rendered — all from the one declaration, so parser,
 * `<command> --help`, the top-level help and README's command list cannot drift apart.
 *
 * Parsing is `node:util` `parseArgs` (its syntax: `--flag value`, `--flag=value`, `-y`, short groups, `--`).
 * Its `strict` mode would reject the same things but say so in Node's words without the flag as data, so
 * the checks are made here from its tokens, each naming the flag: an unknown flag, a value flag without its
 * value (the next argument starting with `-` is not taken as one: `install --url --yes` is an error; write
 * `--api-key=-abc` for a value that starts with a dash), a value given to a boolean, a value outside the
 * flag's choices, a missing or stray positional argument.
 */

import { parseArgs } from "node:util";

/** One flag of a command: `--name VALUE` (`"string"`) or `--name` (`"boolean"`, false when absent). */
export interface FlagSpec {
  readonly type: "string" | "boolean";
  /** One-letter alias (`-y`). */
  readonly short?: string;
  /** Name of the value in usage lines (`DIR`); string flags only; defaults to the choices or `VALUE`. */
  readonly value?: string;
  /** The only values accepted, when the flag has a fixed set. */
  readonly choices?: readonly string[];
  /** The value when the flag is absent (string flags; omit when "absent" means something of its own). */
  readonly default?: string;
  /** One line for `<command> --help`. */
  readonly description: string;
}

/** One positional argument of a command, in order. */
export interface PositionalSpec {
  readonly name: string;
  readonly required: boolean;
  /** One line for `<command> --help` and the top-level help. */
  readonly description: string;
}

/** `dry-run` → `dryRun`: the option key of a flag or positional name. */
type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

type FlagValue<F extends FlagSpec> = F extends { type: "boolean" } ? boolean
  : F extends { choices: readonly (infer C)[] } ? (F extends { default: string } ? C : C | undefined)
  : F extends { default: string } ? string
  : string | undefined;

/** The typed options a command's handler receives: one key per flag and positional, camelCased. */
export type Options<F extends Readonly<Record<string, FlagSpec>>, P extends readonly PositionalSpec[]> =
  & { -readonly [K in keyof F & string as Camel<K>]: FlagValue<F[K]> }
  & {
    -readonly [E in P[number] as Camel<E["name"]>]: E extends { required: true } ? string
      : string | undefined;
  };

/** A command as written in the table: its handler is imported only when the command runs. */
export interface CommandSpec<
  F extends Readonly<Record<string, FlagSpec>>,
  P extends readonly PositionalSpec[],
> {
  /** One line for the top-level help. */
  readonly summary: string;
  readonly positionals: P;
  readonly flags: F;
  /** Exit code of a usage error (2, except `hook`: Kimi reads a hook's exit 2 as "block"). */
  readonly usageErrorExit?: number;
  /** Loads the handler, which receives the parsed options and returns the exit code. */
  readonly handler: () => Promise<(options: Options<F, P>) => Promise<number>>;
}

/** Parsed options, before they are handed to the handler typed. */
export type ParsedOptions = Record<string, string | boolean | undefined>;

/** A command of the table with its types erased, as the parser and the help renderers see it. */
export interface Command {
  readonly summary: string;
  readonly positionals: readonly PositionalSpec[];
  readonly flags: Readonly<Record<string, FlagSpec>>;
  readonly usageErrorExit: number;
  /** Runs the handler with options {@link parseCommand} produced for this command. */
  run(options: ParsedOptions): Promise<number>;
}

/** Declares a command; the handler's parameter type is checked against the flags and positionals. */
export function command<
  const F extends Readonly<Record<string, FlagSpec>>,
  const P extends readonly PositionalSpec[],
>(spec: CommandSpec<F, P>): Command {
  return {
    summary: spec.summary,
    positionals: spec.positionals,
    flags: spec.flags,
    usageErrorExit: spec.usageErrorExit ?? 2,
    // parseCommand built `options` from these very flags and positionals: it has the shape of Options<F, P>.
    run: async (options) => await (await spec.handler())(options as Options<F, P>),
  };
}

/** What argv means for one command. */
export type Parsed =
  | { kind: "help" }
  | { kind: "run"; options: ParsedOptions }
  | { kind: "error"; message: string };

/** The help flag every command has. */
const HELP: FlagSpec = { type: "boolean", short: "h", description: "show this help" };

/** The option key of a flag or positional name (`kimi-home` → `kimiHome`). */
function optionKey(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** How a flag is written in usage lines and messages: `--kimi-home DIR`, `--mode config|plugin`, `--json`. */
function flagForm(name: string, flag: FlagSpec): string {
  if (flag.type === "boolean") return `--${name}`;
  return `--${name} ${flag.value ?? flag.choices?.join("|") ?? "VALUE"}`;
}

/** A flag as `parseArgs` declares it (which refuses `short: undefined`). */
function parseArgsOption(flag: FlagSpec): { type: "string" | "boolean"; short?: string } {
  return flag.short ? { type: flag.type, short: flag.short } : { type: flag.type };
}

/** Turns `args` (what follows the command name) into options, a help request or a usage error. */
export function parseCommand(cmd: Command, args: readonly string[]): Parsed {
  const flags: Record<string, FlagSpec> = { ...cmd.flags, help: HELP };
  const { tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(Object.entries(flags).map(([name, f]) => [name, parseArgsOption(f)])),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  if (tokens.some((t) => t.kind === "option" && t.name === "help" && t.value === undefined)) {
    return { kind: "help" };
  }
  const options: ParsedOptions = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option") continue;
    const flag = Object.hasOwn(flags, token.name) ? flags[token.name] : undefined;
    if (!flag) return { kind: "error", message: `unknown flag ${token.rawName}` };
    const shown = token.rawName.startsWith("--") ? token.rawName : `${token.rawName} (--${token.name})`;
    if (flag.type === "boolean") {
      if (token.value !== undefined) return { kind: "error", message: `${shown} takes no value` };
      options[optionKey(token.name)] = true;
      continue;
    }
    if (token.value === undefined) {
      return { kind: "error", message: `${shown} needs a value (${flagForm(token.name, flag)})` };
    }
    // parseArgs takes whatever follows as the value; a flag is not a value unless written --flag=-value.
    if (!token.inlineValue && token.value.startsWith("-") && token.value !== "-") {
      return {
        kind: "error",
        message: `${shown} needs a value (${flagForm(token.name, flag)}), not the flag ${token.value} ` +
          `(write --${token.name}=${token.value} if that is the value)`,
      };
    }
    if (flag.choices && !flag.choices.includes(token.value)) {
      return {
        kind: "error",
        message: `${shown} must be ${flag.choices.join(" or ")}, not ${JSON.stringify(token.value)}`,
      };
    }
    options[optionKey(token.name)] = token.value;
  }
  for (const [name, flag] of Object.entries(cmd.flags)) {
    options[optionKey(name)] ??= flag.type === "boolean" ? false : flag.default;
  }
  for (const [i, p] of cmd.positionals.entries()) {
    if (positionals[i] === undefined && p.required) return { kind: "error", message: `missing <${p.name}>` };
    options[optionKey(p.name)] = positionals[i];
  }
  const stray = positionals[cmd.positionals.length];
  if (stray !== undefined) return { kind: "error", message: `unexpected argument ${JSON.stringify(stray)}` };
  return { kind: "run", options };
}

/** Help and usage lines are wrapped to this many columns. */
const WIDTH = 80;

/** Words joined into lines of at most `width` columns (a longer word stays whole on its own line). */
function wrap(words: readonly string[], width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of words) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** Words of a sentence, split on spaces. */
function words(text: string): string[] {
  return text.split(" ").filter((w) => w !== "");
}

/** `prefix` followed by `tokens`, wrapped with later lines indented under the first token. */
function hanging(prefix: string, tokens: readonly string[], width = WIDTH): string[] {
  if (tokens.length === 0) return [prefix.trimEnd()];
  const pad = " ".repeat(prefix.length);
  return wrap(tokens, width - prefix.length).map((l, i) => (i === 0 ? prefix : pad) + l);
}

/** The usage tokens of a command: its positionals, then every flag. */
function synopsisTokens(cmd: Command): string[] {
  return [
    ...cmd.positionals.map((p) => (p.required ? `<${p.name}>` : `[<${p.name}>]`)),
    ...Object.entries(cmd.flags).map(([name, f]) => `[${flagForm(name, f)}]`),
  ];
}

/** The usage line(s) of one command, starting with `lead` (`Usage: `, or two spaces in the top-level help). */
export function usageLines(program: string, name: string, cmd: Command, lead = "Usage: "): string[] {
  return hanging(`${lead}${program} ${name} `, synopsisTokens(cmd));
}

/** Two columns: the left one padded to its widest entry (at most 24), the right one wrapped under itself. */
function columns(rows: readonly [string, string][], indent: string): string[] {
  const left = Math.min(24, Math.max(...rows.map(([l]) => l.length)));
  return rows.flatMap(([l, r]) => {
    const body = wrap(words(r), WIDTH - indent.length - left - 2);
    if (l.length > left) return [indent + l, ...body.map((b) => `${indent}${" ".repeat(left + 2)}${b}`)];
    return body.map((b, i) => `${indent}${(i === 0 ? l : "").padEnd(left + 2)}${b}`);
  });
}

/** `<command> --help`: usage, summary, arguments and every flag with its description and default. */
export function commandHelp(program: string, name: string, cmd: Command): string {
  const lines = [...usageLines(program, name, cmd), "", ...wrap(words(cmd.summary), WIDTH)];
  if (cmd.positionals.length) {
    lines.push(
      "",
      "Arguments:",
      ...columns(cmd.positionals.map((p) => [`<${p.name}>`, p.description]), "  "),
    );
  }
  const flags: [string, string][] = Object.entries({ ...cmd.flags, help: HELP }).map(([n, f]) => [
    `${f.short ? `-${f.short}, ` : ""}${flagForm(n, f)}`,
    f.default === undefined ? f.description : `${f.description} (default: ${f.default})`,
  ]);
  lines.push("", "Flags:", ...columns(flags, "  "));
  return lines.join("\n");
}

/** The top-level help: every command's usage line(s) (so every flag) and its one-line summary. */
export function topLevelHelp(
  program: string,
  title: string,
  commands: Readonly<Record<string, Command>>,
  footer: string,
): string {
  const lines = [title, "", "Usage:"];
  for (const [name, cmd] of Object.entries(commands)) {
    lines.push(...usageLines(program, name, cmd, "  "));
    lines.push(...wrap(words(cmd.summary), WIDTH - 6).map((l) => `      ${l}`));
  }
  lines.push("", ...wrap(words(footer), WIDTH));
  return lines.join("\n");
}

/** What a usage error prints: the problem, the command's usage, where its help is (`run`: how it is run here). */
export function usageError(
  program: string,
  name: string,
  cmd: Command,
  message: string,
  run = program,
): string {
  return [
    `${program} ${name}: ${message}`,
    ...usageLines(program, name, cmd),
    `Run "${run} ${name} --help" for its help.`,
  ].join("\n");
}
