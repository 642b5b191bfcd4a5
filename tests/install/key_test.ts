/**
 * The key never on screen or in history (issue #15, point 4): install takes it from `--api-key-stdin`,
 * from `OPENVIKING_API_KEY` in its environment, or from a terminal prompt that does not echo; `--api-key KEY`
 * still works and warns. No command prints the key — every command's stdout and stderr, run directly and
 * through `deno task`, against a server that behaves and one that quotes the key back in its errors.
 */

import {
  assertEquals,
  assertMatch,
  assertNotMatch,
  assertStringIncludes,
  assertTrue,
} from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { placeJournal } from "../support/hook-context.ts";
import { cliArgs, ROOT, runCli, runProcess, type RunResult } from "../support/run.ts";
import { closedAddress, isolatedEnv } from "./helpers.ts";
import {
  chooseApiKey,
  type KeyChoice,
  type KeyFlags,
  type KeyIo,
  serverNeedsKey,
} from "../../install/ovcli.ts";
import { HOOKS } from "../../kimi/hooks.ts";

const posix = Deno.build.os !== "windows";
const KEY = "sk-never-shown-7c21e9a4";
const PERMISSION_ERROR =
  /PermissionDenied|NotCapable|Requires \w+ access|run again with the --allow|--allow-\w+ flag/i;

/** A fake terminal and stdin for chooseApiKey. */
function io(
  options: {
    terminal?: boolean;
    stdin?: string;
    env?: Record<string, string>;
    /** The answer to each question in turn (undefined: Ctrl-C). */
    answer?: string | (string | undefined)[];
    needsKey?: boolean;
  },
) {
  const asked: string[] = [];
  const warned: string[] = [];
  const answers = [options.answer].flat();
  const fake: KeyIo = {
    env: options.env ?? { HOME: "/nonexistent-home" },
    stdinIsTerminal: () => options.terminal ?? false,
    readStdin: () => Promise.resolve(new TextEncoder().encode(options.stdin ?? "")),
    askHidden: (q) => {
      asked.push(q);
      return Promise.resolve(answers[asked.length - 1]);
    },
    needsKey: () => Promise.resolve(options.needsKey ?? false),
    warn: (l) => warned.push(l),
  };
  return { fake, asked, warned };
}

const flags = (partial: Partial<KeyFlags>): KeyFlags => ({
  apiKey: undefined,
  apiKeyStdin: false,
  url: undefined,
  dryRun: false,
  ...partial,
});

