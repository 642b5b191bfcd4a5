/**
 * The extraction alarm against the real OpenViking 0.5.2 server with a misconfigured chat model (its `vlm`
 * `api_base` an address nothing answers at): three commits, and `status`, `doctor` and the next session's
 * first prompt say memory is not made, with the server's own words.
 */

import { assertEquals, assertMatch, assertStringIncludes } from "../support/assert.ts";
import { startRealOrSkip } from "../support/real-openviking.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";

/** Posts `body` to the server; the reply's `result`. */
async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  assertEquals(res.status, 200, JSON.stringify(json));
  return json.result;
}

/** The task once it is finished. */
async function finished(url: string, id: string): Promise<Record<string, unknown>> {
  for (const end = Date.now() + 60_000; Date.now() < end;) {
    const t = (await (await fetch(`${url}/api/v1/tasks/${id}`)).json()).result;
    if (t.status === "failed" || t.status === "completed") return t;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`task ${id} did not finish`);
}

Deno.test({
  name: "a misconfigured chat model on the real server: three failed commits are told with its words",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const server = await startRealOrSkip("a misconfigured chat model on the real server", {
    vlmBaseUrl: "http://127.0.0.1:9/v1",
  });
  if (!server) return;
  await using home = await tempDir();
  const t0 = performance.now();
  try {
    const errors = await Promise.all(["0", "1", "2"].map(async (n) => {
      const sid = `kc-alarm-${n}`;
      await post(server.url, `/api/v1/sessions/${sid}/messages/batch`, {
        messages: [
          { role: "user", content: `The user keeps release notes in docs/release-${n}.md.`, turn_id: "0" },
          { role: "assistant", content: "Noted.", turn_id: "0" },
        ],
      });
      const commit = await post(server.url, `/api/v1/sessions/${sid}/commit`, {});
      const task = await finished(server.url, String(commit.task_id));
      assertEquals(task.status, "failed", JSON.stringify(task));
      return String(task.error);
    }));
    console.log(
      `  three commits failed in ${Math.round(performance.now() - t0)} ms: ${errors[2].slice(0, 160)}`,
    );
    const env = {
      HOME: home.path,
      KIMI_CODE_HOME: `${home.path}/.kimi-code`,
      PATH: Deno.env.get("PATH") ?? "/usr/bin",
      OPENVIKING_URL: server.url,
      OPENVIKING_WRITE_PATH_ASYNC: "0",
    };
    const status = JSON.parse((await runCli(["status", "--json"], { env, clearEnv: true })).stdout);
    assertEquals(status.extraction.failed, 3);
    assertStringIncludes(status.extraction.message, errors[2].replace(/\s+/g, " ").trim().slice(0, 60));
    assertStringIncludes(status.extraction.fix, "ov.conf");
    await Deno.mkdir(env.KIMI_CODE_HOME, { recursive: true });
    const doctor = JSON.parse((await runCli(["doctor", "--json"], { env, clearEnv: true })).stdout);
    assertEquals(doctor.checks.find((c: { id: string }) => c.id === "extraction").status, "fail");
    const hook = (event: string, input: Record<string, unknown>) =>
      runCli(["hook", event], { env, clearEnv: true, stdin: JSON.stringify({ cwd: home.path, ...input }) });
    await hook("session-start", { hook_event_name: "SessionStart", session_id: "s2", source: "startup" });
    const first = await hook("user-prompt-submit", {
      hook_event_name: "UserPromptSubmit",
      session_id: "s2",
      prompt: "where do release notes go?",
    });
    assertMatch(
      first.stdout,
      /openviking-kimi: OpenViking makes no memory \(the last 3 extractions failed\); `[^`]+ doctor` says why\n$/,
    );
    console.log(`  done in ${Math.round(performance.now() - t0)} ms (server start ${server.startupMs} ms)`);
  } finally {
    await server.stop();
  }
});
