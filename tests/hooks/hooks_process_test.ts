/** Every hook event in every server condition, in-process (`runHook`), and the process properties of the entry point. */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { DEFAULT_ENTRY, FAKE_DIGEST_FIRST } from "../support/fake-openviking.ts";
import { loadConfig } from "../../openviking/config.ts";
import { readLedger } from "../../memory/ledger.ts";
import { messagesOf } from "../../cli/turns.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, runCli, startCli } from "../support/run.ts";
import { enqueueMessages, ourQueue } from "../support/queue.ts";
import { SESSION, stdinOf, waitFor, type World, world } from "./world.ts";

const OV_SESSION = `kc-${SESSION}`;
const FIXTURE = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);

type Condition = "fine" | "down" | "slow" | "500" | "no-batch";
const CONDITIONS: Condition[] = ["fine", "down", "slow", "500", "no-batch"];

/** A world on the recorded three-turn session whose server is in `condition`. */
async function sandbox(condition: Condition): Promise<World> {
  const w = await world({
    fake: { noBatch: condition === "no-batch" ? 404 : undefined },
    env: { OPENVIKING_PROMPT_BUDGET_MS: "2500" },
  });
  if (condition === "down") await w.fake.close();
  else if (condition === "slow") w.fake.fault({ route: "*", delayMs: 4000 });
  else if (condition === "500") w.fake.fault({ route: "*", status: 500 });
  await w.journal(await Deno.readTextFile(FIXTURE));
  return w;
}

const answers = (c: Condition) => c === "fine" || c === "no-batch";

/** The six messages of the recorded three-turn session, as capture must send them. */
async function expectedMessages(s: World): Promise<unknown[]> {
  const { config } = await loadConfig(s.env);
  const journal = `${s.home}/.kimi-code/sessions/wd_proj_000000000000/${SESSION}/agents/main/wire.jsonl`;
  return await messagesOf(journal, { maxLength: config.captureMaxLength, redact: config.redact });
}

