/**
 * The command-line findings of issue #12 §1, each as a new user met it, through the real entry point under
 * the production flags: a value flag without its value, a flag taken as a value, `--help` as an error,
 * unknown flags and stray arguments silently accepted, a silent unknown hook event, `turns` without a
 * readable form, and a top-level help missing flags.
 */

import { assertEquals, assertMatch, assertNotMatch, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { runCli } from "../support/run.ts";
import { placeJournal } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { isolatedEnv } from "../install/helpers.ts";

/** A temp HOME with an empty Kimi home; `files()` lists everything under it afterwards. */
async function sandbox() {
  const dir = await tempDir();
  const home = `${dir.path}/home`;
  await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
  const env = isolatedEnv(home, { OPENVIKING_URL: "http://127.0.0.1:9", OPENVIKING_TIMEOUT_MS: "500" });
  const files = async (): Promise<string[]> => {
    const found: string[] = [];
    const walk = async (d: string) => {
      for await (const e of Deno.readDir(d)) {
        found.push(`${d}/${e.name}`.slice(home.length + 1));
        if (e.isDirectory) await walk(`${d}/${e.name}`);
      }
    };
    await walk(home);
    return found.sort();
  };
  return { home, env, files, [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose]() };
}

const cli = (args: string[], env: Record<string, string>, stdin?: string) =>
  runCli(args, { env, clearEnv: true, stdin });

Deno.test("doctor --kimi-home without a value says the value is missing, exit 2", async () => {
  await using s = await sandbox();
  const r = await cli(["doctor", "--kimi-home"], s.env);
  assertEquals(r.code, 2, r.stderr);
  assertMatch(r.stderr, /--kimi-home needs a value/);
  assertNotMatch(r.stderr, /unknown/i);
  assertMatch(r.stderr, /Usage: openviking-kimi doctor /);
  assertEquals(r.stdout, "");
});

Deno.test("install --url --yes is an error naming --url, and nothing is written", async () => {
  await using s = await sandbox();
  const r = await cli(["install", "--url", "--yes"], s.env);
  assertEquals(r.code, 2, r.stderr);
  assertMatch(r.stderr, /^openviking-kimi install: --url needs a value/);
  assertMatch(r.stderr, /Usage: openviking-kimi install /);
  assertEquals(await s.files(), [".kimi-code"], "no ovcli.conf, no config.toml, no copy of the executable");
});

Deno.test("install --help prints install's help on stdout, exit 0", async () => {
  await using s = await sandbox();
  const r = await cli(["install", "--help"], s.env);
  assertEquals(r.code, 0, r.stderr);
  assertMatch(r.stdout, /^Usage: openviking-kimi install /);
  assertMatch(r.stdout, /--api-key KEY/);
  assertEquals(r.stderr, "");
  assertEquals(await s.files(), [".kimi-code"]);
});

Deno.test("turns S --bogus, replay extra and version --x are usage errors naming what is wrong", async () => {
  await using s = await sandbox();
  const cases: [string[], RegExp][] = [
    [["turns", "session_x", "--bogus"], /^openviking-kimi turns: unknown flag --bogus\n/],
    [["replay", "extra"], /^openviking-kimi replay: unexpected argument "extra"\n/],
    [["version", "--x"], /^openviking-kimi version: unknown flag --x\n/],
  ];
  for (const [args, message] of cases) {
    const r = await cli(args, s.env);
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assertMatch(r.stderr, message, args.join(" "));
    assertMatch(r.stderr, new RegExp(`Usage: openviking-kimi ${args[0]}\\b`), args.join(" "));
    assertEquals(r.stdout, "", args.join(" "));
  }
});

Deno.test("hook bogus and hook without an event: exit 0, nothing on stdout, the reason on stderr", async () => {
  await using s = await sandbox();
  const stdin = JSON.stringify({ session_id: "session_x", cwd: s.home, prompt: "hello there" });
  const bogus = await cli(["hook", "bogus"], s.env, stdin);
  assertEquals([bogus.code, bogus.stdout], [0, ""]);
  assertMatch(bogus.stderr, /unknown event "bogus"/);
  assertMatch(bogus.stderr, /user-prompt-submit/, "names the events there are");
  const none = await cli(["hook"], s.env, stdin);
  assertEquals([none.code, none.stdout], [0, ""]);
  assertMatch(none.stderr, /<event>/);
});

Deno.test("turns <id> prints a readable form in 80 columns; --json keeps one JSON object per message", async () => {
  await using s = await sandbox();
  const long = `please ${"refactor the parser and keep every test green ".repeat(6)}`;
  await placeJournal(
    s.home,
    "session_turns",
    new JournalBuilder()
      .simpleTurn("remember that I like tabs", "Noted:\n tabs,\tnot spaces.")
      .simpleTurn(long, "\u001b[31mred\u001b[0m 好的，我会记住这个偏好。".repeat(4))
      .toString(),
  );
  const json = await cli(["turns", "session_turns", "--json"], s.env);
  assertEquals(json.code, 0, json.stderr);
  const messages = json.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
  assertEquals(messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assertEquals(messages[0], { turn_id: "0", role: "user", content: "remember that I like tabs" });
  assertEquals(messages[2].content, long.trim());

  const text = await cli(["turns", "session_turns"], s.env);
  assertEquals(text.code, 0, text.stderr);
  assertTrue(text.stdout !== json.stdout, "the readable form is not the JSON");
  const lines = text.stdout.trimEnd().split("\n");
  for (const line of lines) {
    const columns = [...line].reduce((n, c) => n + (/[\u3000-\u9fff\uff00-\uff60]/.test(c) ? 2 : 1), 0);
    assertTrue(columns <= 80, `wider than 80 columns (${columns}): ${line}`);
    assertTrue(!line.startsWith("{"), `a JSON line in the readable form: ${line}`);
    // deno-lint-ignore no-control-regex
    assertNotMatch(line, /[\u0000-\u0008\u000b-\u001f\u007f]/, "no control character reaches the terminal");
  }
  assertMatch(lines[1], /^0 +user +remember that I like tabs$/);
  assertMatch(lines[2], /^0 +assistant +Noted: tabs, not spaces\.$/);
  assertMatch(lines[3], /^1 +user +please refactor the parser .*…$/);
  assertMatch(lines[4], /^1 +assistant +red 好的/);
  assertMatch(lines.at(-1)!, /4 message\(s\) in 2 turn\(s\)/);
});

Deno.test("help lists every flag: doctor --kimi-home and uninstall --dry-run among them", async () => {
  await using s = await sandbox();
  const r = await cli(["help"], s.env);
  assertEquals(r.code, 0, r.stderr);
  const sections = Object.fromEntries(
    r.stdout.split(/^ {2}openviking-kimi /m).slice(1).map((part) => [part.split(/\s/)[0], part]),
  );
  assertMatch(sections.doctor, /--kimi-home DIR/);
  assertMatch(sections.doctor, /--json/);
  assertMatch(sections.uninstall, /--dry-run/);
  assertMatch(sections.uninstall, /--purge/);
});
