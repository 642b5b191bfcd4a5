/**
 * Issue 20, §1 and §2, through `hook user-prompt-submit` and `hook stop` in-process (runHook, the fake
 * OpenViking): every real-format credential of
 * tests/support/credentials.ts, pasted into prompts and said in the answers, reaches OpenViking in no
 * recall query and no captured message — journal capture and the kept-prompt fallback alike — and lands in
 * no file we write (ledger, hook state, the debug log). A cloned repository's `.openviking/config.json`
 * cannot turn redaction (or the debug log) off.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { CREDENTIALS } from "../support/credentials.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { walk } from "../chaos/audit.ts";
import { world } from "../hooks/world.ts";

/** The samples in prompts short enough that the recall query (≤ 2000 characters) carries each whole. */
function prompts(): string[] {
  const out: string[] = [];
  for (const c of CREDENTIALS) {
    const last = out.at(-1);
    if (last !== undefined && last.length + c.text.length < 1200) {
      out[out.length - 1] = `${last}\n\n${c.text}`;
    } else out.push(`Why does this fail?\n${c.text}`);
  }
  return out;
}

/** Every file under `dir` with its text. */
async function files(dir: string): Promise<[string, string][]> {
  const text = async (
    path: string,
  ): Promise<[string, string]> => [path, await Deno.readTextFile(path).catch(() => "")];
  return await Promise.all((await walk(dir)).filter((f) => !f.isDir).map((f) => text(f.path)));
}

/** The secrets of `secrets` found in `text`, as `where: secret`. */
const leaks = (where: string, text: string, secrets: readonly string[]) =>
  secrets.filter((s) => text.includes(s)).map((s) => `${where}: ${s}`);

/** Runs one hook in-process with `payload` on its stdin. */
async function hook(env: Record<string, string>, event: string, payload: Record<string, unknown>) {
  await hookIn(event, { env, stdin: JSON.stringify(payload) });
}

/**
 * A sandbox where `texts` are the prompts (and the answers) of two sessions: one whose journal capture
 * reads, one without a journal (capture sends the kept prompts). Returns every text that left, and every
 * file written in the home (Kimi's journals aside: they are the user's).
 */
async function liveWith(texts: string[], options: { cwd?: (home: string) => Promise<string> } = {}) {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const home = dir.path;
  const cwd = options.cwd ? await options.cwd(home) : `${home}/proj`;
  const env = sandboxEnv(home, fake.url, {
    OPENVIKING_DEBUG: "1",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_WRITE_PATH_ASYNC: "0",
  });
  const journal = new JournalBuilder();
  for (const t of texts) journal.simpleTurn(t, `I see the problem:\n${t}\nRotate it.`);
  const withJournal = "session_c0ffee00-0000-4000-8000-000000000020";
  const keptOnly = "session_c0ffee00-0000-4000-8000-000000000021";
  await placeJournal(home, withJournal, journal.toString());
  for (const session_id of [withJournal, keptOnly]) {
    for (const t of texts) {
      await hook(env, "user-prompt-submit", { session_id, cwd, prompt: [{ type: "text", text: t }] });
    }
    await hook(env, "stop", { session_id, cwd, stop_hook_active: false });
  }
  const sent = [
    ...fake.requestsTo("POST /api/v1/search/search").map((r) => [`query`, JSON.stringify(r.body)]),
    ...[withJournal, keptOnly].flatMap((s) =>
      fake.messages(`kc-${s}`).map((m) => [`captured ${s.slice(-2)} ${m.role}`, m.content])
    ),
  ] as [string, string][];
  return {
    sent,
    landed: (await files(home)).filter(([p]) => !p.startsWith(`${home}/.kimi-code/`)),
    queries: fake.requestsTo("POST /api/v1/search/search").length,
  };
}

