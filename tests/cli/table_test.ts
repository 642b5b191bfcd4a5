/**
 * The command table (cli/mod.ts) is the whole command line: every command's refusals and help come from
 * it; the real entry point under the production flags shows what only a process shows (exit codes, stdout or
 * stderr, nothing written); `hook <event>` reaches cli/hook.ts without loading the table.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { ROOT, runCli } from "../support/run.ts";
import { runIn } from "./in-process.ts";
import { isolatedEnv } from "../install/helpers.ts";
import { commandHelp, COMMANDS, helpText, usageError, usageLines } from "../../cli/mod.ts";

/** The positionals `name` requires, filled in. */
const required = (name: string) =>
  Object.keys(COMMANDS[name].args).filter((a) => a.startsWith("<")).map((a) => `x-${a.slice(1, -1)}`);

/** `name args` parsed; the values when it runs, else throws. */
function values(name: string, args: string[]): Record<string, unknown> {
  const parsed = COMMANDS[name].parse(args);
  if (parsed.kind !== "run") throw new Error(`${name} ${args.join(" ")}: ${JSON.stringify(parsed)}`);
  return { ...parsed.values, positionals: parsed.positionals };
}

/** `name args` parsed; the usage error's message, else throws. */
function refused(name: string, args: string[]): string {
  const parsed = COMMANDS[name].parse(args);
  if (parsed.kind !== "error") {
    throw new Error(`${name} ${args.join(" ")} accepted: ${JSON.stringify(parsed)}`);
  }
  return parsed.message;
}

Deno.test("every command × {--help, unknown flag, value flag without value, stray argument}", () => {
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    for (const help of ["--help", "-h"]) assertEquals(cmd.parse([help]).kind, "help", `${name} ${help}`);
    const cases: [string[], string][] = [[[...required(name), "--no-such-flag"], "--no-such-flag"]];
    for (const [flag, spec] of Object.entries(cmd.flags)) {
      if (spec.type === "string") cases.push([[...required(name), `--${flag}`], `--${flag}`]);
    }
    const all = Object.keys(cmd.args).map((a) => `x-${a}`);
    cases.push([[...all, "stray-argument"], '"stray-argument"']);
    for (const [args, names] of cases) {
      const message = refused(name, args);
      assertTrue(message.includes(names), `${name} ${args.join(" ")}: ${message}`);
      const printed = usageError(name, message);
      assertTrue(printed.startsWith(`openviking-kimi ${name}: ${message}\n`), printed);
      assertTrue(printed.includes(usageLines(name).join("\n")), `usage printed: ${printed}`);
    }
  }
});

Deno.test("the top-level help and each command's help name every flag (its help, default, short form)", () => {
  const help = helpText();
  const sections = Object.fromEntries(
    help.split(/^ {2}openviking-kimi /m).slice(1).map((part) => [part.split(/\s/)[0], part]),
  );
  assertEquals(Object.keys(sections), Object.keys(COMMANDS));
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    const own = commandHelp(name);
    assertTrue(own.startsWith(`Usage: openviking-kimi ${name}`) && own.includes("-h, --help"), name);
    for (const a of Object.keys(cmd.args)) assertTrue(sections[name].includes(a), `${name} ${a}`);
    for (const [flag, spec] of Object.entries(cmd.flags)) {
      assertMatch(sections[name], new RegExp(`\\[--${flag}[ \\]]`));
      assertTrue(own.includes(spec.help.split(" ").slice(0, 3).join(" ")), `${name} --${flag} described`);
      if (typeof spec.default === "string") assertTrue(own.includes(`(default: ${spec.default})`), name);
      if (spec.short) assertTrue(own.includes(`-${spec.short}, --${flag}`), `${name} -${spec.short}`);
    }
    for (const line of own.split("\n")) assertTrue(line.length <= 80, `${name}: wider than 80: ${line}`);
  }
  assertMatch(sections.doctor, /\[--kimi-home DIR\]/);
  for (const line of help.split("\n")) assertTrue(line.length <= 80, `wider than 80: ${line}`);
});

Deno.test("install's values: --flag=value, -y, an empty value, the default mode", () => {
  const given = { mode: "plugin", "kimi-home": "/k", "api-key": "", yes: true, positionals: [] };
  const unset = { "api-key-stdin": false, "dry-run": false };
  assertEquals(values("install", ["--mode=plugin", "--kimi-home", "/k", "--api-key", "", "-y"]), {
    ...given,
    ...unset,
  });
  assertEquals(values("install", []).mode, "plugin");
  assertEquals(COMMANDS.install.parse(["-yh"]).kind, "help", "-h in a group of short flags");
  assertEquals(values("install", ["--user=-odd", "--dry-run"]).user, "-odd", "a dash value written inline");
  assertEquals(values("install", ["--url", ""]).url, "", '--url "" removes it');
  assertEquals(values("uninstall", ["--purge", "--yes"]).purge, true);
});

