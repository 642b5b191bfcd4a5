/** End to end in the interactive UI (under a private tmux server, 160×50), where print mode cannot reach. */

import { join } from "node:path";
import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { KIMI_VERSIONS, type KimiTui, tmuxAvailable, waitUntil } from "../support/kimi.ts";
import { isCompaction, messageText } from "../support/model-server.ts";
import { DEFAULT_ENTRY, FAKE_MEMORY_LINE, queryEntry, queryMemoryLine } from "../support/fake-openviking.ts";
import { terminalRows } from "../support/rows.ts";
import {
  atFake,
  COMMAND_DONE,
  E2E_TEST,
  expectedDigest,
  expectFakeSession,
  fakeMessages,
  hookResult,
  isHookResult,
  kimiOrSkip,
  leaks,
  MCP_PREFIX,
  type Msg,
  Rig,
  SLOW_TEXT,
  SYSTEM_PROMPT_TITLE,
  VIKING_URI,
} from "./harness.ts";

const tmux = await tmuxAvailable();

/** Rows the hook's output may take: the first prompt (profile row, two memories) and a later one. */
const FIRST_ROWS_MAX = 6;
const LATER_ROWS_MAX = 5;

/**
 * The rows the TUI shows under each "● UserPromptSubmit hook", in screen order: what follows the header's
 * blank line up to the blank line before the next item (measured: 3 columns of indent, no folding).
 */
function hookBlocks(screen: string): string[][] {
  const lines = screen.split("\n");
  const blocks: string[][] = [];
  lines.forEach((line, i) => {
    if (!line.includes("● UserPromptSubmit hook")) return;
    const rows: string[] = [];
    for (let j = i + 2; j < lines.length && !/^ (?:[●✨▶]|╭)/.test(lines[j]); j++) rows.push(lines[j]);
    while (rows.length && rows.at(-1)!.trim() === "") rows.pop();
    blocks.push(rows);
  });
  return blocks;
}

/** Checks the newest hook block on screen is `digest`, row for row, within `maxRows`. */
async function assertShown(tui: KimiTui, digest: string, maxRows: number): Promise<number> {
  const blocks = hookBlocks(await tui.history());
  const rows = blocks.at(-1) ?? [];
  assertEquals(rows.map((r) => r.trimEnd()), digest.split("\n").map((l) => `   ${l}`), "shown as printed");
  assertEquals(rows.length, terminalRows(digest), "the rows the bench counts are the rows the TUI shows");
  assertTrue(rows.length <= maxRows, `${rows.length} rows > ${maxRows}`);
  return blocks.length;
}

/** The digest printed after a compaction for `prompt`: the default memory again, and the prompt's. */
function afterCompaction(prompt: string): string {
  return `<openviking-context>\n${FAKE_MEMORY_LINE}\n${queryMemoryLine(prompt)}\n</openviking-context>`;
}

/**
 * `/compact` in the session `tui` shows, whose turns OpenViking holds (`turns`, each committed): the
 * PreCompact capture loses nothing and sends nothing twice; the next prompt's digest brings memory back once,
 * saying so, and that turn is captured and added to `turns`.
 */
async function compactAndGoOn(rig: Rig, tui: KimiTui, sessionId: string, turns: Msg[]): Promise<void> {
  const fake = rig.fake!;
  const ov = `kc-${sessionId}`;
  const commits = turns.length / 2;
  await tui.compact();
  assertEquals(rig.model.chatRequests().filter(isCompaction).length, 1, "Kimi asked for a summary");
  await rig.capturedBy(sessionId, "pre-compact");
  await expectFakeSession(fake, ov, turns, commits);
  const after = "after the compaction, say hi";
  await tui.submit(after);
  await tui.waitFor(`ACK: ${after}`);
  turns.push([String(commits), "user", after], [String(commits), "assistant", `ACK: ${after}`]);
  await expectFakeSession(fake, ov, turns, commits + 1);
  const msgs = rig.mainRequests().at(-1)!.body.messages;
  assertEquals(
    msgs.filter(isHookResult).map(messageText).at(-1),
    hookResult(afterCompaction(after)),
  );
}