for (const condition of CONDITIONS) {
  // A prompt writes no messages: a server without the batch route is the same as "fine" to it.
  if (condition !== "no-batch") {
    Deno.test(`hook user-prompt-submit, server ${condition}`, async () => {
      await using s = await sandbox(condition);
      const prompt = [{ type: "text", text: "how should I indent this file?" }];
      const r = await s.run("user-prompt-submit", { prompt, is_steer: false });
      const st = await s.promptState();
      if (condition === "fine") {
        assertEquals(r, `${FAKE_DIGEST_FIRST}\n`);
        const search = s.fake.requestsTo("POST /api/v1/search/search")[0];
        assertEquals(search.body, {
          query: "how should I indent this file?",
          mode: "context",
          purpose: "coding",
          score_threshold: 0.35,
          session_id: OV_SESSION,
          // No dedup_turns with the digest: the server would hold back what it returned and the digest never showed.
        });
        assertEquals(search.headers["user-agent"], "openviking-memory-kimicode/0.1.0");
        assertMatch(search.headers["x-openviking-actor-peer"], /^[A-Za-z0-9_.@-]+$/);
        const { origin: _, ...memory } = DEFAULT_ENTRY;
        const recall = { source: "context", memories: [memory] };
        assertEquals([st.profileInjected, st.recall, st.injectedUris], [true, recall, [DEFAULT_ENTRY.uri]]);
      } else {
        // No memory when the server cannot answer; the turn goes on. One that took the request and did not
        // answer in time pauses memory, and says so once (tests/hooks/breaker_process_test.ts).
        const paused =
          `openviking-kimi: memory paused — OpenViking at ${s.env.OPENVIKING_URL} did not answer; `;
        if (condition === "slow") assertMatch(r, new RegExp(`^${paused}\`[^\`\n]+ status\` says why\n$`));
        else assertEquals(r, "");
        assertEquals(st.profileInjected, false, "the profile is retried on a later prompt");
      }
    });
  }

  for (
    const [event, extra] of [
      ["stop", { stop_hook_active: false }],
      ["interrupt", { turn_id: 2, reason: "cancelled" }],
      ["pre-compact", { trigger: "manual", token_count: 1000 }],
      ["session-end", { reason: "exit" }],
    ] as const
  ) {
    // Every kind of fault under a Stop: world_faults_test.ts; the other events on a server that answers or is gone.
    if (event !== "stop" && condition !== "fine" && condition !== "down") continue;
    Deno.test(`hook ${event}, server ${condition}`, async () => {
      await using s = await sandbox(condition);
      const expected = await expectedMessages(s);
      await s.hook(event, extra);
      const st = await s.state();
      const keys = [0, 1, 2].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
      assertEquals([st.lastCaptureEvent, st.capturedKeys, st.ackedBelow], [event, keys, 3]);
      if (answers(condition)) {
        const stored = s.fake.messages(OV_SESSION).map(({ turn_id, role, content }) => ({
          turn_id,
          role,
          content,
        }));
        assertEquals([stored, s.commits(), st.capturedSinceCommit], [expected, 1, 0]);
        const writes = s.fake.requests.filter((q) => q.path.includes("/messages")).map((q) => q.route);
        const batch = "POST /api/v1/sessions/:id/messages/batch";
        const one = "POST /api/v1/sessions/:id/messages";
        assertEquals(writes, condition === "no-batch" ? [batch, ...Array(6).fill(one)] : [batch]);
      } else {
        const queued = await ourQueue(s.pending);
        const messages = queued.filter((q) => q.kind === "message").map((q) => q.payload);
        assertEquals(messages, expected, "every message waits in the queue, in order");
        assertEquals(queued.at(-1)?.kind, "commit");
        for (const q of queued) assertEquals((await Deno.stat(q.file)).mode! & 0o777, 0o600);
      }
      if (event === "pre-compact") assertEquals((await s.promptState()).profileInjected, false);
    });
  }

  Deno.test(`hook session-start replays the queue, server ${condition}`, async () => {
    await using s = await sandbox(condition);
    await enqueueMessages(s.pending, "kc-earlier", [{ role: "user", content: "queued while offline" }]);
    await s.hook("session-start", { source: "startup", model: "fake" });
    assertTrue((await s.promptState()).lastSessionStartAt !== undefined);
    if (answers(condition)) {
      assertEquals(s.fake.messages("kc-earlier").length, 1);
      assertEquals((await ourQueue(s.pending)).length, 0);
    } else assertEquals((await ourQueue(s.pending)).length, 1, "the replay's budget ends, the entry waits");
  });
}

Deno.test("hook pre-tool-use: no network, deny only viking:// paths", async () => {
  await using s = await sandbox("fine");
  const deny = await s.run("pre-tool-use", {
    tool_name: "Grep",
    tool_input: { pattern: "TODO", path: "viking://resources/docs" },
    tool_call_id: "c1",
  });
  const out = JSON.parse(deny);
  assertEquals(out.hookSpecificOutput.permissionDecision, "deny");
  assertEquals(
    out.hookSpecificOutput.permissionDecisionReason,
    'viking:// URIs are OpenViking virtual paths, not local filesystem paths.\nUse the OpenViking MCP tool mcp__openviking__grep instead.\nExample: mcp__openviking__grep(uri="viking://resources/docs", pattern="<text>")',
  );
  const allow = await s.run("pre-tool-use", { tool_name: "Read", tool_input: { file_path: "/etc/hosts" } });
  assertEquals(allow, "");
  assertEquals(s.fake.requests.length, 0);
});

Deno.test("hook: gates — disabled, bypass patterns on session id and cwd", async () => {
  await using s = await sandbox("fine");
  const prompt = [{ type: "text", text: "how should I indent this file?" }];
  for (
    const gate of [
      "OPENVIKING_MEMORY_ENABLED=0",
      "BYPASS_SESSION_PATTERNS=session_bb98*",
      "BYPASS_SESSION_PATTERNS=/home/user/**",
    ]
  ) {
    const [name, value] = gate.split("=");
    assertEquals(
      await s.run("user-prompt-submit", { prompt }, {
        [name.replace(/^BYPASS/, "OPENVIKING_BYPASS")]: value,
      }),
      "",
    );
  }
  assertEquals(s.fake.requests.length, 0);
});

