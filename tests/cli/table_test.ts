/**
 * The command table (cli/commands.ts) is the whole command line: every command × {--help, an unknown flag,
 * each value flag without its value, a stray argument} through the real entry point under the production
 * flags; the parser's syntax on its own; the help renderers listing every flag of every command; and the hook
 * hot path reaching hooks/entry.ts without loading the table.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { ROOT, runCli } from "../support/run.ts";
import { isolatedEnv } from "../install/helpers.ts";
import { COMMANDS, helpText, PROGRAM } from "../../commands/mod.ts";
import { commandHelp, parseCommand, type Parsed, usageLines } from "../../commands/args.ts";

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** One argv that must be refused, and what the refusal must name. */
interface Refusal {
  args: string[];
  names: string;
}

/** The refusals the table implies for one command: an unknown flag, each value flag bare, a stray argument. */
function refusals(name: string): Refusal[] {
  const cmd = COMMANDS[name];
  const required = cmd.positionals.filter((p) => p.required).map((p) => `x-${p.name}`);
  const out: Refusal[] = [{ args: [name, ...required, "--no-such-flag"], names: "--no-such-flag" }];
  for (const [flag, spec] of Object.entries(cmd.flags)) {
    if (spec.type === "string") out.push({ args: [name, ...required, `--${flag}`], names: `--${flag}` });
  }
  const all = cmd.positionals.map((p) => `x-${p.name}`);
  out.push({ args: [name, ...all, "stray-argument"], names: '"stray-argument"' });
  return out;
}

Deno.test("every command × {--help, unknown flag, value flag without value, stray argument}", async (t) => {
  await using dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.mkdir(home);
  const env = isolatedEnv(home, { OPENVIKING_URL: "http://127.0.0.1:9" });
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    await t.step(`${name} --help`, async () => {
      for (const help of ["--help", "-h"]) {
        const r = await runCli([name, help], { env, clearEnv: true });
        assertEquals([r.code, r.stderr], [0, ""], `${name} ${help}`);
        assertEquals(r.stdout, `${commandHelp(PROGRAM, name, cmd)}\n`, `${name} ${help}`);
      }
    });
    for (const refusal of refusals(name)) {
      await t.step(refusal.args.join(" "), async () => {
        const r = await runCli(refusal.args, { env, clearEnv: true, stdin: "{}" });
        // A hook never exits 2: Kimi reads that as "block"; the refusal is on stderr all the same.
        assertEquals(r.code, name === "hook" ? 0 : 2, r.stderr);
        assertEquals(r.stdout, "");
        assertMatch(r.stderr, new RegExp(`^${PROGRAM} ${name}: .*${escape(refusal.names)}`));
        assertTrue(
          r.stderr.includes(usageLines(PROGRAM, name, cmd).join("\n")),
          `usage printed: ${r.stderr}`,
        );
      });
    }
  }
  await t.step("nothing was written anywhere in HOME", async () => {
    assertEquals(await Array.fromAsync(Deno.readDir(home)), []);
  });
});

Deno.test("the top-level help, also as help / --help / -h, and bare: on stderr with exit 2", async () => {
  await using dir = await tempDir();
  const env = isolatedEnv(dir.path);
  for (const args of [["help"], ["--help"], ["-h"]]) {
    const r = await runCli(args, { env, clearEnv: true });
    assertEquals([r.code, r.stdout, r.stderr], [0, `${helpText()}\n`, ""], args.join(" "));
  }
  const bare = await runCli([], { env, clearEnv: true });
  assertEquals([bare.code, bare.stdout, bare.stderr], [2, "", `${helpText()}\n`]);
  const one = await runCli(["help", "doctor"], { env, clearEnv: true });
  assertEquals([one.code, one.stdout], [0, `${commandHelp(PROGRAM, "doctor", COMMANDS.doctor)}\n`]);
  const unknown = await runCli(["help", "nope"], { env, clearEnv: true });
  assertEquals(unknown.code, 2);
  assertMatch(unknown.stderr, /unknown command "nope"/);
  const command = await runCli(["nope"], { env, clearEnv: true });
  assertEquals(command.code, 2);
  assertMatch(command.stderr, /unknown command "nope"/);
});

Deno.test("the top-level help names every command with every flag and positional", () => {
  const help = helpText();
  const sections = Object.fromEntries(
    help.split(/^ {2}openviking-kimi /m).slice(1).map((part) => [part.split(/\s/)[0], part]),
  );
  assertEquals(Object.keys(sections), Object.keys(COMMANDS));
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    for (const flag of Object.keys(cmd.flags)) assertMatch(sections[name], new RegExp(`\\[--${flag}[ \\]]`));
    for (const p of cmd.positionals) {
      assertTrue(sections[name].includes(`<${p.name}>`), `${name} <${p.name}>`);
    }
  }
  for (const line of help.split("\n")) assertTrue(line.length <= 80, `wider than 80: ${line}`);
});