Deno.test("where install takes the key from, and when it asks", async () => {
  const url = "http://h:1933";
  const tty = { terminal: true, answer: KEY };
  await using dir = await tempDir(); // a HOME whose ovcli.conf holds a key saved for http://h:1933
  await Deno.mkdir(`${dir.path}/.openviking`);
  await Deno.writeTextFile(`${dir.path}/.openviking/ovcli.conf`, JSON.stringify({ url, api_key: KEY }));
  const saved = { HOME: dir.path };
  const elsewhere = "http://elsewhere:1933";
  const asksFor =
    /^OpenViking API key for http:\/\/h:1933 \(a user key; not shown as you type; Enter for none\)/;
  // [flags, terminal and stdin, the choice (or its error), what is asked (undefined: nothing)]
  const cases: [Partial<KeyFlags>, Parameters<typeof io>[0], KeyChoice | RegExp, RegExp?][] = [
    [{ apiKeyStdin: true }, { stdin: `${KEY}\r\nsecond line\n` }, { ok: true, apiKey: KEY, from: "stdin" }],
    [{ apiKeyStdin: true }, { stdin: "\n" }, /nothing came on stdin/],
    [{ apiKey: "" }, {}, { ok: true, apiKey: "", from: "--api-key" }],
    [{ url }, { env: { OPENVIKING_API_KEY: ` ${KEY} ` }, terminal: true }, {
      ok: true,
      apiKey: KEY,
      from: "OPENVIKING_API_KEY",
    }],
    [{ url }, tty, { ok: true, apiKey: KEY, from: "the terminal" }, asksFor],
    [{ url }, { terminal: true, answer: "" }, { ok: true }, asksFor],
    // Enter, where the server answers memory's routes only with a key: asked once more, then stopped.
    [{ url }, { terminal: true, answer: ["", KEY], needsKey: true }, {
      ok: true,
      apiKey: KEY,
      from: "the terminal",
    }, /Enter for none.*Enter to cancel/],
    [
      { url },
      { terminal: true, answer: ["", ""], needsKey: true },
      /^no API key given, and the server at http:\/\/h:1933 needs one; nothing was changed/,
      /Enter for none.*Enter to cancel/,
    ],
    [{ url }, { terminal: true }, /cancelled/, asksFor],
    [{}, tty, { ok: true }],
    [{ url, dryRun: true }, tty, { ok: true }],
    [{ url }, { answer: KEY }, { ok: true }],
    [{ apiKeyStdin: true }, tty, { ok: true, apiKey: KEY, from: "the terminal" }, /Enter to cancel/],
    // A key saved for the address: nothing asked. Another address is asked for its own; Enter there deletes
    // the saved key, as the prompt says (api_key_server_test's "the way … works as printed" deletes it).
    [{ url: `${url}/` }, { ...tty, env: saved }, { ok: true }],
    [
      { url: elsewhere },
      { ...tty, env: saved },
      { ok: true, apiKey: KEY, from: "the terminal" },
      /^OpenViking API key for http:\/\/elsewhere:1933 /,
    ],
    [
      { url: elsewhere },
      { terminal: true, answer: "", env: saved },
      { ok: true, apiKey: "", from: "the terminal" },
      /Enter for none: it deletes the key saved for http:\/\/h:1933, keeping the old file as ovcli\.conf\.bak\)/,
    ],
  ];
  for (const [given, options, want, asked] of cases) {
    const t = io(options);
    const got = await chooseApiKey(flags(given), t.fake);
    const name = JSON.stringify([given, options]);
    if (want instanceof RegExp) {
      assertTrue(!got.ok && want.test(got.error), `${name}: ${JSON.stringify(got)}`);
    } else assertEquals(got, want, name);
    if (asked) assertMatch(t.asked.join(), asked, name);
    else assertEquals(t.asked, [], `${name}: nothing is asked`);
    if (options.needsKey) {
      assertMatch(t.warned.join(), /^The server at http:\/\/h:1933 needs an API key/, name);
    } else if (given.apiKey === undefined || given.apiKey === "") assertEquals(t.warned, [], name);
  }

  const flag = io({});
  assertEquals(await chooseApiKey(flags({ apiKey: KEY }), flag.fake), {
    ok: true,
    apiKey: KEY,
    from: "--api-key",
  });
  assertMatch(
    flag.warned.join(),
    /--api-key puts the key on the command line, where your shell history and the process list keep it \(and if you ran `deno task install` without -q, Deno has printed it too, in its "Task install …" line\)\. Next time use --api-key-stdin.*on a terminal, asks for it without showing what you type/,
  );
  assertNotMatch(flag.warned.join(), new RegExp(KEY));
});

Deno.test("a server needs a key when it refuses memory's routes without one; dev mode, no answer and no address do not", async () => {
  await using keyed = await FakeOpenViking.start({ apiKey: KEY });
  await using dev = await FakeOpenViking.start();
  assertEquals(await serverNeedsKey(keyed.url), true);
  assertEquals(await serverNeedsKey(dev.url), false);
  assertEquals(await serverNeedsKey(closedAddress()), false);
  assertEquals(await serverNeedsKey("not an address"), false);
});

const hasPty = posix &&
  await new Deno.Command("python3", { args: ["-c", "import pty"] }).output().then(
    (o) => o.success,
    () => false,
  );