Deno.test("hook user-prompt-submit: the profile once per session; the same prompt later asks nothing and prints no second copy; string prompts work", async () => {
  await using s = await sandbox("fine");
  const run = (extra: Record<string, unknown>) => s.run("user-prompt-submit", extra);
  const first = await run({
    prompt: [{ type: "text", text: "how should I indent" }, { type: "image_url", image_url: { url: "x" } }, {
      type: "text",
      text: "this file?",
    }],
  });
  assertEquals(first, `${FAKE_DIGEST_FIRST}\n`);
  // The whole request body is pinned by `hook user-prompt-submit, server fine`.
  const body = (n: number) =>
    s.fake.requestsTo("POST /api/v1/search/search")[n].body as Record<string, unknown>;
  assertEquals(body(0).query, "how should I indent\nthis file?");
  await new Promise((r) => setTimeout(r, 600));
  const again = await run({ prompt: "how should I indent\nthis file?" });
  // Before: the reused block printed the same memory again. Now the session already has it: nothing.
  assertEquals(again, "", "no profile the second time, and no second copy of the memory");
  assertEquals(s.fake.requestsTo("POST /api/v1/search/search").length, 1, "reuse makes no request");
  await run({
    prompt: "what about <openviking-context>old</openviking-context> naming conventions?",
  });
  const search = body(1);
  assertEquals(search.query, "what about  naming conventions?");
  assertEquals(
    search.exclude_uris,
    ["viking://user/default/memories/preferences/indent.md"],
    "memories the session already has are excluded",
  );
});

Deno.test("hook user-prompt-submit: two identical hooks at the same moment print once, profile once", async () => {
  await using s = await sandbox("fine");
  s.fake.fault({ route: "POST /api/v1/search/search", delayMs: 300, times: 1 });
  const prompt = [{ type: "text", text: "how should I indent this file?" }];
  const outs = await Promise.all([1, 2].map(() => s.run("user-prompt-submit", { prompt })));
  assertEquals(outs.sort(), ["", `${FAKE_DIGEST_FIRST}\n`]);
  assertEquals(s.fake.requestsTo("GET /api/v1/system/status").length, 1, "profile fetched once");
  assertEquals(s.fake.requestsTo("POST /api/v1/search/search").length, 1);
});

Deno.test("hook session-start: a repeat within 2 s is ignored; resume keeps the profile flag, startup resets it", async () => {
  await using s = await sandbox("fine");
  await s.run("user-prompt-submit", { prompt: "how should I indent this file?" });
  assertEquals((await s.promptState()).profileInjected, true);
  const start = (source: string) => s.run("session-start", { source });
  await start("resume");
  assertEquals(
    (await s.promptState()).profileInjected,
    true,
    "a resumed session already has its profile in context",
  );
  const at = (await s.promptState()).lastSessionStartAt;
  await start("startup");
  assertEquals((await s.promptState()).lastSessionStartAt, at, "repeat within 2 s ignored");
  await new Promise((r) => setTimeout(r, 2100));
  await start("startup");
  assertEquals((await s.promptState()).profileInjected, false);
});