Deno.test("security: no real-format credential leaves in a recall query or a capture, or lands in a file of ours", async () => {
  const texts = prompts();
  const { sent, landed, queries } = await liveWith(texts);
  assertEquals(queries, 2 * texts.length, "every prompt was a recall query");
  assertTrue(
    sent.filter(([w]) => w.startsWith("captured 20")).length === 2 * texts.length,
    "the journal's turns",
  );
  assertTrue(sent.filter(([w]) => w.startsWith("captured 21")).length === texts.length, "the kept prompts");
  assertTrue(landed.some(([p]) => p.endsWith("kimicode-hooks.log")), "the debug log was written");
  assertTrue(landed.some(([p]) => p.includes("/ledger/")), "the ledger was written");
  assertTrue(landed.some(([p]) => p.endsWith(".prompt.json")), "the prompt state (kept prompts) was written");
  const secrets = CREDENTIALS.flatMap((c) => [c.secret, c.tail]);
  assertEquals([...sent, ...landed].flatMap(([where, text]) => leaks(where, text, secrets)), []);
  assertTrue(sent.some(([, text]) => text.includes("[REDACTED]")), "what was sent was redacted, not dropped");
});

Deno.test("security: a cloned repository's .openviking/config.json cannot turn redaction or the debug log off", async () => {
  const token = ["ghp_", "ZX7DfL3FuoXmsC4vynNdwifV0xbWhEpIjsXU"].join("");
  const repo = async (home: string) => {
    await Deno.mkdir(`${home}/repo/.openviking`, { recursive: true });
    await Deno.writeTextFile(
      `${home}/repo/.openviking/config.json`,
      JSON.stringify({ redact: false, debugLogPath: `${home}/collected.log`, captureMaxLength: 10_000_000 }),
    );
    return `${home}/repo`;
  };
  const { sent, landed, queries } = await liveWith([`push fails with my token ${token}, why?`], {
    cwd: repo,
  });
  assertEquals(queries, 2);
  assertEquals([...sent, ...landed].flatMap(([where, text]) => leaks(where, text, [token])), []);
  assertTrue(!landed.some(([p]) => p.endsWith("collected.log")), "the repository chose no log path");
  const log = landed.find(([p]) => p.endsWith("kimicode-hooks.log"))?.[1] ?? "";
  assertTrue(
    log.includes('\\"redact\\": false is ignored: a workspace file may only turn it on'),
    "the debug log names what was ignored",
  );
});

Deno.test("security: a secret redacted in one capture is redacted where the session's later captures, recall queries, kept prompts and fallback sends repeat it bare", async () => {
  await using w = await world();
  await w.say("connect with db_password=Tr0ub4dorXq9 please", "connected with the password you gave");
  await w.hook("stop");
  const journal = await w.say(
    "it failed: retry with Tr0ub4dorXq9 once more",
    "retried with 'Tr0ub4dorXq9', no",
  );
  await w.hook("stop");
  const sent = w.fake.messages(w.ov).map((m) => m.content);
  assertEquals(sent, [
    "connect with db_password=[REDACTED] please",
    "connected with the password you gave",
    "it failed: retry with [REDACTED] once more",
    "retried with '[REDACTED]', no",
  ]);
  assertTrue(!JSON.stringify(await w.state()).includes("Tr0ub4dorXq9"), "the state keeps no secret");
  await w.run("user-prompt-submit", { prompt: "log in again with Tr0ub4dorXq9 and tell me why it fails" });
  const query = w.fake.requestsTo("POST /api/v1/search/search").at(-1)?.body;
  assertEquals((query as { query?: string })?.query, "log in again with [REDACTED] and tell me why it fails");
  assertEquals(
    (await w.promptState()).fallbackPrompts.map((p) => p.text).filter((t) => t.includes("Tr0ub4dorXq9")),
    [],
    "the kept prompt on disk holds no learned secret",
  );
  await Deno.remove(journal); // the kept prompt goes by the fallback, redacted as the capture would
  await w.hook("stop");
  assertEquals(
    w.fake.messages(w.ov).at(-1)?.content,
    "log in again with [REDACTED] and tell me why it fails",
  );
});
