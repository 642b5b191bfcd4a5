/**
 * Memory features against one real OpenViking 0.5.2 server: the extraction alarm (the model stub's chat
 * switched off), recall scopes across two projects, and the commit policy's idle commit.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { startRealOrSkip } from "../support/real-openviking.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { readState } from "../../memory/state.ts";
import { IDLE_COMMIT_SECONDS } from "../../openviking/sessions.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const SESSION = "session_5e1d2c3b-0a9f-4e8d-b7c6-00000000c0de";
const USER = "viking://user/default";

/** Project A's memories, the user's preference, and project B's, where the server keeps each. */
const A = {
  [`${USER}/memories/events/atlas-release.md`]: "Atlas release 2.3 shipped the streaming tile encoder.",
  [`${USER}/peers/project-a/memories/events/atlas-deploy.md`]:
    "Atlas release deploys run from CI on every tag.",
};
const PREFERENCE = { [`${USER}/memories/preferences/indent.md`]: "The user indents TypeScript with tabs." };
const B = {
  [`${USER}/memories/events/borealis-release.md`]:
    "Borealis release 4.1 moved the billing database to Postgres 16.",
  [`${USER}/memories/entities/borealis-billing.md`]:
    "Borealis billing deploys its release with a nightly job.",
  [`${USER}/peers/project-b/memories/events/borealis-deploy.md`]:
    "Borealis release deploys run from the ops repository.",
};
/** What A's user asks. */
const PROMPTS = [
  "how do release deploys run here?",
  "what did the last release ship and which database does it use?",
  "how should I indent the release script?",
];

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
  name: "memory features on the real OpenViking: the extraction alarm, recall scopes, the idle commit",
  ignore: REAL === "0",
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const server = await startRealOrSkip("memory features on the real server");
  if (!server) return;
  console.log(`  server started in ${server.startupMs} ms`);
  try {
    await t.step("a broken chat model: three failed commits are told with the server's words", async () => {
      server.stub!.chatDown = true;
      try {
        await using home = await tempDir();
        const t0 = performance.now();
        const errors = await Promise.all(["0", "1", "2"].map(async (n) => {
          const sid = `kc-alarm-${n}`;
          await post(server.url, `/api/v1/sessions/${sid}/messages/batch`, {
            messages: [
              {
                role: "user",
                content: `The user keeps release notes in docs/release-${n}.md.`,
                turn_id: "0",
              },
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
          runCli(["hook", event], {
            env,
            clearEnv: true,
            stdin: JSON.stringify({ cwd: home.path, ...input }),
          });
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
        console.log(
          `  done in ${Math.round(performance.now() - t0)} ms (server start ${server.startupMs} ms)`,
        );
      } finally {
        server.stub!.chatDown = false;
      }
    });

    await t.step("two projects: B's memories in A's digests under each recall scope", async () => {
      await using home = await tempDir();
      const t0 = performance.now();
      for (const [uri, content] of Object.entries({ ...A, ...PREFERENCE, ...B })) {
        const w = await fetch(`${server.url}/api/v1/content/write`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ uri, content, mode: "create", wait: true }),
        });
        assertEquals(w.status, 200, `${uri}: ${await w.text()}`);
      }
      console.log(`  written in ${Math.round(performance.now() - t0)} ms`);
      const leaked: Record<string, number> = {};
      const shown: Record<string, string[]> = {};
      for (const scope of ["all", "actor", "strict"]) {
        shown[scope] = [];
        for (const text of PROMPTS) {
          const r = await runCli(["recall", text, "--json"], {
            clearEnv: true,
            env: {
              HOME: home.path,
              PATH: Deno.env.get("PATH") ?? "/usr/bin",
              OPENVIKING_URL: server.url,
              OPENVIKING_PEER_ID: "project-a",
              OPENVIKING_RECALL_PEER_SCOPE: scope,
              OPENVIKING_SCORE_THRESHOLD: "0", // every memory the server finds: the most a digest could leak
            },
          });
          const out = JSON.parse(r.stdout);
          assertEquals(out.failure, undefined, r.stdout);
          shown[scope].push(
            ...Object.keys({ ...A, ...PREFERENCE, ...B }).filter((u) => out.stdout.includes(u)),
          );
        }
        leaked[scope] = shown[scope].filter((u) => u in B).length;
      }
      console.log(`  recalled in ${Math.round(performance.now() - t0)} ms`);
      console.log(`  B's memories in A's digests (${PROMPTS.length} prompts): ${JSON.stringify(leaked)}`);
      assertTrue(leaked.all > 0 && leaked.actor > 0, "today B's memories reach A's digests");
      assertEquals(leaked.strict, 0);
      const strictShows = new Set(shown.strict);
      assertTrue(
        strictShows.has(`${USER}/peers/project-a/memories/events/atlas-deploy.md`),
        "A's peer memory",
      );
      assertTrue(strictShows.has(`${USER}/memories/preferences/indent.md`), "the user's preference");
    });

    await t.step(
      "balanced sets the session's idle commit (PATCH accepted), commits at SessionEnd",
      async () => {
        await using dir = await tempDir();
        const env = sandboxEnv(dir.path, server.url, {
          OPENVIKING_COMMIT_POLICY: "balanced",
          OPENVIKING_CAPTURE_WAIT_MS: "0",
          OPENVIKING_TIMEOUT_MS: "20000",
        });
        const stdin = (name: string) =>
          JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: dir.path });
        const j = new JournalBuilder().simpleTurn("which port does staging use?", "staging listens on 6543");
        await placeJournal(dir.path, SESSION, j.toString());
        await hookIn("stop", { env, stdin: stdin("Stop") });
        const meta = async () => {
          const res = await fetch(`${server.url}/api/v1/sessions/kc-${SESSION}`);
          return (await res.json() as { result: Record<string, unknown> }).result;
        };
        const after = await meta();
        assertEquals(after.commit_count, 0, "a short turn is not committed yet");
        assertEquals(after.auto_commit_policy, {
          pending_token_threshold: 0,
          message_count_threshold: 0,
          idle_timeout_seconds: IDLE_COMMIT_SECONDS,
          keep_recent_count: 0,
          min_commit_interval_seconds: 0,
        });
        const state = await readState(`${dir.path}/.openviking/hook-state/kimicode/${SESSION}.json`);
        assertEquals(state.idleCommit, "set");
        await hookIn("session-end", { env, stdin: stdin("SessionEnd") });
        assertEquals((await meta()).commit_count, 1);
      },
    );
  } finally {
    await server.stop();
  }
});