Deno.test("the parser's refusals name the flag (beyond the every-command cases above)", () => {
  const cases: [string, string[], string | RegExp][] = [
    ["install", ["--mode", "both"], '--mode must be config or plugin, not "both"'],
    ["install", ["--url", "--yes"], /^Option '--url' argument is ambiguous.\n.*\n.*'--url=-XYZ'/],
    ["install", ["--api-key", "-y"], /^Option '--api-key' argument is ambiguous/],
    ["install", ["-q"], "Unknown option '-q'"],
    ["uninstall", ["--mode", "plugin"], "Unknown option '--mode'"], // one way now
    ["install", ["-yq"], "Unknown option '-q'"], // a short group is split
    ["install", ["--dry-run=1"], "Option '--dry-run' does not take an argument"],
    ["install", ["--yes=no"], "Option '-y, --yes' does not take an argument"],
    ["hook", ["a", "b"], 'unexpected argument "b"'],
    ["hook", ["--", "a", "--json"], 'unexpected argument "--json"'],
    ["mcp", ["--constructor"], "Unknown option '--constructor'"],
    ["mcp", ["--__proto__"], "Unknown option '--__proto__'"],
    ["hook", [], "missing <event>"],
    ["install", ["--url", "ftp://h"], '--url "ftp://h" is not an http(s) URL, e.g. http://127.0.0.1:1933'],
    ["install", ["--url=http://u:p@h"], /^--url carries a user name or password/],
    [
      "install",
      ["--api-key-stdin", "--api-key", "k"],
      "--api-key and --api-key-stdin exclude each other; give one of them",
    ],
  ];
  for (const [name, args, want] of cases) {
    const got = refused(name, args);
    if (typeof want === "string") assertEquals(got, want, `${name} ${args.join(" ")}`);
    else assertMatch(got, want);
  }
  assertEquals(
    values("hook", ["--", "--json"]),
    { positionals: ["--json"] },
    "after --, an event",
  );
});

Deno.test("the entry point: help on stdout, refusals on stderr with exit 2 (a hook's 0), nothing written", async () => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.mkdir(home);
  const env = isolatedEnv(home, { OPENVIKING_URL: "http://127.0.0.1:9", OPENVIKING_TIMEOUT_MS: "500" });
  // The table's answers in-process (main.ts hands it every argv but a hook event); a hook event in a process.
  const cli = (args: string[]) => runIn(env, args);
  const hook = (args: string[]) => runCli(args, { env, clearEnv: true, stdin: "{}" });
  const cases: [string[], number, string, string][] = [
    [["help"], 0, `${helpText()}\n`, ""],
    [["-h"], 0, `${helpText()}\n`, ""],
    [[], 2, "", `${helpText()}\n`],
    [["help", "doctor"], 0, `${commandHelp("doctor")}\n`, ""],
    [["install", "--help"], 0, `${commandHelp("install")}\n`, ""],
    [
      ["install", "--url", "--yes"],
      2,
      "",
      `${usageError("install", refused("install", ["--url", "--yes"]), env)}\n`,
    ],
    [["version", "--x"], 2, "", `${usageError("version", "Unknown option '--x'", env)}\n`],
    [["hook"], 0, "", `${usageError("hook", "missing <event>", env)}\n`],
  ];
  for (const [args, code, stdout, stderr] of cases) {
    const r = await cli(args);
    assertEquals([r.code, r.stdout, r.stderr], [code, stdout, stderr], args.join(" "));
  }
  for (const args of [["help", "nope"], ["nope"]]) {
    const r = await cli(args);
    assertEquals([r.code, r.stdout], [2, ""], args.join(" "));
    assertMatch(r.stderr, /unknown command "nope"/);
  }
  const bogus = await hook(["hook", "bogus"]);
  assertEquals([bogus.code, bogus.stdout], [0, ""]);
  assertMatch(bogus.stderr, /unknown event "bogus".*user-prompt-submit/);
  assertEquals(await Array.fromAsync(Deno.readDir(home)), [], "nothing was written anywhere in HOME");
  const kimi = await hook(["hook", "UserPromptSubmit"]); // how Kimi names it: taken as user-prompt-submit
  assertEquals([kimi.code, kimi.stdout, kimi.stderr], [0, "", ""]);
});

/** The modules a process loads through static imports from `from`, following dynamic imports only into `via`. */
function loaded(graph: InfoGraph, from: string, via: readonly string[]): Set<string> {
  const byName = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const dep of byName.get(specifier)?.dependencies ?? []) {
      const target = dep.code?.specifier;
      if (target && (!dep.isDynamic || via.some((v) => target.endsWith(v)))) visit(target);
    }
  };
  visit(from);
  return seen;
}

/** What `deno info --json` says of a module graph (the parts used here). */
interface InfoGraph {
  modules: { specifier: string; dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[] }[];
}

Deno.test("hook <event> reaches cli/hook.ts without the table, node:util or zod", async () => {
  const args = ["info", "--json", "--config", `${ROOT}/deno.json`, `${ROOT}/main.ts`];
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" }).output();
  assertTrue(out.success, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as InfoGraph;
  const main = `file://${ROOT}/main.ts`;
  const table = (m: string) => m.endsWith("/cli/mod.ts");
  const everything = loaded(graph, main, [".ts"]);
  assertTrue([...everything].some(table), "the graph walk sees the table");
  assertTrue(everything.has("node:util"), "the graph walk sees node:util");
  // A detached event's parent: main.ts, then cli/hook.ts and what it imports statically.
  const detached = [...loaded(graph, main, ["/cli/hook.ts"])];
  const lean = detached.filter((m) => table(m) || m.startsWith("node:") || m.startsWith("npm:"));
  assertEquals(lean, [], `the detaching parent loads ${detached.join(", ")}`);
  // The other events go on into the dispatcher (zod is its payload schema); still no table, no node:util.
  const full = [...loaded(graph, main, ["/cli/hook.ts", "/memory/dispatch.ts"])];
  assertEquals(full.filter((m) => table(m) || m.startsWith("node:")), [], full.join(", "));
});
