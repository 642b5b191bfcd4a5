/**
 * Against one REAL OpenViking server (PyPI `openviking`, tests/support/real-openviking.ts): every endpoint the
 * plugin uses (tests/e2e/probe.ts), the extraction
 * alarm (the model stub's chat switched off), recall scopes across two projects, the commit policy's idle
 * commit; then with the real Kimi Code CLI what Kimi's turns leave in a real session (read back through the server's API),
 * commits accepted as tasks, recall of what an earlier session taught, our MCP tools answered by the real
 * `/mcp`.
 */

import { MEMORY_TOOLS } from "../../memory/tools.ts";
import { hookIn, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { runCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { KIMI_VERSIONS, type KimiInstall } from "../support/kimi.ts";
import { messageText } from "../support/model-server.ts";
import { OPENVIKING_VERSION, type RealOpenViking, startRealOrSkip } from "../support/real-openviking.ts";
import { KNOBS } from "../../openviking/config.ts";
import {
  arr,
  call,
  commitAndWait,
  type Json,
  mcpMessages,
  obj,
  probeEndpoints,
  type Reply,
} from "./probe.ts";
import {
  E2E_TEST,
  isHookResult,
  kimiOrSkip,
  leaks,
  MCP_ARGS,
  MCP_PREFIX,
  type Mode,
  type Msg,
  poll,
  Rig,
  skip,
} from "./harness.ts";

const REAL = Deno.env.get("OPENVIKING_REAL") ?? "";
const NAME = `e2e real Kimi + real OpenViking ${OPENVIKING_VERSION}`;

/** Direct calls to the real server, as the identity the plugin was installed with. */
class RealApi {
  constructor(readonly server: RealOpenViking, readonly account: string, readonly user: string) {}

  call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    return call(this.server, method, path, body, (h) => {
      h.delete("X-OpenViking-Actor-Peer");
      const who = { "X-OpenViking-Account": this.account, "X-OpenViking-User": this.user, ...headers };
      for (const [k, v] of Object.entries(who)) h.set(k, v);
    });
  }

  /**
   * Every message of a session, read back: the archived ones (one archive per commit, read from its
   * messages.jsonl) and the live ones (`/context`), by message id.
   */
  async messages(sid: string): Promise<Msg[] | undefined> {
    const ctx = await this.call("GET", `/api/v1/sessions/${encodeURIComponent(sid)}/context`);
    if (ctx.status === 404) return [];
    const meta = await this.call("GET", `/api/v1/sessions/${encodeURIComponent(sid)}`);
    if (ctx.status !== 200 || meta.status !== 200) return undefined;
    const info = obj(meta.json.result);
    const byId = new Map<string, Json>();
    for (let k = 1; k <= Number(info.commit_count ?? 0); k++) {
      const uri = `${info.uri}/history/archive_${String(k).padStart(3, "0")}/messages.jsonl`;
      const r = await this.call("GET", `/api/v1/content/read?uri=${encodeURIComponent(uri)}`);
      if (r.status !== 200) return undefined;
      for (const line of String(r.json.result).split("\n").filter((l) => l.trim())) {
        const m = obj(JSON.parse(line));
        byId.set(String(m.id), m);
      }
    }
    for (const m of arr(obj(ctx.json.result).messages)) byId.set(String(m.id), m);
    const text = (m: Json) => arr(m.parts).map((p) => String(p.text ?? "")).join("");
    return [...byId.values()]
      .sort((x, y) => String(x.created_at).localeCompare(String(y.created_at)))
      .map((m): Msg => [String(m.turn_id), String(m.role), text(m)]);
  }

  /** The session's commit tasks (each one an accepted commit). */
  async commitTasks(sid: string): Promise<Json[]> {
    const query = `task_type=session_commit&resource_id=${encodeURIComponent(sid)}`;
    const r = await this.call("GET", `/api/v1/tasks?${query}`);
    assertEquals(r.status, 200, r.text);
    return arr(r.json.result);
  }

  /** A JSON-RPC call to `/mcp` (SSE or JSON reply); returns the result object. */
  async mcp(method: string, params: Json): Promise<Json> {
    const mcp = { Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18" };
    const r = await this.call("POST", "/mcp", { jsonrpc: "2.0", id: 1, method, params }, mcp);
    assertEquals(r.status, 200, r.text);
    return obj(mcpMessages(r).at(-1)?.result);
  }
}

/** Waits until the real session holds exactly `expected`, then checks it again a second later (no late duplicate). */
async function expectRealSession(
  api: RealApi,
  sid: string,
  expected: Msg[],
  timeoutMs = 60_000,
): Promise<void> {
  let last: Msg[] | undefined;
  const read = async () => {
    last = await api.messages(sid) ?? last;
    return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined;
  };
  await poll(`${expected.length} messages in the real session ${sid}`, read, timeoutMs, () => last);
  await new Promise((r) => setTimeout(r, 1000));
  last = await poll(
    `a second read of the real session ${sid}`,
    async () => await api.messages(sid),
    timeoutMs,
  );
  assertEquals(last, expected, "nothing arrived twice");
}

/** Waits until the session has `n` commit tasks (accepted commits), none failed. */
async function expectCommits(api: RealApi, sid: string, n: number): Promise<Json[]> {
  const tasks = await poll(
    `${n} accepted commits of ${sid}`,
    async () => {
      const t = await api.commitTasks(sid);
      return t.length >= n ? t : undefined;
    },
    30_000,
    () => api.commitTasks(sid),
  );
  assertEquals(tasks.length, n, JSON.stringify(tasks));
  for (const t of tasks) assertTrue(t.status !== "failed", JSON.stringify(t));
  return tasks;
}

/** The text part of a tool output as the model got it. */
function toolText(output: string | undefined): string {
  return (output ?? "").replace(/^Wall time: [\d.]+ seconds\n/, "").replace(
    /\n*<mcp-result-extras>[\s\S]*$/,
    "",
  );
}

/**
 * What the real server adds is the server's side — it takes our writes, commits, extracts, answers recall and
 * /mcp — which is our hooks talking to it, alike on every release and in both modes: the newest release runs
 * it (ARCHITECTURE decision 41); what each release's turns give the hooks is checked against the fake.
 */
const installs: KimiInstall[] = [];
if (REAL === "0") skip(NAME, "OPENVIKING_REAL=0");
else {
  for (const version of [KIMI_VERSIONS[0]]) {
    const install = await kimiOrSkip(version, `${NAME} with kimi ${version}`);
    if (install) installs.push(install);
  }
}

/** A rig whose plugin talks to the real server as `user` (dev mode takes the identity from the headers). */
async function realRig(
  install: KimiInstall,
  mode: Mode,
  server: RealOpenViking,
  user: string,
  env?: Record<string, string>,
) {
  const account = "kimi-e2e";
  const args = ["--account", account, "--user", user, ...(server.apiKey ? ["--api-key", server.apiKey] : [])];
  const rig = await Rig.create(install, { mode, serverUrl: server.url, installArgs: args, env });
  const api = new RealApi(server, account, user);
  const space = String(obj((await api.call("GET", "/api/v1/system/status")).json.result).user);
  return { rig, api, space };
}

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

const FACT = "Please remember: I prefer tabs over spaces in TypeScript projects";

Deno.test({ name: NAME, ignore: REAL === "0", ...E2E_TEST }, async (t) => {
  const server = await startRealOrSkip(NAME);
  if (!server) return;
  try {
    // First, on the fresh server: the endpoints the plugin uses, as the plugin calls them.
    await probeEndpoints(t, server);
    await t.step("a broken chat model: three failed commits are told with the server's words", async () => {
      server.stub.chatDown = true;
      try {
        await using home = await tempDir();
        const t0 = performance.now();
        const errors = await Promise.all(["0", "1", "2"].map(async (n) => {
          const task = await commitAndWait(
            server,
            `kc-alarm-${n}`,
            `The user keeps release notes in docs/release-${n}.md.`,
          );
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
          OPENVIKING_COMMIT_POLICY: "every-turn", // no idle watch outlives the test
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
        await hook("session-start", {
          hook_event_name: "SessionStart",
          session_id: "s2",
          source: "startup",
        });
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
        server.stub.chatDown = false;
      }
    });

    await t.step("two projects: B's memories in A's digests under each recall scope", async () => {
      await using home = await tempDir();
      const t0 = performance.now();
      for (const [uri, content] of Object.entries({ ...A, ...PREFERENCE, ...B })) {
        const body = { uri, content, mode: "create", wait: true };
        // As the user, no actor peer: a peer may not write another peer's memories.
        const noPeer = (h: Headers) => h.delete("X-OpenViking-Actor-Peer");
        const w = await call(server, "POST", "/api/v1/content/write", body, noPeer);
        assertEquals(w.status, 200, `${uri}: ${w.text}`);
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
              OPENVIKING_COMMIT_POLICY: "every-turn",
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
      "balanced leaves a short turn uncommitted, commits at SessionEnd",
      async () => {
        await using dir = await tempDir();
        const env = sandboxEnv(dir.path, server.url, {
          OPENVIKING_COMMIT_POLICY: "balanced",
          OPENVIKING_IDLE_COMMIT_SECONDS: "3", // the Stop's idle watch ends with the step, not 300 s later
          OPENVIKING_CAPTURE_WAIT_MS: "0",
          OPENVIKING_TIMEOUT_MS: "20000",
        });
        const stdin = (name: string) =>
          JSON.stringify({ hook_event_name: name, session_id: SESSION, cwd: dir.path });
        const j = new JournalBuilder().simpleTurn(
          "which port does staging use?",
          "staging listens on 6543",
        );
        await placeJournal(dir.path, SESSION, j.toString());
        await hookIn("stop", { env, stdin: stdin("Stop") });
        const meta = async () =>
          obj((await call(server, "GET", `/api/v1/sessions/kc-${SESSION}`)).json.result);
        const after = await meta();
        assertEquals(after.commit_count, 0, "a short turn is not committed yet");
        await hookIn("session-end", { env, stdin: stdin("SessionEnd") });
        assertEquals((await meta()).commit_count, 1);
      },
    );

    for (const install of installs) {
      const version = install.version;
      const mode: Mode = "config";
      const tag = `e2e_${version.replaceAll(".", "_")}_${crypto.randomUUID().slice(0, 8)}`;
      const teacher = await realRig(install, mode, server, `${tag}_recall`);
      const capture = await realRig(install, mode, server, `${tag}_capture`);
      await using _teacherRig = teacher.rig;
      await using _captureRig = capture.rig;
      const taught = await teacher.rig.print(FACT);

      await t.step(
        `kimi ${version} (${mode}) 2: plain, tool and subagent turns land in the real session, commits accepted`,
        async () => {
          const { rig, api } = capture;
          const prompts = [
            "first: RUN_TOOL please",
            "second: RUN_AGENT now",
            "third: a plain turn for the real server",
          ];
          const answers = [
            "Let me check with a tool.\n\nThe tool has finished.",
            "The subagent has finished.",
            `ACK: ${prompts[2]}`,
          ];
          let sessionId: string | undefined;
          const expected: Msg[] = [];
          for (const [i, prompt] of prompts.entries()) {
            const run = await rig.print(prompt, { sessionId });
            sessionId = run.sessionId!;
            expected.push([String(i), "user", prompt], [String(i), "assistant", answers[i]]);
            await expectRealSession(api, `kc-${sessionId}`, expected);
          }
          const tasks = await expectCommits(api, `kc-${sessionId}`, 3);
          for (const task of tasks) assertEquals(task.task_type, "session_commit");
          for (const [, , text] of expected) assertEquals(leaks(text), []);
        },
      );

      await t.step(
        `kimi ${version} (${mode}) 8: the default policy: a kimi -p turn (no SessionEnd) is committed by the idle watch`,
        async () => {
          const idle = await realRig(install, mode, server, `${tag}_idle`, {
            OPENVIKING_COMMIT_POLICY: KNOBS.commitPolicy.default,
            OPENVIKING_IDLE_COMMIT_SECONDS: "2",
          });
          await using _idleRig = idle.rig;
          const said = "Our staging database is called pluto-db and lives in Frankfurt.";
          const run = await idle.rig.print(said);
          const sid = `kc-${run.sessionId}`;
          await expectRealSession(idle.api, sid, [["0", "user", said], ["0", "assistant", `ACK: ${said}`]]);
          const [task] = await expectCommits(idle.api, sid, 1);
          // The Stop left the short turn uncommitted; the commit is the watch's, after Kimi had exited.
          const st = JSON.parse(
            (await idle.rig.cli(["status", "--json", "--session", String(run.sessionId)])).stdout,
          );
          const commits = arr(arr(obj(st).sessions)[0]?.commits);
          assertEquals(commits.map((c) => [c.outcome, c.taskId]), [["committed", task.task_id ?? task.id]]);
          const captures = await Deno.readTextFile(
            `${idle.rig.ovHome}/ledger/kimicode/${run.sessionId}.jsonl`,
          );
          const events = captures.trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
            e.kind === "capture"
          );
          assertEquals(events.map((e) => [e.event, e.commit]), [["stop", "none"], ["idle", "committed"]]);
        },
      );

      await t.step(
        `kimi ${version} (${mode}) 1+6: a new session recalls what an earlier one taught; our MCP search answers from /mcp`,
        async () => {
          const { rig, api, space } = teacher;
          await expectRealSession(api, `kc-${taught.sessionId}`, [["0", "user", FACT], [
            "0",
            "assistant",
            `ACK: ${FACT}`,
          ]]);
          await expectCommits(api, `kc-${taught.sessionId}`, 1);
          const memory = await poll(
            "the extracted memory",
            async () => {
              const r = await api.call("POST", "/api/v1/search/find", {
                query: "tabs spaces TypeScript",
                target_uri: "viking://~/memories",
              });
              return arr(obj(r.json.result).memories).find((m) =>
                String(m.abstract).includes("tabs over spaces")
              );
            },
            90_000,
            () => api.commitTasks(`kc-${taught.sessionId}`),
          );
          assertMatch(String(memory.uri), new RegExp(`^viking://user/${space}/memories/preferences/`));
          const done = await poll(
            "status naming the memory the commit made",
            async () => {
              const st = await rig.cli(["status", "--json", "--session", String(taught.sessionId)]);
              const session = arr(obj(JSON.parse(st.stdout)).sessions)[0];
              return arr(session?.commits).find((c) => obj(c.task).status === "completed");
            },
            60_000,
          );
          assertEquals(obj(done.task).memories, [memory.uri]);
          const question = "tabs or spaces for TypeScript indentation?";
          await poll(
            "the memory in the server's context search",
            async () => {
              const r = await api.call("POST", "/api/v1/search/search", {
                query: question,
                mode: "context",
                purpose: "coding",
                score_threshold: 0.35,
              });
              return arr(obj(r.json.result).entries).some((e) => e.uri === memory.uri) ? true : undefined;
            },
            60_000,
          );

          const before = rig.model.chatRequests().length;
          const r = await rig.print(question);
          const state = JSON.parse(
            await Deno.readTextFile(`${rig.ovHome}/hook-state/kimicode/${r.sessionId}.prompt.json`),
          ) as {
            recall?: { source: string; memories: { uri: string; text: string }[] };
            injectedUris: string[];
          };
          assertEquals(state.recall?.source, "context");
          const kept = state.recall?.memories.find((m) => m.uri === memory.uri);
          assertStringIncludes(kept?.text ?? "", "tabs over spaces");
          assertTrue(state.injectedUris.includes(String(memory.uri)), "the session remembers it was shown");
          const msgs = rig.model.chatRequests().slice(before)[0].body.messages;
          const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === question);
          const injected = messageText(msgs[at - 1]);
          assertMatch(injected, /^<hook_result hook_event="UserPromptSubmit">\n<openviking-context>\n/);
          assertMatch(injected, new RegExp(`\n- [^\n]*tabs over spaces[^\n]* \\(${memory.uri}\\)\n`));
          assertTrue(!injected.includes("&lt;memory"), "no server markup in the digest");

          const prefix = MCP_PREFIX[mode];
          const served = arr((await api.mcp("tools/list", {})).tools).map((x) => String(x.name)).sort();
          assertEquals(served.length, 24);
          const serverText = async () =>
            arr((await api.mcp("tools/call", { name: "search", arguments: MCP_ARGS })).content)
              .map((c) => String(c.text ?? "")).join("\n");
          const beforeCall = await serverText();
          const from = rig.model.chatRequests().length;
          await rig.print("CALL_MCP please search my memory", { sessionId: r.sessionId });
          const afterCall = await serverText();
          const reqs = rig.model.chatRequests().slice(from);
          assertEquals(
            reqs[0].toolNames.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length)).sort(),
            served.filter((n) => (MEMORY_TOOLS as readonly string[]).includes(n)),
          );
          const got = toolText(reqs.find((q) => q.hasToolResult)?.lastToolOutput);
          assertTrue(
            got === beforeCall || got === afterCall,
            `tool output ${got}\nserver said ${beforeCall}`,
          );
          assertStringIncludes(got, String(memory.uri));

          const all = reqs.at(-1)!.body.messages.filter(isHookResult).map(messageText);
          assertEquals(all.filter((x) => x.includes(`(${memory.uri})`)).length, 1);
          await expectRealSession(api, `kc-${r.sessionId}`, [
            ["0", "user", question],
            ["0", "assistant", `ACK: ${question}`],
            ["1", "user", "CALL_MCP please search my memory"],
            ["1", "assistant", "The memory search is done."],
          ]);
        },
      );
    }
  } finally {
    await server.stop();
  }
});
