/**
 * The end-to-end scenarios every long-running Kimi surface must pass — `kimi acp` (an editor over the Agent
 * Client Protocol) and `kimi web` (the REST server behind the web UI) — written once against a small {@link
 * Surface} driver: sessions that stay open across turns, in one Kimi process.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { messageText } from "../support/model-server.ts";
import {
  assertRecallBeforeEachPrompt,
  assertTurnsClean,
  expectFakeSession,
  type Msg,
  type Rig,
  TOOL_TURN_ANSWER,
} from "./harness.ts";

/** One turn as the surface's client saw it. */
interface SurfaceTurn {
  /** The turn ended normally (ACP `end_turn`, web `completed`). */
  ok: boolean;
  /** The answer text the client shows, its pieces joined without separators. */
  answer: string;
  /** Tool approvals the client granted during the turn. */
  approvals: number;
  durationMs: number;
}

/** A Kimi surface with sessions that stay open, driven as its client would. */
export interface Surface {
  /** A new session in the rig's work dir, ready to answer (`model: false`: one with no model chosen yet). */
  newSession(opts?: { model?: boolean }): Promise<string>;
  /** Chooses the model of a session created with `model: false`. */
  chooseModel?(sessionId: string): Promise<void>;
  /** Sends a prompt and waits for the turn to end. */
  prompt(sessionId: string, text: string): Promise<SurfaceTurn>;
  /** Everything the client was shown for a session, as one string (when the surface reports it). */
  shown?(sessionId: string): string;
}

/** The tool turn's answer as a client shows it (the two steps' texts run together). */
const TOOL_ANSWER_SHOWN = TOOL_TURN_ANSWER.replace("\n\n", "");

/**
 * Recall reaches the model before every prompt (the profile once), the client is not shown it, and a plain, a
 * tool and a plain turn reach OpenViking whole, once each, each committed, with nothing injected.
 */
export async function recallAndCapture(rig: Rig, surface: Surface): Promise<void> {
  const fake = rig.fake!;
  const sessionId = await surface.newSession();
  const ov = `kc-${sessionId}`;
  const prompts = [
    "hello, remember that I prefer tabs over spaces",
    "second: RUN_TOOL please, and think about it",
    "third: thanks, that is all",
  ];
  const answers = [`ACK: ${prompts[0]}`, TOOL_TURN_ANSWER, `ACK: ${prompts[2]}`];
  const expected: Msg[] = [];
  for (const [i, prompt] of prompts.entries()) {
    const turn = await surface.prompt(sessionId, prompt);
    assertTrue(turn.ok, `turn ${i} ended normally: ${JSON.stringify(turn)}`);
    assertEquals(turn.answer, i === 1 ? TOOL_ANSWER_SHOWN : answers[i]);
    assertEquals(turn.approvals, i === 1 ? 1 : 0, "the Bash call was approved by the client, nothing else");
    expected.push([String(i), "user", prompt], [String(i), "assistant", answers[i]]);
    await expectFakeSession(fake, ov, expected, i + 1);
  }
  assertRecallBeforeEachPrompt(rig, prompts);
  assertTurnsClean(rig, ov, prompts);
  const shown = surface.shown?.(sessionId);
  if (shown !== undefined) {
    assertEquals(
      ["<hook_result", "openviking-context"].filter((m) => shown.includes(m)),
      [],
      "the client is not shown the recall",
    );
  }
}

/**
 * A turn failed for want of a model gives OpenViking its prompt alone, at once (from the StopFailure hook),
 * committed — not withheld until a later turn's capture, and with no invented answer; once a model is chosen
 * the next turn follows it, and Kimi itself keeps the failed prompt in the model's context.
 */
export async function failedTurn(rig: Rig, surface: Surface, failedPrompt: string): Promise<void> {
  const fake = rig.fake!;
  const sessionId = await surface.newSession({ model: false });
  const ov = `kc-${sessionId}`;
  const failed = await surface.prompt(sessionId, failedPrompt);
  assertTrue(!failed.ok, `the turn failed: ${JSON.stringify(failed)}`);
  assertEquals(failed.answer, "", "a failed turn has no answer");
  const turn0: Msg[] = [["0", "user", failedPrompt]];
  await expectFakeSession(fake, ov, turn0, 1);

  await surface.chooseModel!(sessionId);
  const next = "after the failure: are you there?";
  const turn = await surface.prompt(sessionId, next);
  assertTrue(turn.ok, JSON.stringify(turn));
  assertEquals(turn.answer, `ACK: ${next}`);
  await expectFakeSession(fake, ov, [...turn0, ["1", "user", next], ["1", "assistant", `ACK: ${next}`]], 2);
  const msgs = rig.mainRequests().at(-1)!.body.messages;
  assertTrue(
    msgs.some((m) => m.role === "user" && messageText(m) === failedPrompt),
    "Kimi keeps the failed prompt in the model's context, as OpenViking does",
  );
}