/** `install --url url` on a real terminal (python's pty) in `home`, typing each answer (and Enter) when asked. */
async function installOnTerminal(home: string, url: string, answers: string[]) {
  // It waits for each question, types the answer and Enter.
  const script = `
import json, os, pty, select, sys, time
argv, env, answers = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
pid, fd = pty.fork()
if pid == 0:
    os.execve(argv[0], argv, env)
out, deadline = b"", time.time() + 120
for i, answer in enumerate(answers):
    while out.count(b"not shown as you type") <= i and time.time() < deadline:
        if select.select([fd], [], [], 1)[0]:
            out += os.read(fd, 4096)
    os.write(fd, answer.encode() + b"\\r")
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
status = os.waitpid(pid, 0)[1]
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
`;
  const argv = [Deno.execPath(), ...await cliArgs(), "install", "--url", url];
  const out = await new Deno.Command("python3", {
    args: ["-c", script, JSON.stringify(argv), JSON.stringify(isolatedEnv(home)), JSON.stringify(answers)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const screen = new TextDecoder().decode(out.stdout);
  return { code: out.code, screen: screen + new TextDecoder().decode(out.stderr) };
}

Deno.test({
  name: "on a terminal, install asks for the key without echoing it",
  ignore: !hasPty,
  async fn() {
    await using dir = await tempDir();
    const home = `${dir.path}/home`;
    await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
    await using fake = await FakeOpenViking.start({ apiKey: KEY });
    const { code, screen } = await installOnTerminal(home, fake.url, [KEY]);
    assertEquals(code, 0, screen);
    assertStringIncludes(
      screen,
      `OpenViking API key for ${fake.url} (a user key; not shown`,
    );
    assertNotMatch(screen, new RegExp(KEY), "the typed key is not echoed");
    assertStringIncludes(screen, "api_key = (not shown; from the terminal)");
    assertEquals(JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key, KEY);
  },
});

/** Runs `deno task <args>` in this repository with `env`, and `stdin`. */
async function denoTask(args: string[], env: Record<string, string>, stdin = ""): Promise<RunResult> {
  return await runProcess(Deno.execPath(), ["task", ...args], { cwd: ROOT, env, clearEnv: true, stdin });
}

function payload(event: string, sid: string, cwd: string): string {
  const base = { hook_event_name: event, session_id: sid, cwd };
  const extra: Record<string, Record<string, unknown>> = {
    SessionStart: { source: "startup" },
    UserPromptSubmit: { prompt: [{ type: "text", text: `my key is ${KEY}, remember how I indent` }] },
    PreToolUse: { tool_name: "Read", tool_input: { file_path: "viking://user/x.md" } },
    Stop: { stop_hook_active: false },
    Interrupt: { turn_id: 0, reason: "cancelled" },
  };
  return JSON.stringify({ ...base, ...extra[event] });
}

Deno.test({
  name:
    "no command prints the key (and none meets a permission error under the production flags): every command's stdout and stderr, directly and through deno task",
  ignore: !posix,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    await using dir = await tempDir();
    await using fake = await FakeOpenViking.start({ apiKey: KEY, mcp: { sse: true } });
    const home = `${dir.path}/home`;
    const work = `${dir.path}/project`;
    await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
    await Deno.mkdir(work);
    const env = isolatedEnv(home, { OPENVIKING_URL: fake.url, OPENVIKING_TIMEOUT_MS: "3000" });
    const ran: string[] = [];
    const clean = (what: string, r: RunResult) => {
      ran.push(what);
      for (const [name, text] of [["stdout", r.stdout], ["stderr", r.stderr]]) {
        assertTrue(!text.includes(KEY), `${what}: the key is on its ${name}:\n${text}`);
        assertNotMatch(text, PERMISSION_ERROR, `${what}: a permission problem on its ${name}`);
      }
      return r;
    };
    const cli = async (args: string[], stdin?: string, extra: Record<string, string> = {}) =>
      clean(
        args.join(" "),
        await runCli(args, { env: { ...env, ...extra }, clearEnv: true, cwd: work, stdin }),
      );
    const saved = async () => JSON.parse(await Deno.readTextFile(`${home}/.openviking/ovcli.conf`)).api_key;

    await t.step("install, each way the key can come", async () => {
      assertEquals((await cli(["install", "--url", fake.url, "--api-key-stdin"], `${KEY}\n`)).code, 0);
      assertEquals(await saved(), KEY);
      assertEquals((await cli(["install", "--api-key", ""])).code, 0);
      assertEquals(
        (await cli(["install", "--url", fake.url], undefined, { OPENVIKING_API_KEY: KEY })).code,
        0,
      );
      assertEquals(await saved(), KEY);
      const flag = await cli(["install", "--mode", "plugin", "--api-key", KEY]);
      assertEquals(flag.code, 0);
      assertMatch(flag.stderr, /Warning: --api-key puts the key on the command line/);
      assertEquals((await cli(["install", "--dry-run", "--api-key-stdin"], `${KEY}\n`)).code, 0);
      const refused = await cli(["install", "--dry-run", "--api-key-stdin"], `${KEY}-new\n`);
      assertEquals(refused.code, 1, "a key the server refuses is not taken, in a dry run either");
      assertEquals((await cli(["install", "--api-kye", KEY])).code, 2, "a mistyped flag is refused");
      assertEquals((await cli(["install", `--api-key=${KEY}`, "stray"])).code, 2);
      await cli(["install", "--url", `http://user:${KEY}@127.0.0.1:1933`]);
      await cli(["install", "--url", `ftp://${KEY}@x`]);
      assertEquals(await saved(), KEY);
    });

    const sid = "session_00000000-0000-4000-8000-0000000000ee";
    await placeJournal(home, sid, new JournalBuilder().simpleTurn(`note ${KEY}`, "Noted.").toString());
    for (const hostile of [false, true]) {
      await t.step(
        hostile ? "against a server that quotes the key in its errors" : "against a working server",
        async () => {
          if (hostile) {
            fake.fault({
              route: "*",
              status: 401,
              error: { code: "UNAUTHENTICATED", message: `bad key Bearer ${KEY}` },
            });
          }
          for (
            const args of [
              ["help"],
              ["version"],
              ["install", "--help"],
              ["doctor"],
              ["doctor", "--json"],
              ["status"],
              ["status", "--json"],
            ]
          ) {
            await cli(args);
          }
          for (const h of HOOKS) {
            await cli(["hook", h.cli], payload(h.event, sid, work), { OPENVIKING_DEBUG: "1" });
          }
          const mcp = [
            {
              jsonrpc: "2.0",
              id: 1,
              method: "initialize",
              params: { protocolVersion: "2025-11-25", capabilities: {} },
            },
            { jsonrpc: "2.0", method: "notifications/initialized" },
            { jsonrpc: "2.0", id: 2, method: "tools/list" },
            {
              jsonrpc: "2.0",
              id: 3,
              method: "tools/call",
              params: { name: "search", arguments: { query: "tabs" } },
            },
          ].map((m) => JSON.stringify(m)).join("\n") + "\n";
          await cli(["mcp"], mcp);
          await cli(["replay"]);
          fake.clearFaults();
        },
      );
    }

    await t.step("the debug log and the files install wrote do not hold it either", async () => {
      const log = await Deno.readTextFile(`${home}/.openviking/logs/kimicode-hooks.log`);
      assertTrue(log.length > 0 && !log.includes(KEY), "the debug log");
      assertNotMatch(
        await Deno.readTextFile(`${home}/.kimi-code/config.toml`).catch(() => ""),
        new RegExp(KEY),
      );
    });

    await t.step("through deno task, with and without -q", async () => {
      const task = async (args: string[], stdin = "") =>
        clean(`deno task ${args.join(" ")}`, await denoTask(args, env, stdin));
      const quiet = await task(["-q", "install", "--url", fake.url, "--api-key-stdin"], `${KEY}\n`);
      assertEquals(quiet.code, 0);
      // The bundle's wait comes after a line saying so (Deno's own fetch of the npm packages, before it, is
      // the one `-q` keeps silent).
      assertMatch(
        quiet.stdout,
        /^openviking-kimi: building the program copy \(deno bundle, a few seconds\)…\n/,
      );
      // A run that builds no bundle says nothing of one.
      const refused = await task(["-q", "install", "--mode", "config"]);
      assertEquals([refused.code, refused.stdout], [2, ""]);
      const loud = await task(["install", "--url", fake.url, "--api-key-stdin"], `${KEY}\n`);
      assertEquals(loud.code, 0);
      assertMatch(
        loud.stderr,
        /Task install deno task -q cli install '--url'/,
        "deno echoes the arguments only",
      );
      // --api-key through deno task without -q: Deno's "Task install …" line shows it (nothing stops that);
      // the warning says so, and nothing else of the run shows it.
      const echoed = await denoTask(["install", "--url", fake.url, "--api-key", KEY], env);
      assertEquals(echoed.code, 0, echoed.stderr);
      const [taskLine, ...rest] = echoed.stderr.split("\n");
      assertMatch(taskLine, new RegExp(`^Task install deno task -q cli install .*'${KEY}'`));
      assertTrue(!rest.join("\n").includes(KEY) && !echoed.stdout.includes(KEY), echoed.stderr);
      assertMatch(echoed.stderr, /if you ran `deno task install` without -q, Deno has printed it too/);
      assertEquals((await task(["-q", "cli", "doctor"])).code, 0);
      assertEquals((await task(["-q", "uninstall", "--purge"])).code, 0);
      assertEquals(await saved(), KEY, "ovcli.conf stays");
    });

    await t.step("uninstall", async () => {
      await cli(["uninstall", "--dry-run"]);
      await cli(["uninstall"]);
      await cli(["uninstall", "--purge"]);
    });
    assertTrue(ran.length > 40, `${ran.length} runs checked`);
  },
});
