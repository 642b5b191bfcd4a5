/**
 * The plugin's system prompt from the hooks' side, through the real entry point: in plugin mode (Kimi gives
 * the hooks `KIMI_PLUGIN_ROOT`) the SessionStart worker fills `system-prompt.md` with the current profile and
 * the first prompt prints no profile; a commit's worker refreshes it.
 */

import { assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { FAKE_DIGEST, FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { systemPromptText } from "../../memory/system-prompt.ts";

const SESSION = "session_5b1c1f0e-1111-4222-8333-944455556666";

const payload = (event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ hook_event_name: event, session_id: SESSION, cwd: "/home/user/proj", ...extra });

/** A sandbox with a plugin root holding a fresh (install-time) system prompt. */
async function plugin(dir: string, url: string) {
  const root = `${dir}/.kimi-code/plugins/managed/openviking-memory`;
  await Deno.mkdir(root, { recursive: true });
  const file = `${root}/system-prompt.md`;
  const initial = systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 });
  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  return { root, file, initial, env: sandboxEnv(dir, url, { KIMI_PLUGIN_ROOT: root }) };
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("plugin mode: the SessionStart worker puts the profile into the system prompt; the first prompt prints none", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const p = await plugin(dir.path, fake.url);
  const start = await runCli(["hook", "session-start"], {
    env: p.env,
    clearEnv: true,
    stdin: payload("SessionStart", { source: "startup" }),
  });
  assertEquals([start.code, start.stdout], [0, ""]);
  const text = await until("the refreshed system prompt", async () => {
    const t = await Deno.readTextFile(p.file);
    return t.includes("Name: Test User") ? t : undefined;
  });
  assertStringIncludes(text, '<user-profile uri="viking://user/default/memories/profile.md">');
  assertEquals((await Deno.stat(p.file)).mode! & 0o777, 0o600);

  const prompt = await runCli(["hook", "user-prompt-submit"], {
    env: { ...p.env, OPENVIKING_DEBUG: "1" },
    clearEnv: true,
    stdin: payload("UserPromptSubmit", { prompt: "how should I indent this file?" }),
  });
  assertEquals(prompt.stdout, `${FAKE_DIGEST}\n`, "the memory, and no profile: it is in the system prompt");
  const log = await Deno.readTextFile(`${dir.path}/.openviking/logs/kimicode-hooks.log`);
  assertMatch(log, /"event":"user-prompt-submit".*"profile":"system-prompt"/);
  assertEquals(fake.requestsTo("GET /api/v1/content/read").length, 1, "profile.md read by the worker only");
});

Deno.test("plugin mode: a commit's worker refreshes the system prompt when it is older than 10 minutes", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const p = await plugin(dir.path, fake.url);
  const old = new Date(Date.now() - 60 * 60_000);
  await Deno.utime(p.file, old, old);
  await placeJournal(
    dir.path,
    SESSION,
    new JournalBuilder().simpleTurn("remember I like tabs", "Noted.").toString(),
  );
  const stop = await runCli(["hook", "stop"], {
    env: { ...p.env, OPENVIKING_CAPTURE_WAIT_MS: "0" },
    clearEnv: true,
    stdin: payload("Stop"),
  });
  assertEquals([stop.code, stop.stdout], [0, ""]);
  await until(
    "the commit",
    () => Promise.resolve(fake.sessions.get(`kc-${SESSION}`)?.commits ? true : undefined),
  );
  const text = await until("the refreshed system prompt", async () => {
    const t = await Deno.readTextFile(p.file);
    return t.includes("Name: Test User") ? t : undefined;
  });
  assertStringIncludes(text, "## The user's profile");
});
