/**
 * The prompt hook uses no Node timer: in Deno 2.9 the first setTimeout, setInterval or clearTimeout loads
 * Node's timers module, ~4 ms of every hook run (measured: `clearTimeout(undefined)` alone costs it).
 */

import { assertEquals, assertStringIncludes } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { echoContext, FakeOpenViking } from "../support/fake-openviking.ts";
import { prodRunArgs, ROOT, runProcess } from "../support/run.ts";
import { isolatedEnv } from "../install/helpers.ts";

/** Runs a hook through the timer probe; returns which timers it used and what it printed. */
async function probe(event: string, payload: unknown, env: Record<string, string>) {
  const args = [...await prodRunArgs(), `${ROOT}/tests/support/timer-probe.ts`, event];
  const out = await runProcess(Deno.execPath(), args, {
    env,
    clearEnv: true,
    stdin: JSON.stringify(payload),
  });
  assertEquals(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as { calls: string[]; stdout: string };
}

Deno.test("the prompt hook recalls without touching a Node timer, first prompt and later ones", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  fake.contextFor = echoContext; // a memory per query: the later prompt has one the session has not seen
  const env = isolatedEnv(`${dir.path}/home`, { OPENVIKING_URL: fake.url, OPENVIKING_DEBUG: "1" });
  for (const text of ["how should I indent this file?", "and how should I name the tests?"]) {
    const payload = { session_id: "session_timers", cwd: dir.path, prompt: [{ type: "text", text }] };
    const run = await probe("user-prompt-submit", payload, env);
    assertStringIncludes(run.stdout, "<openviking-context");
    assertEquals(run.calls, [], "no setTimeout/setInterval/clearTimeout/clearInterval");
  }
});
