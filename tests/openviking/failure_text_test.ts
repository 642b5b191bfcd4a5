/**
 * What a server says, through the real entry points: its words reach the screen and our files neutralised and
 * without a secret, whoever shows them (the client's own cleaning is proved in openviking/client_test.ts).
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { DEFAULT_ENTRY, FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { queuedMessages } from "../support/queue.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const SESSION = "session_7e1f0a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b";
/** A window title, a screen clear and a colour: what a hostile server would like a terminal to act on. */
const ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31m";
/** Every byte of those sequences that a terminal acts on. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** A sandbox: HOME, the fake server, and the environment every run gets (nothing of the real user). */
async function sandbox(options: Parameters<typeof FakeOpenViking.start>[0] = {}, key = "") {
  const dir = await tempDir();
  const fake = await FakeOpenViking.start(options);
  const env = sandboxEnv(dir.path, fake.url, {
    OPENVIKING_TIMEOUT_MS: "2000",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    // The capture runs in the hook process itself: its outcome is recorded when the hook exits.
    OPENVIKING_WRITE_PATH_ASYNC: "0",
    OPENVIKING_DEBUG: "1",
    ...(key ? { OPENVIKING_API_KEY: key } : {}),
  });
  const outputs: string[] = [];
  const run = async (args: string[], payload?: Record<string, unknown>) => {
    const stdin = payload ? JSON.stringify({ session_id: SESSION, cwd: dir.path, ...payload }) : undefined;
    const r = await runCli(args, { env, clearEnv: true, stdin });
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const stop = async () => {
    const r = await run(["hook", "stop"], { hook_event_name: "Stop" });
    assertEquals([r.code, r.stdout], [0, ""], r.stderr);
  };
  return {
    home: dir.path,
    fake,
    env,
    outputs,
    run,
    stop,
    pending: `${dir.path}/.openviking/pending`,
    journal: (turns: number) => {
      const j = new JournalBuilder();
      for (let i = 0; i < turns; i++) j.simpleTurn(`question ${i} about the build`, `answer ${i}: run tests`);
      return placeJournal(dir.path, SESSION, j.toString());
    },
    async [Symbol.asyncDispose]() {
      await fake.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

/** Every file under `dir` with its text. */
async function filesUnder(dir: string, out: { path: string; text: string }[] = []) {
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) await filesUnder(path, out);
    else if (e.isFile) out.push({ path, text: await Deno.readTextFile(path) });
  }
  return out;
}

Deno.test("failure text: a 401 quoting the key, a URL's password and escape codes leaves none of them in any output or file", async () => {
  const key = "sk-leaky-0123456789abcdef";
  const password = "hunter2-pa55word";
  await using s = await sandbox({ apiKey: "the-right-key-789" }, key);
  await s.journal(2);
  const message =
    `invalid api key: Bearer ${key} (key=${key}); ${ESCAPES}sign in at https://admin:${password}@sso.example/`;
  s.fake.fault({ route: "*", status: 401, error: { code: "UNAUTHENTICATED", message } });
  await s.stop();
  assertEquals((await queuedMessages(s.pending)).length, 4, "the refused writes wait in the queue");
  const ask = { hook_event_name: "UserPromptSubmit", prompt: "how do I indent code here" };
  const prompt = await s.run(["hook", "user-prompt-submit"], ask);
  assertEquals(prompt.code, 0, prompt.stderr);
  const replay = await s.run(["replay", "--json"]);
  assertEquals(JSON.parse(replay.stdout).cause.kind, "auth");
  assertMatch(JSON.parse(replay.stdout).cause.message, /^invalid api key: Bearer \*\*\* [^"]*sign in/);
  await s.stop();
  const files = await filesUnder(s.home);
  assertTrue(files.some((f) => f.path.includes("/ledger/")), "the ledger was written");
  assertTrue(files.some((f) => f.path.includes("/logs/")), "the log was written");
  for (const text of s.outputs) {
    assertTrue(!CONTROL.test(text), `a control byte printed: ${JSON.stringify(text)}`);
  }
  for (const f of files.filter((f) => f.path.includes("/.openviking/"))) {
    assertTrue(!f.text.includes("]0;owned") && !f.text.includes("\\u001b"), `escape codes kept in ${f.path}`);
  }
  for (const secret of [key, password]) {
    for (const text of s.outputs) assertTrue(!text.includes(secret), `printed: ${text}`);
    for (const f of files) assertTrue(!f.text.includes(secret), `${secret} written to ${f.path}`);
  }
});

Deno.test("failure text: status, recall and doctor print what a server says of its tasks, memories and itself without its escape codes", async () => {
  await using s = await sandbox();
  s.fake.taskOutcome = "failed";
  s.fake.taskError = `extraction failed ${ESCAPES}RED`;
  s.fake.context.entries = [{ ...DEFAULT_ENTRY, uri: `viking://user/default/memories/x${ESCAPES}.md` }];
  await s.journal(1);
  await s.stop(); // committed: its task fails with the hostile error
  const health = JSON.stringify({ status: "ok", healthy: true, version: `0.5.2${ESCAPES}` });
  s.fake.fault({
    route: "GET /health",
    raw: { status: 200, headers: { "content-type": "application/json" }, body: health },
  });
  const recall = ["recall", "how should I indent this file?", "--cwd", s.home];
  const printed = {
    status: await s.run(["status", "--session", SESSION]),
    statusJson: await s.run(["status", "--json", "--session", SESSION]),
    recall: await s.run(recall),
    recallJson: await s.run([...recall, "--json"]),
    doctor: await s.run(["doctor"]),
    doctorJson: await s.run(["doctor", "--json"]),
  };
  assertMatch(printed.status.stdout, /extraction failed/, "the task's error is still told");
  assertMatch(printed.recall.stdout, /viking:\/\/user\/default\/memories\/x/, "the memory is still listed");
  assertMatch(printed.doctor.stdout, /OpenViking 0\.5\.2/, "the server's version is still told");
  for (const [what, r] of Object.entries(printed)) {
    for (const text of [r.stdout, r.stderr]) {
      assertTrue(!CONTROL.test(text), `${what} printed a control byte: ${JSON.stringify(text)}`);
      assertTrue(!text.includes("]0;owned"), `${what}: no part of the window title sequence survives`);
    }
  }
});