Deno.test("each command's help describes every flag, its default, and --help", () => {
  for (const [name, cmd] of Object.entries(COMMANDS)) {
    const help = commandHelp(PROGRAM, name, cmd);
    assertTrue(help.startsWith(`Usage: ${PROGRAM} ${name}`), name);
    for (const [flag, spec] of Object.entries(cmd.flags)) {
      assertTrue(help.includes(`--${flag}`), `${name} --${flag}`);
      assertTrue(
        help.includes(spec.description.split(" ").slice(0, 3).join(" ")),
        `${name} --${flag} described`,
      );
      if (spec.default !== undefined) {
        assertTrue(help.includes(`(default: ${spec.default})`), `${name} default`);
      }
      if (spec.short) assertTrue(help.includes(`-${spec.short}, --${flag}`), `${name} -${spec.short}`);
    }
    assertTrue(help.includes("-h, --help"), name);
    for (const line of help.split("\n")) assertTrue(line.length <= 80, `${name}: wider than 80: ${line}`);
  }
});

/** Parses `args` for `name`, expecting options. */
function options(name: string, args: string[]): Record<string, unknown> {
  const parsed: Parsed = parseCommand(COMMANDS[name], args);
  if (parsed.kind !== "run") throw new Error(`${name} ${args.join(" ")}: ${JSON.stringify(parsed)}`);
  return parsed.options;
}

/** Parses `args` for `name`, expecting a usage error; returns its message. */
function refused(name: string, args: string[]): string {
  const parsed = parseCommand(COMMANDS[name], args);
  if (parsed.kind !== "error") {
    throw new Error(`${name} ${args.join(" ")} accepted: ${JSON.stringify(parsed)}`);
  }
  return parsed.message;
}

Deno.test("install's options: --flag=value, -y, an empty value, the default mode", () => {
  assertEquals(options("install", ["--mode=plugin", "--kimi-home", "/k", "--api-key", "", "-y"]), {
    mode: "plugin",
    kimiHome: "/k",
    url: undefined,
    apiKeyStdin: false,
    apiKey: "",
    account: undefined,
    user: undefined,
    dryRun: false,
    yes: true,
  });
  assertEquals(options("install", []).mode, "config");
  assertEquals(options("install", ["--url=-odd", "--dry-run"]).url, "-odd", "a dash value written inline");
  assertEquals(options("uninstall", []).mode, undefined, "uninstall without --mode: both modes");
  assertEquals(options("uninstall", ["--purge", "--yes"]).purge, true);
});

Deno.test("the parser's refusals name the flag", () => {
  assertEquals(refused("install", ["--mode", "both"]), '--mode must be config or plugin, not "both"');
  assertEquals(refused("install", ["--purge"]), "unknown flag --purge");
  assertEquals(refused("install", ["--url"]), "--url needs a value (--url URL)");
  assertMatch(
    refused("install", ["--url", "--yes"]),
    /^--url needs a value \(--url URL\), not the flag --yes/,
  );
  assertMatch(refused("install", ["--api-key", "-y"]), /^--api-key needs a value/);
  assertEquals(refused("install", ["-q"]), "unknown flag -q");
  assertEquals(refused("install", ["-yq"]), "unknown flag -q", "a short group is split");
  assertEquals(refused("install", ["--dry-run=1"]), "--dry-run takes no value");
  assertEquals(refused("install", ["--yes=no"]), "--yes takes no value");
  assertEquals(refused("uninstall", ["--url", "x"]), "unknown flag --url");
  assertEquals(refused("doctor", ["--kimi-home"]), "--kimi-home needs a value (--kimi-home DIR)");
  assertEquals(refused("turns", []), "missing <kimi-session-id>");
  assertEquals(refused("turns", ["a", "b"]), 'unexpected argument "b"');
  assertEquals(
    options("turns", ["--", "--json"]),
    { kimiSessionId: "--json", json: false },
    "after --, an id",
  );
  assertEquals(refused("turns", ["--", "a", "--json"]), 'unexpected argument "--json"');
  assertEquals(refused("mcp", ["--constructor"]), "unknown flag --constructor");
  assertEquals(refused("mcp", ["--__proto__"]), "unknown flag --__proto__");
  assertEquals(refused("hook", ["stop", "extra"]), 'unexpected argument "extra"');
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

Deno.test("hook <event> reaches hooks/entry.ts without the table, node:util or zod", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${ROOT}/deno.json`, `${ROOT}/main.ts`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertTrue(out.success, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as InfoGraph;
  const main = `file://${ROOT}/main.ts`;
  const everything = loaded(graph, main, [".ts"]);
  assertTrue([...everything].some((m) => m.endsWith("/commands/mod.ts")), "the graph walk sees the table");
  assertTrue(everything.has("node:util"), "the graph walk sees node:util");
  // Stop, StopFailure, PreCompact, SessionEnd: main.ts, then hooks/entry.ts and what it imports statically.
  const detached = [...loaded(graph, main, ["/commands/hook.ts"])];
  const lean = detached.filter((m) => m.includes("/cli/") || m.startsWith("node:") || m.startsWith("npm:"));
  assertEquals(lean, [], `the detaching parent loads ${detached.join(", ")}`);
  // The other events go on into the dispatcher (zod is its payload schema); still no table, no node:util.
  const full = [...loaded(graph, main, ["/commands/hook.ts", "/memory/dispatch.ts"])];
  assertEquals(full.filter((m) => m.includes("/cli/") || m.startsWith("node:")), [], full.join(", "));
});