for (const version of KIMI_VERSIONS) {
  const name = `e2e kimi ${version} TUI`;
  const install = tmux ? await kimiOrSkip(version, name) : undefined;
  if (!tmux) console.log(`SKIP ${name}: tmux is not available`);
  Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
    await using rig = await Rig.create(install!);
    const fake = rig.fake!;
    await using tui = await rig.env.tui();
    let sessionId = "";
    let ov = "";
    const slowPrompt = "tell me a long SLOW story";
    const turns: Msg[] = [];

    await t.step(
      "4: Esc during a slow answer → the partial turn reaches OpenViking from the Interrupt hook",
      async () => {
        await tui.submit(slowPrompt);
        await tui.waitFor("slow token 10", 30_000);
        await tui.interrupt();
        const indexed = () => rig.env.sessionIndex()[0];
        sessionId = (await waitUntil(indexed, 30_000, "the session in session_index.jsonl")).sessionId;
        ov = `kc-${sessionId}`;
        const [user, assistant] = await atFake(fake, ov, 2);
        assertEquals(user, ["0", "user", slowPrompt]);
        assertEquals([assistant[0], assistant[1]], ["0", "assistant"]);
        const partial = assistant[2];
        assertTrue(
          SLOW_TEXT.startsWith(partial) && partial.length < SLOW_TEXT.length,
          `a strict prefix: ${partial}`,
        );
        assertStringIncludes(partial, "slow token 10");
        const captured = async () => {
          const s = await rig.captureState(sessionId);
          return s.lastCapture !== undefined && s;
        };
        const state = await waitUntil(captured, 30_000, "the interrupt capture's state");
        assertEquals((state.lastCapture as { event?: string }).event, "interrupt");
        const run = (await rig.hookRuns()).find((r) => r.event === "interrupt");
        console.log(`  interrupt hook: ${run?.outcome} in ${run?.durationMs} ms, commit ${run?.commit}`);
        // `jfb:` keys mark the kept prompt this journal turn settled (memory/prompt.ts), not a message.
        const keys = (state.capturedKeys as string[]).filter((k) => !k.startsWith("jfb:"));
        assertEquals(keys, ["0:user", "0:assistant"]);
        assertEquals(fake.sessions.get(ov)?.commits, 1, "the interrupt capture commits");
        turns.push(user, assistant);

        const msgs = rig.mainRequests()[0].body.messages;
        const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === slowPrompt);
        assertEquals(messageText(msgs[at - 1]), hookResult(expectedDigest(slowPrompt, true)));

        await tui.submit("ok, just say hi then");
        await tui.waitFor("ACK: ok, just say hi then");
        const next = rig.mainRequests().at(-1)!;
        const answers = next.body.messages.filter((m) => m.role === "assistant").map(messageText);
        assertTrue(
          answers.some((a) => a.trimEnd() === partial), // capture trims a text's end (kimi/journal/clean.ts)
          `the model got the same partial answer OpenViking got (${partial.length} chars): ${
            JSON.stringify(answers.map((a) => a.slice(-40)))
          }, OpenViking ${JSON.stringify(partial.slice(-40))}; ${JSON.stringify(await rig.hookRuns())}`,
        );
        turns.push(["1", "user", "ok, just say hi then"], [
          "1",
          "assistant",
          "ACK: ok, just say hi then",
        ]);
        await expectFakeSession(fake, ov, turns, 2);
      },
    );

    await t.step(
      "5: /compact → the turns before it are captured, nothing lost, memory comes back once",
      async () => {
        await compactAndGoOn(rig, tui, sessionId, turns);
        assertEquals(await tui.exit(), 0);
        await rig.capturedBy(sessionId, "session-end");
        await expectFakeSession(fake, ov, turns, turns.length / 2);
      },
    );

    await using quiet = await rig.env.tui();
    const first = "which indentation do I prefer in this project?";
    const later = "and how do I name the test files?";
    const quietTurns: Msg[] = [
      ["0", "user", first],
      ["0", "assistant", `ACK: ${first}`],
      ["1", "user", later],
      ["1", "assistant", `ACK: ${later}`],
      ["2", "user", later],
      ["2", "assistant", `ACK: ${later}`],
    ];

    await t.step(
      "quiet: a few rows for the first prompt, one memory for a later one, nothing for a question asked again",
      async () => {
        const before = rig.mainRequests().length;
        await quiet.submit(first);
        await quiet.waitFor(`ACK: ${first}`);
        const firstDigest = expectedDigest(first, true);
        const shown = await assertShown(quiet, firstDigest, FIRST_ROWS_MAX);
        await quiet.submit(later);
        await quiet.waitFor(`ACK: ${later}`);
        assertEquals(
          await assertShown(quiet, expectedDigest(later, false), LATER_ROWS_MAX),
          shown + 1,
        );
        await quiet.submit(later);
        const answered = async () => (await quiet.history()).split(`ACK: ${later}`).length > 2;
        await waitUntil(answered, 30_000, "the answer to the question asked again");
        assertEquals(hookBlocks(await quiet.history()).length, shown + 1, "no hook output the second time");
        const reqs = rig.mainRequests().slice(before);
        const msgs = reqs.at(-1)!.body.messages;
        assertEquals(
          msgs.filter(isHookResult).map(messageText),
          [hookResult(firstDigest), hookResult(expectedDigest(later, false))],
        );
        const runs = (await rig.hookRuns()).filter((r) => r.event === "user-prompt-submit").slice(-3);
        assertEquals(runs.map((r) => r.recall), ["context", "context", "reused"]);
        assertEquals(runs.at(-1)!.suppressed, [DEFAULT_ENTRY.uri, queryEntry(later).uri]);
      },
    );

    await t.step(
      "the profile and the tool hint are in the system prompt, in no user message, never captured; the skill is listed",
      async () => {
        const reqs = rig.mainRequests();
        const last = reqs.at(-1)!;
        const skillPath = join(
          rig.env.kimiHome,
          "plugins/managed/openviking-memory/skills/openviking-memory/SKILL.md",
        );
        assertStringIncludes(
          last.system,
          "- openviking-memory: Long-term memory of the user in OpenViking",
        );
        assertStringIncludes(last.system, "When to use: The user refers to earlier sessions");
        assertStringIncludes(last.system, skillPath);
        const userTexts = reqs.flatMap((r) =>
          r.body.messages.filter((m) => m.role === "user").map(messageText)
        );
        assertStringIncludes(last.system, "# Plugin Instructions");
        assertStringIncludes(last.system, `<!-- From: plugin openviking-memory -->\n${SYSTEM_PROMPT_TITLE}`);
        assertStringIncludes(last.system, `\`${MCP_PREFIX}search\``);
        assertStringIncludes(last.system, "Name: Test User");
        const plugins = [SYSTEM_PROMPT_TITLE, "Name: Test User", "Use the search/read MCP tools"];
        for (const text of userTexts) assertEquals(plugins.filter((x) => text.includes(x)), [], text);
        const sid = rig.env.sessionIndex().at(-1)!.sessionId;
        await expectFakeSession(fake, `kc-${sid}`, quietTurns, 3);
        for (const [, , text] of fakeMessages(fake, `kc-${sid}`)) assertEquals(leaks(text), [], text);
      },
    );

    await t.step(
      "/openviking-memory:remember, :recall and :forget call their tools through our MCP proxy",
      async () => {
        const calls = () => fake.mcp.receivedMethod("tools/call").map((m) => m.params);
        const seen = calls().length;
        const run = async (command: string) => {
          const done = (await quiet.history()).split(COMMAND_DONE).length;
          await quiet.submit(command);
          let approved = false;
          const answered = async () => {
            if (!approved && (await quiet.screen()).includes("1. Approve once")) {
              approved = true;
              await quiet.keys("1");
            }
            return (await quiet.history()).split(COMMAND_DONE).length > done;
          };
          await waitUntil(answered, 30_000, `the answer to ${command}`);
        };
        await run("/openviking-memory:remember I prefer tabs over spaces, always");
        await run("/openviking-memory:recall indentation preference");
        await run(`/openviking-memory:forget ${VIKING_URI}`);
        await waitUntil(() => calls().length >= seen + 3, 30_000, "three tool calls at the fake's /mcp");
        assertEquals(calls().slice(seen), [
          {
            name: "remember",
            arguments: { messages: [{ role: "user", content: "I prefer tabs over spaces, always" }] },
          },
          { name: "search", arguments: { query: "indentation preference" } },
          { name: "forget", arguments: { uri: VIKING_URI } },
        ]);
        const runs = (await rig.hookRuns()).filter((r) => r.event === "user-prompt-submit");
        assertEquals(runs.length, 3 + 3, "the TUI sessions' prompts, no command among them");
      },
    );
    assertEquals(await quiet.exit(), 0);
  });
}
