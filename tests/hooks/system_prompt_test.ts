/**
 * The plugin's system prompt, the hooks in-process as their detached workers run them: in plugin mode the
 * SessionStart worker fills `system-prompt.md` with the profile and the first prompt prints none; a commit's
 * worker refreshes a file older than 10 minutes.
 */

import { assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { FAKE_DIGEST, FakeOpenViking } from "../support/fake-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { WORKER_ENV } from "../../kimi/detach.ts";
import { tempDir } from "../support/temp.ts";
import { systemPromptText } from "../../memory/system-prompt.ts";

const SESSION = "session_5b1c1f0e-1111-4222-8333-944455556666";

Deno.test("plugin mode: the SessionStart and commit workers put the profile into the system prompt; the first prompt prints none", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  const root = `${dir.path}/.kimi-code/plugins/managed/openviking-memory`;
  await Deno.mkdir(root, { recursive: true });
  const file = `${root}/system-prompt.md`;
  const initial = systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 });
  const env = sandboxEnv(dir.path, fake.url, { KIMI_PLUGIN_ROOT: root, OPENVIKING_CAPTURE_WAIT_MS: "0" });
  const hook = async (
    event: string,
    extra: Record<string, unknown> = {},
    more: Record<string, string> = {},
  ) =>
    (await hookIn(event.replace(/[A-Z]/g, (c, i) => `${i ? "-" : ""}${c.toLowerCase()}`), {
      env: { ...env, ...more },
      stdin: JSON.stringify({
        hook_event_name: event,
        session_id: SESSION,
        cwd: "/home/user/proj",
        ...extra,
      }),
    })).stdout;
  const worker = { [WORKER_ENV]: "1" };
  const refreshed = async () => {
    const t = await Deno.readTextFile(file);
    assertStringIncludes(t, "Name: Test User");
    return t;
  };

  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  assertEquals(await hook("SessionStart", { source: "startup" }, worker), "");
  assertStringIncludes(await refreshed(), '<user-profile uri="viking://user/default/memories/profile.md">');
  assertEquals((await Deno.stat(file)).mode! & 0o777, 0o600);
  const prompt = await hook("UserPromptSubmit", { prompt: "how should I indent this file?" }, {
    OPENVIKING_DEBUG: "1",
  });
  assertEquals(prompt, `${FAKE_DIGEST}\n`, "the memory, and no profile: it is in the system prompt");
  const log = await Deno.readTextFile(`${dir.path}/.openviking/logs/kimicode-hooks.log`);
  assertMatch(log, /"event":"user-prompt-submit".*"profile":"system-prompt"/);
  assertEquals(fake.requestsTo("GET /api/v1/content/read").length, 1, "profile.md read by the worker only");

  await Deno.writeTextFile(file, initial, { mode: 0o600 });
  const old = new Date(Date.now() - 60 * 60_000);
  await Deno.utime(file, old, old);
  await placeJournal(
    dir.path,
    SESSION,
    new JournalBuilder().simpleTurn("remember I like tabs", "Noted.").toString(),
  );
  assertEquals(await hook("Stop", {}, worker), "");
  assertEquals(fake.sessions.get(`kc-${SESSION}`)?.commits, 1);
  assertStringIncludes(await refreshed(), "## The user's profile");
});
