/**
 * Process-level tests: the real entry point (`deno run <cli task flags> main.ts hook <event>`) with real
 * stdin, against the fake OpenViking in every server condition. They assert stdout bytes, exit code, the
 * requests made and the state left behind.
 */

import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import {
  DEFAULT_ENTRY,
  DEFAULT_RENDERED,
  FAKE_DIGEST_FIRST,
  FAKE_PROFILE_ROW,
  FakeOpenViking,
} from "../support/fake-openviking.ts";
import { hookIn, placeJournal } from "../support/hook-context.ts";
import { loadConfig } from "../../openviking/config.ts";
import { messagesOf } from "../../cli/turns.ts";
import { JournalBuilder } from "../support/journal.ts";
import { cliArgs, denoEnv, runCli, startCli } from "../support/run.ts";
import { tempDir } from "../support/temp.ts";
import { enqueueMessages, ourQueue, queuedMessages } from "../support/queue.ts";
import { readState } from "../../memory/state.ts";

const SESSION = "session_bb98d39e-e56d-47b5-bd98-4e903585486d";
const OV_SESSION = `kc-${SESSION}`;
const FIXTURE = new URL("../fixtures/journals/2.1.0/resumed/wire.jsonl", import.meta.url);
const CWD = "/home/user/proj";

type Condition = "fine" | "down" | "slow" | "500" | "legacy" | "no-batch";
const CONDITIONS: Condition[] = ["fine", "down", "slow", "500", "legacy", "no-batch"];

interface Sandbox {
  home: string;
  env: Record<string, string>;
  fake?: FakeOpenViking;
  journal: string;
  [Symbol.asyncDispose](): Promise<void>;
}

async function sandbox(condition: Condition): Promise<Sandbox> {
  const dir = await tempDir();
  let fake: FakeOpenViking | undefined = await FakeOpenViking.start({
    legacySearch: condition === "legacy",
    noRecall: false,
    noBatch: condition === "no-batch" ? 404 : undefined,
  });
  const url = fake.url;
  if (condition === "down") {
    await fake.close();
    fake = undefined;
  } else if (condition === "slow") fake.fault({ route: "*", delayMs: 4000 });
  else if (condition === "500") fake.fault({ route: "*", status: 500 });
  const env = {
    HOME: dir.path,
    KIMI_CODE_HOME: `${dir.path}/.kimi-code`,
    OPENVIKING_URL: url,
    OPENVIKING_TIMEOUT_MS: "1000",
    OPENVIKING_PROMPT_BUDGET_MS: "2500",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    PATH: Deno.env.get("PATH") ?? "/usr/bin",
  };
  const journal = await placeJournal(dir.path, SESSION, await Deno.readTextFile(FIXTURE));
  return {
    home: dir.path,
    env,
    fake,
    journal,
    async [Symbol.asyncDispose]() {
      await fake?.close();
      await dir[Symbol.asyncDispose]();
    },
  };
}

const payload = (event: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    hook_event_name: event,
    session_id: SESSION,
    cwd: CWD,
    client_type: "kimi_code_cli",
    ...extra,
  });

