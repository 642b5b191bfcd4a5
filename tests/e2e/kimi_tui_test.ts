/**
 * End to end in the interactive UI (under a private tmux server), where print mode cannot reach: Esc during a
 * slow answer (the Interrupt hook captures the partial turn synchronously) and `/compact` (PreCompact). Real
 * Kimi Code CLI 2.1.0 and 0.41.0, our plugin installed by `openviking-kimi install`, the fake OpenViking.
 */

import { assertEquals, assertStringIncludes, assertTrue } from "../support/assert.ts";
import { KIMI_VERSIONS, tmuxAvailable } from "../support/kimi.ts";
import { isCompaction, messageText } from "../support/model-server.ts";
import {
  E2E_TEST,
  expectFakeSession,
  FAKE_PROFILE_BLOCK,
  FAKE_RECALL_BLOCK,
  fakeMessages,
  hookResult,
  isHookResult,
  kimiOrSkip,
  type Mode,
  type Msg,
  poll,
  Rig,
  SLOW_TEXT,
} from "./harness.ts";

const MODES: Mode[] = ["config", "plugin"];
const tmux = await tmuxAvailable();

for (const version of KIMI_VERSIONS) {
  for (const mode of MODES) {
    const name = `e2e kimi ${version} TUI, ${mode} mode`;
    const install = tmux ? await kimiOrSkip(version, name) : undefined;
    if (!tmux) console.log(`SKIP ${name}: tmux is not available`);
    Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
      await using rig = await Rig.create(install!, { mode });
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
          sessionId = (await poll("the session in session_index.jsonl", async () =>
            (await rig.env.sessionIndex())[0]))
            .sessionId;
          ov = `kc-${sessionId}`;
          // No later prompt and no Stop: only the synchronous Interrupt capture can deliver this.
          const [user, assistant] = await poll(
            "the interrupted turn at the fake",
            () => {
              const m = fakeMessages(fake, ov);
              return m.length >= 2 ? m : undefined;
            },
            20_000,
            () => fakeMessages(fake, ov),
          );
          assertEquals(user, ["0", "user", slowPrompt]);
          assertEquals([assistant[0], assistant[1]], ["0", "assistant"]);
          const partial = assistant[2];
          assertTrue(
            SLOW_TEXT.startsWith(partial) && partial.length < SLOW_TEXT.length,
            `a strict prefix: ${partial}`,
          );
          assertStringIncludes(partial, "slow token 10");
          // The state is written after the commit returns: poll it too (still no prompt, so still no Stop).
          const state = await poll("the interrupt capture's state", async () => {
            const s = await rig.captureState(sessionId);
            return s.lastCaptureEvent !== undefined ? s : undefined;
          });
          assertEquals(state.lastCaptureEvent, "interrupt");
          const run = (await rig.hookRuns()).find((r) => r.event === "interrupt");
          console.log(`  interrupt hook: ${run?.outcome} in ${run?.durationMs} ms, commit ${run?.commit}`);
          assertEquals(state.capturedKeys, ["0:user", "0:assistant"]);
          assertEquals(fake.sessions.get(ov)?.commits, 1, "the interrupt capture commits");
          turns.push(user, assistant);

          // What the model received: the recall (with the profile) right before the slow prompt.
          const msgs = rig.mainRequests()[0].body.messages;
          const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === slowPrompt);
          assertEquals(
            messageText(msgs[at - 1]),
            hookResult(`${FAKE_PROFILE_BLOCK}\n\n${FAKE_RECALL_BLOCK}`),
          );

          // The next turn goes on from the partial answer; it is captured once, the partial turn is not resent.
          await tui.submit("ok, just say hi then");
          await tui.waitFor("ACK: ok, just say hi then");
          const next = rig.mainRequests().at(-1)!;
          assertTrue(
            next.body.messages.some((m) => m.role === "assistant" && messageText(m) === partial),
            "the model got the same partial answer OpenViking got",
          );
          turns.push(["1", "user", "ok, just say hi then"], ["1", "assistant", "ACK: ok, just say hi then"]);
          await expectFakeSession(fake, ov, turns, 2);
        },
      );

      await t.step(
        "5: /compact → the turns before it are captured, nothing lost, the profile comes back",
        async () => {
          await tui.compact();
          assertEquals(rig.model.chatRequests().filter(isCompaction).length, 1, "Kimi asked for a summary");
          await poll("the PreCompact capture", async () => {
            const s = await rig.captureState(sessionId);
            return s.lastCaptureEvent === "pre-compact" ? true : undefined;
          });
          await expectFakeSession(fake, ov, turns, 2);
          const after = "third: after the compaction";
          await tui.submit(after);
          await tui.waitFor(`ACK: ${after}`);
          turns.push(["2", "user", after], ["2", "assistant", `ACK: ${after}`]);
          await expectFakeSession(fake, ov, turns, 3);
          // The compacted context lost the first injection, so the profile is injected again (once).
          const msgs = rig.mainRequests().at(-1)!.body.messages;
          assertEquals(
            msgs.filter(isHookResult).map(messageText).at(-1),
            hookResult(`${FAKE_PROFILE_BLOCK}\n\n${FAKE_RECALL_BLOCK}`),
          );
          assertEquals(await tui.exit(), 0);
          // SessionEnd captures again: nothing new, nothing twice.
          await poll("the SessionEnd capture", async () => {
            const s = await rig.captureState(sessionId);
            return s.lastCaptureEvent === "session-end" ? true : undefined;
          });
          await expectFakeSession(fake, ov, turns, 3);
        },
      );
    });
  }
}
