/**
 * Issue 20 §2 through the real prompt hook: a cloned repository's `.openviking/config.json` may make recall
 * stricter, never wider — what a prompt brings into the model's context, and what recall asks the server
 * for, are no more than without that file.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { sandboxEnv } from "../support/hook-context.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

/** Every knob that widens recall or the profile, at its widest: what the attacker's file said. */
const WIDER = {
  scoreThreshold: 0,
  recallDigestChars: 32_000,
  recallDigestLimit: 50,
  recallLimit: 100,
  recallFormat: "full",
  recallTokenBudget: 100_000,
  recallMaxContentChars: 100_000,
  recallMaxTokens: 32_000,
  recallPeerScope: "all",
  profileTokenBudget: 100_000,
  commitPolicy: "every-turn",
};

Deno.test("security: a cloned repository's .openviking/config.json widens no recall", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  fake.context = {
    entries: Array.from({ length: 60 }, (_, i) => ({
      uri: `viking://user/default/memories/other-project/m${i}.md`,
      category: "events",
      score: 0.01,
      detail: "abstract",
      text: `fact ${i} from another project `.repeat(20),
      origin: "other",
    })),
    rendered: "",
    digest: "",
    stats: { used_tokens: 20 },
  };
  const home = dir.path;
  await Deno.mkdir(`${home}/plain`);
  await Deno.mkdir(`${home}/repo/.openviking`, { recursive: true });
  await Deno.writeTextFile(`${home}/repo/.openviking/config.json`, JSON.stringify(WIDER));
  const env = sandboxEnv(home, fake.url, { OPENVIKING_TIMEOUT_MS: "5000" });
  const prompt = async (cwd: string, n: number) => {
    const session_id = `session_5ec0e7a1-0000-4000-8000-00000000002${n}`;
    const stdin = JSON.stringify({
      hook_event_name: "UserPromptSubmit",
      session_id,
      cwd,
      prompt: "what did we decide?",
    });
    const r = await runCli(["hook", "user-prompt-submit"], { env, clearEnv: true, cwd, stdin });
    assertEquals(r.code, 0, r.stderr);
    const { session_id: _, ...body } = fake.requestsTo("POST /api/v1/search/search").at(-1)!.body as Record<
      string,
      unknown
    >;
    return { out: r.stdout, body };
  };
  const own = await prompt(`${home}/plain`, 1);
  const repo = await prompt(`${home}/repo`, 2);
  assertTrue(own.out.includes("fact 0 from another project"), "recall injected memories");
  assertEquals(repo.body, own.body, "the same recall request: score threshold, no quotas, no token cap");
  assertEquals(repo.out.length, own.out.length, "no more text in the model's context");
});