/** State letter of a process per `ps` ("Z" once it exited but was not yet reaped; "" when gone). */
function procState(pid: number): string {
  const out = new Deno.Command("ps", {
    args: ["-o", "stat=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  })
    .outputSync();
  return new TextDecoder().decode(out.stdout).trim().slice(0, 1);
}

Deno.test({
  name:
    "hook stop: the parent has exited before the worker's first request reaches the server; under balanced the worker's watch commits the idle session, then ends",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using s = await world({
      env: { OPENVIKING_COMMIT_POLICY: "balanced", OPENVIKING_IDLE_COMMIT_SECONDS: "1" },
    });
    await s.journal(
      new JournalBuilder().simpleTurn("a fact taught in kimi -p", "kept it in mind").toString(),
    );
    let parentPid = 0;
    const seen: string[] = [];
    s.fake.onRequest = () => seen.push(procState(parentPid));
    const child = new Deno.Command(Deno.execPath(), {
      args: [...(await cliArgs()), "hook", "stop"],
      env: { ...denoEnv(), ...s.env },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    parentPid = child.pid;
    assertTrue(procState(Deno.pid) !== "", "the probe can see a live process");
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdinOf("stop")));
    await w.close();
    const out = await child.output();
    assertEquals([out.code, new TextDecoder().decode(out.stdout)], [0, ""]);
    const ledger = async () =>
      (await readLedger(`${s.home}/.openviking/ledger/kimicode`, SESSION)).map((e) =>
        e.kind === "capture" && `${e.event}:${e.commit}`
      );
    await waitFor("the watch's commit", async () => (await ledger()).includes("idle:committed"));
    assertEquals(await ledger(), ["stop:none", "idle:committed"], "the watch committed, not the Stop");
    const watching = () =>
      [...Deno.readDirSync(`${s.home}/.openviking/hook-state/kimicode`)].some((e) =>
        e.name.startsWith("idle-watch-")
      );
    await waitFor("the watch to end", () => !watching());
    assertEquals([s.stored().length, s.commits()], [2, 1]);
    assertTrue(seen.length >= 2);
    for (const state of seen) {
      assertTrue(state === "Z" || state === "", `parent state at a request: ${state}`);
    }
  },
});

Deno.test("hook interrupt whose 2 s budget runs out before the commit: the commit is queued and goes out at once, detached, and the batch whose reply never came is not sent twice", async () => {
  await using s = await sandbox("fine");
  // The server takes the batch only after the hook gave up on its reply: the hook queued it as unsure.
  s.fake.fault({ route: "POST /api/v1/sessions/:id/messages/batch", hold: true, times: 1 });
  const r = await runCli(["hook", "interrupt"], {
    env: { ...s.env, OPENVIKING_TIMEOUT_MS: "5000" },
    clearEnv: true,
    stdin: stdinOf("interrupt", SESSION, { turn_id: 2, reason: "cancelled" }),
  });
  assertEquals(r.stdout, "");
  // No other hook comes after a SIGINT in print mode: the interrupt run itself delivers it.
  await waitFor("the commit", () => (s.fake.sessions.get(OV_SESSION)?.commits ?? 0) >= 1);
  await waitFor("the queue to empty", async () => (await ourQueue(s.pending)).length === 0);
  const stored = s.fake.messages(OV_SESSION).map((m) => `${m.turn_id}:${m.role}`);
  assertEquals(new Set(stored).size, 6, "every message of the interrupted session is stored");
  assertEquals(stored.length, 6, "the replay asked the session before sending the unanswered batch again");
  assertEquals(s.fake.sessions.get(OV_SESSION)?.commits, 1, "the interrupted session is committed");
});

Deno.test("hook stop: a worker killed during its second batch loses nothing and keeps the first acknowledged — the next Stop sends only the rest", async () => {
  await using s = await sandbox("fine");
  const j = new JournalBuilder();
  for (let i = 0; i < 60; i++) j.simpleTurn(`question ${i}`, `answer ${i}`); // 120 messages: batches of 100 + 20
  await s.journal(j.toString());
  const route = "POST /api/v1/sessions/:id/messages/batch";
  s.fake.fault({ route, delayMs: 1500, skip: 1, times: 1 }); // the second batch is slow to land
  let batches = 0;
  s.fake.onRequest = (r) => batches += r.route === route ? 1 : 0;
  const worker = await startCli(
    ["hook", "stop"],
    { ...s.env, OPENVIKING_KIMI_HOOK_WORKER: "1" },
    stdinOf("stop"),
  );
  await waitFor("the worker's second batch", () => batches >= 2);
  worker.kill("SIGKILL");
  await worker.status;
  assertEquals((await s.state()).ackedBelow, 50, "the first batch's 50 turns stay acknowledged");
  assertEquals(await s.run("stop"), "");
  assertEquals((await s.state()).ackedBelow, 60);
  await new Promise((r) => setTimeout(r, 1600)); // let the killed worker's slow batch land too
  const stored = s.fake.messages(OV_SESSION).map((m) => `${m.turn_id}:${m.role}`);
  assertEquals(stored.filter((k) => Number(k.split(":")[0]) < 50).length, 100, "turns 0–49 stored once each");
  assertEquals(new Set(stored).size, 120, "every message of the session is stored");
  assertTrue(
    stored.length - 120 <= s.fake.lostReplyMessages,
    "duplicates only from the write whose reply the killed worker never read",
  );
});
