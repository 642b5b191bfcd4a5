/**
 * End to end in print mode (`kimi -p`, `kimi -S <id> -p`): the real Kimi Code CLI — every release of the
 * matrix (`KIMI_E2E_VERSIONS`, default 2.1.0 and 0.41.0; the legacy engine on 0.41.0) — our plugin installed
 * by `openviking-kimi install`, against the fake OpenViking.
 */

import { assertEquals, assertMatch, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { kimiE2eVersions, shQuote, waitUntil } from "../support/kimi.ts";
import { ourQueue } from "../support/queue.ts";
import { type PromptEntry, readLedger } from "../../memory/ledger.ts";
import { join } from "node:path";
import { messageText } from "../support/model-server.ts";
import type { PrintResult } from "../support/kimi.ts";
import {
  assertRecallBeforeEachPrompt,
  assertTurnsClean,
  atFake,
  besidePrompt,
  E2E_TEST,
  expectFakeSession,
  fakeHolds,
  fakeMessages,
  filesContaining,
  isHookResult,
  kimiOrSkip,
  MCP_ARGS,
  MCP_PREFIX,
  mcpTools,
  modeOf,
  type Msg,
  OFFERED_MCP_TOOLS,
  Rig,
  SLOW_TEXT,
  TOOL_TURN_ANSWER,
  VIKING_URI,
} from "./harness.ts";

/**
 * The hung step's prompt budget (the default is 8 s): "waits its budget once, then nothing" holds with any; a
 * turn that waited out half of it more than a normal turn did waited for OpenViking.
 */
const HUNG_BUDGET_MS = 2000;

/**
 * A Kimi version and engine to run the print scenarios with (`legacy`: `KIMI_CODE_LEGACY_FLAG=1`, wire
 * protocol 1.4, 0.41.0 only; it runs only the failed turn of the fault steps, its turn never closes: the queue
 * and the budget do not depend on the engine).
 */
const VARIANTS: { version: string; legacy: boolean }[] = [
  ...kimiE2eVersions().map((version) => ({ version, legacy: false })),
  ...kimiE2eVersions().includes("0.41.0") ? [{ version: "0.41.0", legacy: true }] : [],
];

for (const { version, legacy } of VARIANTS) {
  const name = `e2e kimi ${version}${legacy ? " legacy engine" : ""} -p`;
  const install = await kimiOrSkip(version, name);
  Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
    await using rig = await Rig.create(install!, {
      env: legacy ? { KIMI_CODE_LEGACY_FLAG: "1" } : {},
    });
    const fake = rig.fake!;
    /** The 1+2 session's last turn and what OpenViking holds of it: the fault steps resume it. */
    let kept: { run: PrintResult; held: Msg[] } | undefined;
    /** The first print after the outage: the hung step's answering baseline. */
    let afterOutage: PrintResult | undefined;

    await t.step(
      "1+2: recall in <hook_result>, profile once; plain/tool/subagent turns captured whole, once, committed",
      async () => {
        const prompts = [
          "hello, remember that I prefer tabs over spaces",
          "second: RUN_TOOL please, and think about it",
          "third: RUN_AGENT now",
          "fourth: thanks, that is everything for today",
        ];
        const answers = [
          `ACK: ${prompts[0]}`,
          TOOL_TURN_ANSWER,
          "The subagent has finished.",
          `ACK: ${prompts[3]}`,
        ];
        let sessionId: string | undefined;
        const expected: Msg[] = [];
        for (const [i, prompt] of prompts.entries()) {
          const r = await rig.print(prompt, { sessionId });
          kept = { run: r, held: expected };
          if (sessionId) assertEquals(r.sessionId, sessionId, "-S resumes the same session");
          sessionId = r.sessionId!;
          expected.push([String(i), "user", prompt], [String(i), "assistant", answers[i]]);
          // The fake's idle check (a late duplicate) once, after the last turn: it holds every turn then.
          const last = i === prompts.length - 1;
          await (last ? expectFakeSession : fakeHolds)(fake, `kc-${sessionId}`, expected, i + 1);
        }
        const ov = `kc-${sessionId}`;

        assertRecallBeforeEachPrompt(rig, prompts, legacy);
        for (const r of rig.mainRequests()) {
          const profiles = r.body.messages.map(messageText).filter((x) => x.includes("Profile (viking://"));
          assertEquals(profiles.length, 0, "the profile is in the system prompt, not the messages");
          assertStringIncludes(r.system, "Name: Test User");
        }
        assertTurnsClean(rig, ov, prompts);
        assertEquals(fake.requestsTo("POST /api/v1/search/search").length, prompts.length, "no other search");
        assertEquals(fake.requestsTo("POST /api/v1/sessions/:id/commit").length, 4);

        const keyed = (q: { path: string; headers: Record<string, string> }) =>
          q.path === "/health" || q.headers.authorization === `Bearer ${rig.apiKey}`;
        assertTrue(fake.requests.every(keyed));
        assertEquals(await filesContaining(rig.env.home, rig.apiKey!), [".openviking/ovcli.conf"]);
        // The modes of what we write are tests/security/security_test.ts's; this is the key in Kimi's files.
      },
    );

    await t.step(
      "6+7: the model calls our MCP search through Kimi and gets the server's text; the URI guard stops a Read of viking:// and the model sees why",
      async () => {
        fake.mcp.received.length = 0;
        const before = rig.model.chatRequests().length;
        const reads = fake.requestsTo("GET /api/v1/content/read").length;
        const prompt =
          "CALL_MCP please search my memory for my indentation preference, then READ_VIKING its file";
        const r = await rig.print(prompt);
        const reqs = rig.model.chatRequests().slice(before);
        const prefix = MCP_PREFIX;
        assertEquals(mcpTools(reqs[0]), OFFERED_MCP_TOOLS);
        const calls = fake.mcp.receivedMethod("tools/call").map((m) => m.params);
        assertEquals(calls, [{ name: "search", arguments: MCP_ARGS }]);
        const [searched, refused] = reqs.filter((q) => q.hasToolResult).map((q) => q.lastToolOutput ?? "");
        assertEquals(withoutWallTime(searched), `fake search: ${JSON.stringify(MCP_ARGS)}`);
        assertStringIncludes(
          refused,
          "viking:// URIs are OpenViking virtual paths, not local filesystem paths.",
        );
        assertStringIncludes(refused, `Use the OpenViking MCP tool ${prefix}read instead.`);
        assertStringIncludes(refused, `Example: ${prefix}read(uris="${VIKING_URI}")`);
        const readUris = fake.requestsTo("GET /api/v1/content/read").slice(reads).map((q) => q.query.uri);
        assertTrue(!readUris.includes(VIKING_URI), JSON.stringify(readUris));
        await expectFakeSession(fake, `kc-${r.sessionId}`, [
          ["0", "user", prompt],
          ["0", "assistant", "The read was refused."],
        ], 1);
      },
    );

    await t.step(
      "a failed turn (provider error): exit 1; its prompt alone reaches OpenViking at once, committed",
      async () => {
        const prompt = "this turn will FAIL_TURN at the provider";
        const r = await rig.env.print(prompt, { timeoutMs: 90_000 });
        assertEquals(r.code, 1, `kimi -p exits 1 on a provider error:\n${r.stderr}`);
        assertTrue(r.sessionId, "the failed run's session is in session_index.jsonl");
        await expectFakeSession(fake, `kc-${r.sessionId}`, [["0", "user", prompt]], 1);
      },
    );

    // 0.41.0/0.42.0's v2 engine writes no end marker before it dies: that turn stays open (fixture
    // closed-stdout). No memory: print mode shows a recall on stdout, and Kimi would die at that block,
    // before the prompt. Kimi queues the turn's records before Stop but
    // appends them one fsync'd batch at a time: under load it dies at the EPIPE with them still in memory
    // (ARCHITECTURE 9). Then only the prompt is left, in the journal's open turn and the prompt
    // hook's kept prompts.
    if (!/^0\.4[12]\./.test(version)) {
      await t.step(
        "`kimi -p … | head -1`: Kimi dies of EPIPE right after Stop; what its journal kept reaches OpenViking — the whole turn from Stop, or, when Kimi died before writing the turn's end, its prompt from a later session's start once idle",
        async () => {
          const prompt = "The deploy window is Thursday 14:00 UTC.";
          const answer = "Noted: Thursday 14:00 UTC.\n\n- second line\n- third line";
          const recall = fake.contextFor;
          fake.contextFor = () => ({ entries: [], rendered: "", digest: "", stats: { used_tokens: 0 } });
          rig.model.enqueue({ kind: "text", text: answer });
          const kimi = [rig.env.install.node, rig.env.install.main, "-p", prompt].map(shQuote).join(" ");
          const out = await new Deno.Command("bash", {
            args: ["-c", `${kimi} | head -1; exit "\${PIPESTATUS[0]}"`],
            cwd: rig.env.workDir,
            env: rig.env.env(),
            clearEnv: true,
            stdin: "null",
            stdout: "piped",
            stderr: "piped",
          }).output().finally(() => fake.contextFor = recall);
          const dec = new TextDecoder();
          assertEquals(dec.decode(out.stdout), "• Noted: Thursday 14:00 UTC.\n");
          assertEquals(out.code, 1, `Kimi dies writing into the closed pipe:\n${dec.decode(out.stderr)}`);
          const sessionId = rig.env.sessionIndex().at(-1)!.sessionId;
          const ov = `kc-${sessionId}`;
          await rig.capturedBy(sessionId, "stop"); // Kimi is gone: its journal is final
          const wire = await Deno.readTextFile(rig.env.journalPath(sessionId));
          if (wire.includes(`"type":"agent.turn.ended"`)) {
            await expectFakeSession(fake, ov, [["0", "user", prompt], ["0", "assistant", answer]], 1);
            return;
          }
          console.log(
            "  Kimi died before its journal had the turn's end: the prompt goes at a later start",
          );
          assertEquals(fakeMessages(fake, ov), [], "Stop sent nothing of a turn its journal never closed");
          await asIfIdle(rig, sessionId, 10 * 60_000);
          await rig.print("a later session, after the idle commit time");
          await expectFakeSession(fake, ov, [["undefined", "user", prompt]], 1); // a kept prompt: no turn id
        },
      );
    }

    if (!legacy) {
      await t.step(
        "4 (print mode): SIGINT during a slow answer → the partial turn is captured by Interrupt",
        async () => {
          const prompt = "tell me a long SLOW story, then stop";
          const run = rig.env.startPrint(prompt);
          await rig.model.waitForChat((r) => r.prompt === prompt);
          await new Promise((r) => setTimeout(r, 1500)); // some tokens stream: the cut is what is tested
          run.kill("SIGINT");
          const r = await run.result;
          assertEquals(r.code, 130, r.stderr);
          const sessionId = rig.env.sessionIndex().at(-1)!.sessionId;
          const ov = `kc-${sessionId}`;
          const [user, assistant] = await atFake(fake, ov, 2);
          assertEquals(user, ["0", "user", prompt]);
          assertTrue(
            assistant[1] === "assistant" && SLOW_TEXT.startsWith(assistant[2]) && assistant[2].length > 0 &&
              assistant[2].length < SLOW_TEXT.length,
            `a strict prefix of the slow answer: ${assistant[2]}`,
          );
          await expectFakeSession(fake, ov, [user, assistant], 1);
          await rig.capturedBy(sessionId, "interrupt", 10_000);
        },
      );

      await t.step(
        "3: OpenViking down → Kimi answers at once, writes wait in the queue (0600), replayed once at the next session start",
        async () => {
          const first = kept!.run;
          const ov = `kc-${first.sessionId}`;
          const turn0 = kept!.held;
          const turn = String(turn0.length / 2);
          await expectFakeSession(fake, ov, turn0, turn0.length / 2);

          await fake.down();
          const seen = fake.requests.length;
          const before = rig.model.chatRequests().length;
          const downPrompt = "second: the server is down now, RUN_TOOL anyway";
          const down = await rig.print(downPrompt, { sessionId: first.sessionId });
          assertStringIncludes(down.stdout, "The tool has finished.");
          const [downRun] = (await promptRuns(rig, first.sessionId!)).slice(-1);
          // It waited for nothing, proved by the path it took, not by a time that load stretches: the
          // connection was refused (`CONNECT`, not `TIMEOUT` or a spent budget), and nothing else in the
          // turn waits for OpenViking (Stop captures in a detached worker).
          assertEquals(
            [downRun.failure?.kind, downRun.failure?.code],
            ["unreachable", "CONNECT"],
            `the prompt hook was refused at once: ${JSON.stringify(downRun)}`,
          );
          console.log(
            `  kimi -p with OpenViking down: ${down.durationMs} ms, its prompt hook ${downRun.ms} ms ` +
              `(up: ${first.durationMs} ms)`,
          );
          const downReqs = rig.model.chatRequests().slice(before);
          const beside = besidePrompt(downReqs[0].body.messages, downPrompt, legacy);
          assertTrue(
            beside && !isHookResult(beside),
            "no recall without a server, and no error text either",
          );
          assertEquals(mcpTools(downReqs[0]), OFFERED_MCP_TOOLS);

          const listed = async () => (await ourQueue(rig.pendingDir)).length === 3;
          await waitUntil(listed, 30_000, "3 queued writes", 100, () => ourQueue(rig.pendingDir));
          const queued = await ourQueue(rig.pendingDir);
          for (const q of queued) assertEquals(await modeOf(q.file), 0o600, `${q.file} is private`);
          assertEquals(await modeOf(rig.pendingDir), 0o700);
          assertEquals(queued.map((q) => [q.kind, q.sessionId, q.payload]), [
            ["message", ov, { role: "user", content: downPrompt, turn_id: turn }],
            ["message", ov, { role: "assistant", content: TOOL_TURN_ANSWER, turn_id: turn }],
            ["commit", ov, undefined],
          ]);
          assertEquals(fake.requests.length, seen, "nothing reached the server while it was down");

          await fake.up();
          const next = await rig.print("third: a new session after the outage");
          afterOutage = next;
          assertTrue(next.sessionId !== first.sessionId);
          await expectFakeSession(fake, ov, [
            ...turn0,
            [turn, "user", downPrompt],
            [turn, "assistant", TOOL_TURN_ANSWER],
          ], turn0.length / 2 + 1);
          await expectFakeSession(fake, `kc-${next.sessionId}`, [
            ["0", "user", "third: a new session after the outage"],
            ["0", "assistant", "ACK: third: a new session after the outage"],
          ], 1);
          assertEquals(await ourQueue(rig.pendingDir), [], "the queue is empty again");
          const replayed = fake.requests.slice(seen).filter((q) => q.path.includes(encodeURIComponent(ov)));
          assertEquals(replayed.map((q) => q.route), [
            "POST /api/v1/sessions/:id/messages/batch",
            "POST /api/v1/sessions/:id/commit",
          ]);
          const recalled = rig.mainRequests().at(-1)!.body.messages.find(isHookResult)!;
          assertMatch(messageText(recalled), /openviking-context/);
        },
      );

      await t.step(
        "4: OpenViking hung → one prompt waits its budget and says memory is paused; the next waits for nothing",
        async () => {
          const normal = afterOutage!;
          fake.hang();
          const hungPrompt = "second: the server hangs now";
          const opts = {
            sessionId: normal.sessionId,
            env: { OPENVIKING_PROMPT_BUDGET_MS: `${HUNG_BUDGET_MS}` },
          };
          const hung = await rig.print(hungPrompt, opts);
          const againPrompt = "third: the server still hangs";
          const again = await rig.print(againPrompt, opts);
          await fake.up();
          console.log(
            `  kimi -p against a hung OpenViking: ${hung.durationMs} ms, then ${again.durationMs} ms ` +
              `(answering: ${normal.durationMs} ms)`,
          );
          /** What the model got beside `prompt` in the turn's first request. */
          const besideOf = (prompt: string) => {
            const req = rig.mainRequests().find((r) =>
              r.body.messages.some((m) => m.role === "user" && messageText(m) === prompt)
            );
            return req && besidePrompt(req.body.messages, prompt, legacy);
          };
          const prompts = await promptRuns(rig, normal.sessionId!);
          const told = besideOf(hungPrompt);
          const ledger = JSON.stringify(prompts.slice(-3));
          assertTrue(
            told && isHookResult(told),
            `the hook's output reached the model; the ledger's prompts: ${ledger}`,
          );
          assertMatch(
            messageText(told!),
            /^<hook_result hook_event="UserPromptSubmit">\nopenviking-kimi: memory paused — OpenViking at http:\/\/127\.0\.0\.1:\d+ did not answer; `[^`\n]+ status` says why\n<\/hook_result>$/,
          );
          const beside = besideOf(againPrompt);
          assertTrue(beside && !isHookResult(beside), "told once: nothing printed the second time");
          assertEquals(prompts.slice(-2).map((e) => e.kind === "prompt" && e.path), ["paused", "paused"]);
          assertTrue(prompts.at(-2)!.ms > HUNG_BUDGET_MS / 2, "the first prompt waited for the server");
          assertTrue(prompts.at(-2)!.failure, "the first asked the server and gave up on it");
          // Kimi ran the turn only after the hook's wait (a time within one run; another turn's length varies
          // by more than the budget under load).
          assertTrue(hung.durationMs >= prompts.at(-2)!.ms, "the first turn waited for it");
          // The second waited for nothing, proved by what it did, not by a time that load stretches: it
          // took the open breaker's path, which asks no server (a probe goes detached), and failed nothing.
          const runs = (await rig.hookRuns()).filter((r) =>
            r.source === "kimicode:user-prompt-submit" && r.session === normal.sessionId
          );
          const second = runs.at(-1)!;
          assertEquals(
            prompts.at(-1)!.failure,
            undefined,
            `the second asked nothing: ${JSON.stringify(second)}`,
          );
          assertEquals(
            [second.outcome, typeof second.probing],
            ["paused", "boolean"],
            JSON.stringify(second),
          );
        },
      );
    }
  });
}

/** The prompt hook runs of a session, as its ledger has them. */
async function promptRuns(rig: Rig, sessionId: string): Promise<PromptEntry[]> {
  const entries = await readLedger(join(rig.ovHome, "ledger", "kimicode"), sessionId);
  return entries.filter((e): e is PromptEntry => e.kind === "prompt");
}

/**
 * Our state of a session as it would be `ms` later (the prompt hook's kept prompts and both state files dated
 * back): what a session start finds once the session has been idle that long.
 */
async function asIfIdle(rig: Rig, sessionId: string, ms: number): Promise<void> {
  const dir = join(rig.ovHome, "hook-state", "kimicode");
  const promptFile = join(dir, `${sessionId}.prompt.json`);
  const state = JSON.parse(await Deno.readTextFile(promptFile));
  state.fallbackPrompts = state.fallbackPrompts.map((p: { at: number }) => ({ ...p, at: p.at - ms }));
  await Deno.writeTextFile(promptFile, JSON.stringify(state));
  for (const file of [promptFile, join(dir, `${sessionId}.json`)]) {
    const { mtime } = await Deno.stat(file);
    const then = new Date(mtime!.getTime() - ms);
    await Deno.utime(file, then, then);
  }
}

/** A tool output without the "Wall time: … seconds" line Kimi 2.1.0 puts first. */
function withoutWallTime(output: string | undefined): string | undefined {
  return output?.replace(/^Wall time: [\d.]+ seconds\n/, "");
}
