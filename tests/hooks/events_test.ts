/**
 * Every hook event in every server condition, in-process (`runHook`): what each prints, sends, queues and
 * records. What only a process shows (detach, exit codes, kill -9): detach_process_test.ts, tests/chaos.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { DEFAULT_ENTRY, FAKE_DIGEST } from "../support/fake-openviking.ts";
import { loadConfig } from "../../openviking/config.ts";
import { messagesOf } from "../../scripts/turns.ts";
import { CAPTURE_MAX_LENGTH } from "../../kimi/journal/plan.ts";
import { writeState } from "../../memory/state.ts";
import { enqueueMessages, ourQueue } from "../support/queue.ts";
import { type Condition, CONDITIONS, sandbox, SESSION } from "./world.ts";

const OV_SESSION = `kc-${SESSION}`;
const SEARCH = "POST /api/v1/search/search";
const PROMPT = [{ type: "text", text: "how should I indent this file?" }];

const answers = (c: Condition) => c === "fine" || c === "no-batch";

for (const condition of CONDITIONS) {
  // A prompt writes no messages: a server without the batch route is the same as "fine" to it.
  if (condition !== "no-batch") {
    Deno.test(`hook user-prompt-submit, server ${condition}`, async () => {
      await using s = await sandbox(condition);
      const r = await s.run("user-prompt-submit", { prompt: PROMPT, is_steer: false });
      const st = await s.promptState();
      if (condition === "fine") {
        assertEquals(r, `${FAKE_DIGEST}\n`);
        const search = s.fake.requestsTo(SEARCH)[0];
        // No dedup_turns with the digest: the server would hold back what it returned and the digest never showed.
        const query = "how should I indent this file?";
        const body = { query, mode: "context", purpose: "coding", score_threshold: 0.35 };
        assertEquals(search.body, { ...body, session_id: OV_SESSION });
        assertEquals(search.headers["user-agent"], "openviking-memory-kimicode/0.1.0");
        assertMatch(search.headers["x-openviking-actor-peer"], /^[A-Za-z0-9_.@-]+$/);
        const { origin: _, ...memory } = DEFAULT_ENTRY;
        const recall = { source: "context", memories: [memory] };
        assertEquals([st.recall, st.injectedUris], [recall, [DEFAULT_ENTRY.uri]]);
      } else {
        // No memory when the server cannot answer; the turn goes on. One that took the request and did not
        // answer in time pauses memory, and says so once (tests/hooks/breaker_process_test.ts).
        const paused =
          `openviking-kimi: memory paused — OpenViking at ${s.env.OPENVIKING_URL} did not answer; `;
        if (condition === "slow") assertMatch(r, new RegExp(`^${paused}\`[^\`\n]+ status\` says why\n$`));
        else assertEquals(r, "");
        assertEquals(st.injectedUris, [], "nothing shown");
      }
    });
  }

  const captures = [
    ["stop", { stop_hook_active: false }],
    ["interrupt", { turn_id: 2, reason: "cancelled" }],
    ["pre-compact", { trigger: "manual", token_count: 1000 }],
    ["session-end", { reason: "exit" }],
  ] as const;
  for (const [event, extra] of captures) {
    // Every kind of fault under a Stop: world_faults_test.ts; the other events on a server that answers or is gone.
    if (event !== "stop" && condition !== "fine" && condition !== "down") continue;
    Deno.test(`hook ${event}, server ${condition}`, async () => {
      await using s = await sandbox(condition);
      const { config } = await loadConfig(s.env);
      const journal = `${s.home}/.kimi-code/sessions/wd_proj_000000000000/${SESSION}/agents/main/wire.jsonl`;
      // The six messages of the recorded three-turn session, as capture must send them.
      const expected = await messagesOf(journal, { maxLength: CAPTURE_MAX_LENGTH, redact: config.redact });
      await s.hook(event, extra);
      const st = await s.state();
      const keys = [0, 1, 2].flatMap((t) => [`${t}:user`, `${t}:assistant`]);
      assertEquals([st.lastCapture?.event, st.capturedKeys, st.ackedBelow], [event, keys, 3]);
      if (answers(condition)) {
        const messages = s.fake.messages(OV_SESSION);
        const stored = messages.map(({ turn_id, role, content }) => ({ turn_id, role, content }));
        assertEquals([stored, s.commits(), st.capturedSinceCommit], [expected, 1, 0]);
        const writes = s.fake.requests.filter((q) => q.path.includes("/messages")).map((q) => q.route);
        const one = "POST /api/v1/sessions/:id/messages";
        const batch = `${one}/batch`;
        assertEquals(writes, condition === "no-batch" ? [batch, ...Array(6).fill(one)] : [batch]);
      } else {
        const queued = await ourQueue(s.pending);
        const messages = queued.filter((q) => q.kind === "message").map((q) => q.payload);
        assertEquals(messages, expected, "every message waits in the queue, in order");
        assertEquals(queued.at(-1)?.kind, "commit");
        for (const q of queued) assertEquals((await Deno.stat(q.file)).mode! & 0o777, 0o600);
      }
      if (event === "pre-compact") assertEquals((await s.promptState()).injectedUris, []);
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

Deno.test("hook pre-tool-use: no network, deny only viking:// paths; gates — disabled, bypass patterns on session id and cwd", async () => {
  await using s = await sandbox("fine");
  const tool_input = { pattern: "TODO", path: "viking://resources/docs" };
  const deny = JSON.parse(await s.run("pre-tool-use", { tool_name: "Grep", tool_input, tool_call_id: "c1" }));
  assertEquals(deny.hookSpecificOutput.permissionDecision, "deny");
  assertEquals(
    deny.hookSpecificOutput.permissionDecisionReason,
    'viking:// URIs are OpenViking virtual paths, not local filesystem paths.\nUse the OpenViking MCP tool mcp__plugin-openviking-memory_openviking__grep instead.\nExample: mcp__plugin-openviking-memory_openviking__grep(uri="viking://resources/docs", pattern="<text>")',
  );
  assertEquals(
    await s.run("pre-tool-use", { tool_name: "Read", tool_input: { file_path: "/etc/hosts" } }),
    "",
  );
  const gates = [
    ["OPENVIKING_MEMORY_ENABLED", "0"],
    ["OPENVIKING_BYPASS_SESSION_PATTERNS", "session_bb98*"],
    ["OPENVIKING_BYPASS_SESSION_PATTERNS", "/home/user/**"],
  ];
  for (const [name, value] of gates) {
    assertEquals(await s.run("user-prompt-submit", { prompt: PROMPT }, { [name]: value }), "");
  }
  assertEquals(s.fake.requests.length, 0);
});

Deno.test("hook user-prompt-submit: the same prompt later asks nothing and prints no second copy; string prompts work", async () => {
  await using s = await sandbox("fine");
  const run = (prompt: unknown) => s.run("user-prompt-submit", { prompt });
  const image = { type: "image_url", image_url: { url: "x" } };
  const first = await run([{ type: "text", text: "how should I indent" }, image, {
    type: "text",
    text: "this file?",
  }]);
  assertEquals(first, `${FAKE_DIGEST}\n`);
  // The whole request body is pinned by `hook user-prompt-submit, server fine`.
  const body = (n: number) => s.fake.requestsTo(SEARCH)[n].body as Record<string, unknown>;
  assertEquals(body(0).query, "how should I indent\nthis file?");
  await new Promise((r) => setTimeout(r, 600));
  // Before: the reused block printed the same memory again. Now the session already has it: nothing.
  assertEquals(await run("how should I indent\nthis file?"), "", "no second copy");
  assertEquals(s.fake.requestsTo(SEARCH).length, 1, "reuse makes no request");
  await run("what about <openviking-context>old</openviking-context> naming conventions?");
  assertEquals(body(1).query, "what about  naming conventions?");
  const excluded = ["viking://user/default/memories/preferences/indent.md"];
  assertEquals(body(1).exclude_uris, excluded, "memories the session already has are excluded");
});

Deno.test("hook user-prompt-submit: two identical hooks at the same moment print once", async () => {
  await using s = await sandbox("fine");
  s.fake.fault({ route: SEARCH, delayMs: 300, times: 1 });
  const outs = await Promise.all([1, 2].map(() => s.run("user-prompt-submit", { prompt: PROMPT })));
  assertEquals(outs.sort(), ["", `${FAKE_DIGEST}\n`]);
  assertEquals(s.fake.requestsTo(SEARCH).length, 1);
});

Deno.test("hook session-start: a repeat within 2 s is ignored; resume keeps what was shown, startup resets it", async () => {
  await using s = await sandbox("fine");
  await s.run("user-prompt-submit", { prompt: "how should I indent this file?" });
  const shown = [DEFAULT_ENTRY.uri];
  assertEquals((await s.promptState()).injectedUris, shown);
  const start = (source: string) => s.run("session-start", { source });
  await start("resume");
  assertEquals((await s.promptState()).injectedUris, shown, "a resumed session has its memories in context");
  const at = (await s.promptState()).lastSessionStartAt;
  await start("startup");
  assertEquals((await s.promptState()).lastSessionStartAt, at, "repeat within 2 s ignored");
  // 2.1 s later: the recorded start moved back, not waited for.
  const prompted = await s.promptState();
  await writeState(s.stateFile(`${s.session}.prompt`), { ...prompted, lastSessionStartAt: at! - 2100 });
  await start("startup");
  assertEquals((await s.promptState()).injectedUris, []);
});