async function waitFor(
  what: string,
  cond: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const captureState = (s: Sandbox) => readState(`${s.home}/.openviking/hook-state/kimicode/${SESSION}.json`);
const promptState = (s: Sandbox) =>
  readState(`${s.home}/.openviking/hook-state/kimicode/${SESSION}.prompt.json`);
const pendingDir = (s: Sandbox) => `${s.home}/.openviking/pending`;

/** The six messages of the recorded three-turn session, as capture must send them. */
async function expectedMessages(s: Sandbox): Promise<unknown[]> {
  const { config } = await loadConfig(s.env);
  return await messagesOf(s.journal, { maxLength: config.captureMaxLength, redact: config.redact });
}

for (const condition of CONDITIONS) {
  Deno.test(`hook user-prompt-submit, server ${condition}`, async () => {
    await using s = await sandbox(condition);
    const prompt = [{ type: "text", text: "how should I indent this file?" }];
    const r = await hookIn("user-prompt-submit", {
      env: s.env,
      stdin: payload("UserPromptSubmit", { prompt, is_steer: false }),
    });
    const st = await promptState(s);
    if (condition === "fine" || condition === "no-batch") {
      assertEquals(r.stdout, `${FAKE_DIGEST_FIRST}\n`);
      const search = s.fake!.requestsTo("POST /api/v1/search/search")[0];
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
      assertEquals([st.profileInjected, st.recall], [true, {
        source: "context",
        memories: [memory],
        assembled: DEFAULT_RENDERED,
      }]);
      assertEquals(st.injectedUris, [DEFAULT_ENTRY.uri]);
    } else if (condition === "legacy") {
      // The recall endpoint's rendered `<memory>` elements are read back into memories, one line each.
      assertEquals(
        r.stdout,
        `<openviking-context>\n${FAKE_PROFILE_ROW}\n` +
          "- Legacy recall memory. (viking://user/default/memories/events/e1.md)\n</openviking-context>\n",
      );
      assertEquals(s.fake!.requests.filter((q) => q.path.startsWith("/api/v1/search")).map((q) => q.route), [
        "POST /api/v1/search/search",
        "POST /api/v1/search/recall",
      ]);
      const memo = JSON.parse(await Deno.readTextFile(`${s.home}/.openviking/state/context-face.json`));
      assertTrue(memo.legacyUntil > Date.now() + 5 * 3600_000, "context face skipped for 6 h");
    } else {
      // No memory when the server cannot answer; the turn goes on. One that took the request and did not
      // answer in time pauses memory, and says so once (tests/hooks/breaker_process_test.ts).
      const paused =
        `openviking-kimi: memory paused — OpenViking at ${s.env.OPENVIKING_URL} did not answer; `;
      if (condition === "slow") {
        assertMatch(r.stdout, new RegExp(`^${paused}\`[^\`\n]+ status\` says why\n$`));
      } else assertEquals(r.stdout, "");
      assertEquals(st.profileInjected, false, "the profile is retried on a later prompt");
    }
  });

  Deno.test(`hook stop, server ${condition}`, async () => {
    await using s = await sandbox(condition);
    const expected = await expectedMessages(s);
    const r = await hookIn("stop", {
      env: s.env,
      stdin: payload("Stop", { stop_hook_active: false }),
    });
    assertEquals(r.stdout, "");
    const st = await captureState(s);
    assertEquals(st.capturedKeys, [
      "0:user",
      "0:assistant",
      "1:user",
      "1:assistant",
      "2:user",
      "2:assistant",
    ]);
    assertEquals(st.ackedBelow, 3);
    if (condition === "fine" || condition === "legacy" || condition === "no-batch") {
      const stored = s.fake!.messages(OV_SESSION).map((m) => ({
        turn_id: m.turn_id,
        role: m.role,
        content: m.content,
      }));
      assertEquals(stored, expected);
      assertEquals(s.fake!.sessions.get(OV_SESSION)?.commits, 1);
      const writes = s.fake!.requests.filter((q) => q.path.includes("/messages")).map((q) => q.route);
      assertEquals(
        writes,
        condition === "no-batch"
          ? [
            "POST /api/v1/sessions/:id/messages/batch",
            ...Array(6).fill("POST /api/v1/sessions/:id/messages"),
          ]
          : ["POST /api/v1/sessions/:id/messages/batch"],
      );
      assertEquals(st.capturedSinceCommit, 0);
    } else {
      const queued = await ourQueue(pendingDir(s));
      assertEquals(
        queued.filter((q) => q.kind === "message").map((q) => q.payload),
        expected,
        "every message waits in the queue, in order",
      );
      assertEquals(queued.at(-1)?.kind, "commit");
      for (const q of queued) assertEquals((await Deno.stat(q.file)).mode! & 0o777, 0o600);
    }
  });

  Deno.test(`hook interrupt (synchronous, 2 s budget), server ${condition}`, async () => {
    await using s = await sandbox(condition);
    const r = await hookIn("interrupt", {
      env: s.env,
      stdin: payload("Interrupt", { turn_id: 2, reason: "cancelled" }),
    });
    assertEquals(r.stdout, "");
    const st = await captureState(s);
    assertEquals(st.lastCaptureEvent, "interrupt", "captured before the process exited");
    assertEquals(st.capturedKeys.length, 6);
    if (condition === "fine" || condition === "legacy" || condition === "no-batch") {
      assertEquals(s.fake!.messages(OV_SESSION).length, 6);
      assertEquals(s.fake!.sessions.get(OV_SESSION)?.commits, 1);
    } else {
      assertEquals((await queuedMessages(pendingDir(s))).length, 6);
    }
  });

  for (const event of ["pre-compact", "session-end"] as const) {
    Deno.test(`hook ${event}, server ${condition}`, async () => {
      await using s = await sandbox(condition);
      const extra = event === "pre-compact" ? { trigger: "manual", token_count: 1000 } : { reason: "exit" };
      const r = await hookIn(event, {
        env: s.env,
        stdin: payload(event === "pre-compact" ? "PreCompact" : "SessionEnd", extra),
      });
      assertEquals(r.stdout, "");
      assertEquals((await captureState(s)).lastCaptureEvent, event);
      assertEquals((await captureState(s)).capturedKeys.length, 6);
      if (condition === "fine") {
        assertEquals(s.fake!.messages(OV_SESSION).length, 6);
        assertEquals(s.fake!.sessions.get(OV_SESSION)?.commits, 1);
      }
      if (event === "pre-compact") assertEquals((await promptState(s)).profileInjected, false);
    });
  }

  Deno.test(`hook session-start replays the queue, server ${condition}`, async () => {
    await using s = await sandbox(condition);
    await enqueueMessages(pendingDir(s), "kc-earlier", [{ role: "user", content: "queued while offline" }]);
    const r = await hookIn("session-start", {
      env: s.env,
      stdin: payload("SessionStart", { source: "startup", model: "fake" }),
    });
    assertEquals(r.stdout, "");
    assertTrue((await promptState(s)).lastSessionStartAt !== undefined);
    if (condition === "fine" || condition === "legacy" || condition === "no-batch") {
      assertEquals(s.fake!.messages("kc-earlier").length, 1);
      assertEquals((await ourQueue(pendingDir(s))).length, 0);
    } else {assertEquals(
        (await ourQueue(pendingDir(s))).length,
        1,
        "the replay's budget ends, the entry waits",
      );}
  });
}

Deno.test("hook pre-tool-use: no network, deny only viking:// paths", async () => {
  await using s = await sandbox("fine");
  const deny = await hookIn("pre-tool-use", {
    env: s.env,
    stdin: payload("PreToolUse", {
      tool_name: "Grep",
      tool_input: { pattern: "TODO", path: "viking://resources/docs" },
      tool_call_id: "c1",
    }),
  });
  const out = JSON.parse(deny.stdout);
  assertEquals(out.hookSpecificOutput.permissionDecision, "deny");
  assertEquals(
    out.hookSpecificOutput.permissionDecisionReason,
    'viking:// URIs are OpenViking virtual paths, not local filesystem paths.\nUse the OpenViking MCP tool mcp__openviking__grep instead.\nExample: mcp__openviking__grep(uri="viking://resources/docs", pattern="<text>")',
  );
  const allow = await hookIn("pre-tool-use", {
    env: s.env,
    stdin: payload("PreToolUse", { tool_name: "Read", tool_input: { file_path: "/etc/hosts" } }),
  });
  assertEquals(allow.stdout, "");
  assertEquals(s.fake?.requests.length ?? 0, 0);
});

Deno.test("hook: empty, malformed, array, binary and huge stdin → exit 0, no stdout", async () => {
  await using s = await sandbox("fine");
  const huge = payload("UserPromptSubmit", { prompt: [{ type: "text", text: "x".repeat(3_000_000) }] });
  const inputs: (string | Uint8Array)[] = [
    "",
    "{not json",
    "[1,2,3]",
    "null",
    new Uint8Array([0, 159, 146, 150, 255, 10]),
    huge,
  ];
  for (const stdin of inputs) {
    for (const event of ["user-prompt-submit", "stop", "pre-tool-use", "bogus-event"]) {
      const r = await hookIn(event, { env: { ...s.env, OPENVIKING_DEBUG: "1" }, stdin });
      if (stdin !== huge || event !== "user-prompt-submit") {
        assertEquals(r.stdout, "", `${event} with ${String(stdin).slice(0, 20)}`);
      }
    }
  }
  // The real entry point reads such stdin to its end and exits 0.
  for (const stdin of [inputs[4], huge]) {
    const r = await runCli(["hook", "pre-tool-use"], { env: s.env, clearEnv: true, stdin });
    assertEquals([r.code, r.stdout], [0, ""], r.stderr);
  }
  const log = await Deno.readTextFile(`${s.home}/.openviking/logs/kimicode-hooks.log`);
  assertMatch(log, /bad-input: empty stdin/);
  assertMatch(log, /stdin is JSON but not an object \(array\)/);
  assertMatch(log, /unknown-event/);
});

Deno.test("hook: gates — disabled, bypass patterns on session id and cwd", async () => {
  await using s = await sandbox("fine");
  const prompt = [{ type: "text", text: "how should I indent this file?" }];
  const gates: Record<string, string>[] = [{ OPENVIKING_MEMORY_ENABLED: "0" }, {
    OPENVIKING_BYPASS_SESSION_PATTERNS: "session_bb98*",
  }, { OPENVIKING_BYPASS_SESSION_PATTERNS: "/home/user/**" }];
  for (const extra of gates) {
    const r = await hookIn("user-prompt-submit", {
      env: { ...s.env, ...extra },
      stdin: payload("UserPromptSubmit", { prompt }),
    });
    assertEquals(r.stdout, "");
  }
  assertEquals(s.fake!.requests.length, 0);
});

Deno.test("hook user-prompt-submit: the profile once per session; the same prompt later asks nothing and prints no second copy; `input` and string prompts work", async () => {
  await using s = await sandbox("fine");
  const run = (extra: Record<string, unknown>) =>
    hookIn("user-prompt-submit", {
      env: s.env,
      stdin: payload("UserPromptSubmit", extra),
    });
  const first = await run({
    prompt: [{ type: "text", text: "how should I indent" }, { type: "image_url", image_url: { url: "x" } }, {
      type: "text",
      text: "this file?",
    }],
  });
  assertEquals(first.stdout, `${FAKE_DIGEST_FIRST}\n`);
  assertEquals(s.fake!.requestsTo("POST /api/v1/search/search")[0].body, {
    query: "how should I indent\nthis file?",
    mode: "context",
    purpose: "coding",
    score_threshold: 0.35,
    session_id: OV_SESSION,
  });
  await new Promise((r) => setTimeout(r, 600));
  const again = await run({ input: "how should I indent\nthis file?" });
  // Before: the reused block printed the same memory again. Now the session already has it: nothing.
  assertEquals(again.stdout, "", "no profile the second time, and no second copy of the memory");
  assertEquals(s.fake!.requestsTo("POST /api/v1/search/search").length, 1, "reuse makes no request");
  await run({
    prompt: "what about <openviking-context>old</openviking-context> naming conventions?",
  });
  const search = s.fake!.requestsTo("POST /api/v1/search/search")[1].body as Record<string, unknown>;
  assertEquals(search.query, "what about  naming conventions?");
  assertEquals(
    search.exclude_uris,
    ["viking://user/default/memories/preferences/indent.md"],
    "memories the session already has are excluded",
  );
});

Deno.test("hook user-prompt-submit: two identical hooks at the same moment print once, profile once", async () => {
  await using s = await sandbox("fine");
  s.fake!.fault({ route: "POST /api/v1/search/search", delayMs: 300, times: 1 });
  const stdin = payload("UserPromptSubmit", {
    prompt: [{ type: "text", text: "how should I indent this file?" }],
  });
  const [a, b] = await Promise.all(
    [1, 2].map(() => hookIn("user-prompt-submit", { env: s.env, stdin })),
  );
  const outs = [a.stdout, b.stdout].sort();
  assertEquals(outs, ["", `${FAKE_DIGEST_FIRST}\n`]);
  assertEquals(s.fake!.requestsTo("GET /api/v1/system/status").length, 1, "profile fetched once");
  assertEquals(s.fake!.requestsTo("POST /api/v1/search/search").length, 1);
});

Deno.test("hook user-prompt-submit: an explicit prompt id dedupes even after the 500 ms window", async () => {
  await using s = await sandbox("fine");
  const stdin = payload("UserPromptSubmit", { prompt: "how should I indent this file?", prompt_id: "p-1" });
  const first = await hookIn("user-prompt-submit", { env: s.env, stdin });
  await new Promise((r) => setTimeout(r, 600));
  const second = await hookIn("user-prompt-submit", { env: s.env, stdin });
  assertTrue(first.stdout.length > 0);
  assertEquals(second.stdout, "");
});

Deno.test("hook session-start: a repeat within 2 s is ignored; resume keeps the profile flag, startup resets it", async () => {
  await using s = await sandbox("fine");
  const ups = () =>
    hookIn("user-prompt-submit", {
      env: s.env,
      stdin: payload("UserPromptSubmit", { prompt: "how should I indent this file?" }),
    });
  await ups();
  assertEquals((await promptState(s)).profileInjected, true);
  const start = (source: string) =>
    hookIn("session-start", {
      env: s.env,
      stdin: payload("SessionStart", { source }),
    });
  await start("resume");
  assertEquals(
    (await promptState(s)).profileInjected,
    true,
    "a resumed session already has its profile in context",
  );
  const at = (await promptState(s)).lastSessionStartAt;
  await start("startup");
  assertEquals((await promptState(s)).lastSessionStartAt, at, "repeat within 2 s ignored");
  await new Promise((r) => setTimeout(r, 2100));
  await start("startup");
  assertEquals((await promptState(s)).profileInjected, false);
});

/** State letter of a process per `ps` ("Z" once it exited but was not yet reaped; "" when gone). */
function procState(pid: number): string {
  const out = new Deno.Command("ps", {
    args: ["-o", "stat=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  return new TextDecoder().decode(out.stdout).trim().slice(0, 1);
}

Deno.test({
  name: "hook stop: the parent has exited before the worker's first request reaches the server",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using s = await sandbox("fine");
    let parentPid = 0;
    const seen: string[] = [];
    s.fake!.onRequest = () => seen.push(procState(parentPid));
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
    await w.write(new TextEncoder().encode(payload("Stop")));
    await w.close();
    await waitFor("the worker's requests", () => seen.length >= 2);
    const out = await child.output();
    assertEquals([out.code, new TextDecoder().decode(out.stdout)], [0, ""]);
    for (const state of seen) {
      assertTrue(state === "Z" || state === "", `parent state at a worker request: ${state}`);
    }
  },
});

Deno.test("hook stop: a worker killed in the middle of its write loses nothing — the next Stop captures it", async () => {
  await using s = await sandbox("fine");
  const expected = await expectedMessages(s);
  s.fake!.fault({ route: "POST /api/v1/sessions/:id/messages/batch", delayMs: 800, times: 1 });
  let arrived = false;
  s.fake!.onRequest = (r) => arrived ||= r.route.endsWith("/messages/batch");
  const worker = await startCli(
    ["hook", "stop"],
    { ...s.env, OPENVIKING_KIMI_HOOK_WORKER: "1" },
    payload("Stop"),
  );
  await waitFor("the worker's batch request", () => arrived);
  worker.kill("SIGKILL");
  await worker.status;
  assertEquals((await captureState(s)).capturedKeys, [], "nothing was acknowledged by the killed worker");
  assertEquals((await hookIn("stop", { env: s.env, stdin: payload("Stop") })).stdout, "");
  assertEquals((await captureState(s)).capturedKeys.length, 6);
  await new Promise((r) => setTimeout(r, 900)); // let the delayed first batch land too
  const stored = s.fake!.messages(OV_SESSION).map((m) => ({
    turn_id: m.turn_id,
    role: m.role,
    content: m.content,
  }));
  const unique = stored.filter((m, i) =>
    stored.findIndex((x) => x.turn_id === m.turn_id && x.role === m.role) === i
  );
  assertEquals(
    unique.sort((a, b) => `${a.turn_id}${a.role}`.localeCompare(`${b.turn_id}${b.role}`)),
    [...expected].sort((a, b) =>
      `${(a as { turn_id: string }).turn_id}${(a as { role: string }).role}`.localeCompare(
        `${(b as { turn_id: string }).turn_id}${(b as { role: string }).role}`,
      )
    ),
  );
  assertTrue(
    stored.length - unique.length <= s.fake!.lostReplyMessages,
    "duplicates only from the write whose reply the killed worker never read",
  );
});

Deno.test("hook logs: one JSONL line per run with event, session, duration and outcome; never the API key", async () => {
  await using s = await sandbox("fine");
  const env = { ...s.env, OPENVIKING_DEBUG: "1", OPENVIKING_API_KEY: "sk-live-supersecretkey123456" };
  await hookIn("user-prompt-submit", {
    env,

    stdin: payload("UserPromptSubmit", { prompt: "how should I indent this file?" }),
  });
  await hookIn("interrupt", { env, stdin: payload("Interrupt") });
  const text = await Deno.readTextFile(`${s.home}/.openviking/logs/kimicode-hooks.log`);
  const lines = text.trim().split("\n").map((l) => JSON.parse(l));
  const done = lines.filter((l) => l.stage === "done");
  assertEquals(done.map((l) => [l.event, l.session, typeof l.durationMs, l.outcome]), [
    ["user-prompt-submit", SESSION, "number", "injected"],
    ["interrupt", SESSION, "number", "captured"],
  ]);
  assertTrue(!text.includes("supersecretkey"), "no secret in the log");
  assertEquals((await Deno.stat(`${s.home}/.openviking/logs/kimicode-hooks.log`)).mode! & 0o777, 0o600);
});

Deno.test("hook pre-compact with capture switched off still lets the memories and the profile come again", async () => {
  await using s = await sandbox("fine");
  const env = { ...s.env, OPENVIKING_AUTO_CAPTURE: "false" };
  const ask = (prompt: string) =>
    hookIn("user-prompt-submit", {
      env,
      stdin: payload("UserPromptSubmit", { prompt }),
    });
  assertTrue(
    (await ask("how should I indent this file?")).stdout !== "",
    "the first prompt shows the memory",
  );
  assertEquals(
    (await ask("and the tests folder, tabs too?")).stdout,
    "",
    "the same memory is not shown twice",
  );
  const r = await hookIn("pre-compact", { env, stdin: payload("PreCompact") });
  assertEquals(r.stdout, "");
  assertEquals((await promptState(s)).injectedUris, []);
  assertTrue(
    (await ask("what about the docs folder?")).stdout !== "",
    "after /compact it is lost: shown again",
  );
  assertEquals(s.fake!.messages(OV_SESSION).length, 0, "and nothing was captured");
});

Deno.test("hook interrupt whose 2 s budget runs out before the commit: the commit is queued and goes out at once, detached, and the batch whose reply never came is not sent twice", async () => {
  await using s = await sandbox("fine");
  // A loaded machine or a slow server: the batch reaches the server, which takes it only after the hook gave up
  // waiting for the reply — just before the next request arrives (the detached replay's first), whatever the
  // machine's load. The hook never read a reply, so it queued the batch as unsure.
  s.fake!.fault({ route: "POST /api/v1/sessions/:id/messages/batch", hold: true, times: 1 });
  const r = await runCli(["hook", "interrupt"], {
    env: { ...s.env, OPENVIKING_TIMEOUT_MS: "5000" },
    clearEnv: true,
    stdin: payload("Interrupt", { turn_id: 2, reason: "cancelled" }),
  });
  assertEquals(r.stdout, "");
  // No other hook comes after a SIGINT in print mode: nothing but the interrupt run itself may deliver it. The
  // commit comes last: once it is there, the replay only removes its claim.
  await waitFor("the commit", () => (s.fake!.sessions.get(OV_SESSION)?.commits ?? 0) >= 1);
  await waitFor("the queue to empty", async () => (await ourQueue(pendingDir(s))).length === 0);
  const stored = s.fake!.messages(OV_SESSION).map((m) => `${m.turn_id}:${m.role}`);
  assertEquals(new Set(stored).size, 6, "every message of the interrupted session is stored");
  assertEquals(stored.length, 6, "the replay asked the session before sending the unanswered batch again");
  assertEquals(s.fake!.sessions.get(OV_SESSION)?.commits, 1, "the interrupted session is committed");
});

Deno.test("hook stop: a worker killed during its second batch keeps the first one acknowledged — never sent twice", async () => {
  await using s = await sandbox("fine");
  const j = new JournalBuilder();
  for (let i = 0; i < 60; i++) j.simpleTurn(`question ${i}`, `answer ${i}`); // 120 messages: batches of 100 + 20
  await placeJournal(s.home, SESSION, j.toString());
  const route = "POST /api/v1/sessions/:id/messages/batch";
  s.fake!.fault({ route, delayMs: 5000, skip: 1, times: 1 }); // the second batch hangs
  let batches = 0;
  s.fake!.onRequest = (r) => batches += r.route === route ? 1 : 0;
  const worker = await startCli(
    ["hook", "stop"],
    { ...s.env, OPENVIKING_KIMI_HOOK_WORKER: "1" },
    payload("Stop"),
  );
  await waitFor("the worker's second batch", () => batches >= 2);
  worker.kill("SIGKILL");
  await worker.status;
  assertEquals((await captureState(s)).ackedBelow, 50, "the first batch's 50 turns stay acknowledged");
  s.fake!.clearFaults();
  assertEquals((await hookIn("stop", { env: s.env, stdin: payload("Stop") })).stdout, "");
  assertEquals((await captureState(s)).ackedBelow, 60);
  const first = s.fake!.messages(OV_SESSION).filter((m) => Number(m.turn_id) < 50);
  assertEquals(first.length, 100, "turns 0–49 stored once each");
});
