/**
 * The end-to-end scenarios every long-running Kimi surface must pass — `kimi acp` (an editor over the Agent
 * Client Protocol) and `kimi web` (the REST server behind the web UI) — written once against a small {@link
 * Surface} driver: sessions that stay open across turns, in one Kimi process.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { messageText } from "../support/model-server.ts";
import { ourQueue } from "../support/queue.ts";
import { waitUntil } from "../support/kimi.ts";
import { KNOBS } from "../../openviking/config.ts";
import {
  assertRecallBeforeEachPrompt,
  assertTurnsClean,
  expectFakeSession,
  isHookResult,
  modeOf,
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
  /** Whether the client learns that a turn failed. */
  reportsFailures: boolean;
}

/** The prompt hook's budget: a turn slower by half of it than one with the server up waited for the server. */
const BUDGET_MS = KNOBS.promptBudgetMs.default;

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
 * A failed turn gives OpenViking its prompt alone, at once (from the StopFailure hook), committed — not
 * withheld until a later turn's capture, and with no invented answer; the next turn follows it, and Kimi
 * itself keeps the failed prompt in the model's context.
 */
export async function failedTurn(
  rig: Rig,
  surface: Surface,
  failedPrompt: string,
  opts: { noModel?: boolean } = {},
): Promise<void> {
  const fake = rig.fake!;
  const sessionId = await surface.newSession({ model: !opts.noModel });
  const ov = `kc-${sessionId}`;
  const failed = await surface.prompt(sessionId, failedPrompt);
  if (surface.reportsFailures) assertTrue(!failed.ok, `the turn failed: ${JSON.stringify(failed)}`);
  assertEquals(failed.answer, "", "a failed turn has no answer");
  const turn0: Msg[] = [["0", "user", failedPrompt]];
  await expectFakeSession(fake, ov, turn0, 1);

  if (opts.noModel) await surface.chooseModel!(sessionId);
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

/** OpenViking down: the turn is answered at once, without recall, and its writes wait in the queue (0600) */
export async function downAndBack(rig: Rig, surface: Surface): Promise<void> {
  const fake = rig.fake!;
  const sessionId = await surface.newSession();
  const ov = `kc-${sessionId}`;
  const up = await surface.prompt(sessionId, "first: the server is still up");
  assertTrue(up.ok, JSON.stringify(up));
  const turn0: Msg[] = [
    ["0", "user", "first: the server is still up"],
    ["0", "assistant", "ACK: first: the server is still up"],
  ];
  await expectFakeSession(fake, ov, turn0, 1);

  await fake.down();
  const seen = fake.requests.length;
  const before = rig.model.chatRequests().length;
  const downPrompt = "second: the server is down now, RUN_TOOL anyway";
  const down = await surface.prompt(sessionId, downPrompt);
  assertTrue(down.ok, JSON.stringify(down));
  assertEquals(down.answer, TOOL_ANSWER_SHOWN);
  assertTrue(
    down.durationMs < up.durationMs + BUDGET_MS / 2,
    `turn took ${down.durationMs} ms with the server down (${up.durationMs} ms up)`,
  );
  console.log(`  turn with OpenViking down: ${down.durationMs} ms (with it up: ${up.durationMs} ms)`);
  const msgs = rig.model.chatRequests()[before].body.messages;
  const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === downPrompt);
  assertTrue(at > 0 && !isHookResult(msgs[at - 1]), "no recall without a server, and no error text either");

  await expectQueuedTurn(rig, ov, "1", downPrompt, seen);

  await fake.up();
  const nextSession = await surface.newSession();
  const next = await surface.prompt(nextSession, "third: a new session after the outage");
  assertTrue(next.ok, JSON.stringify(next));
  await expectFakeSession(fake, ov, [
    ...turn0,
    ["1", "user", downPrompt],
    ["1", "assistant", TOOL_TURN_ANSWER],
  ], 2);
  await expectBackAfterOutage(rig, `kc-${nextSession}`, ov, seen);
}

/**
 * While the server is down: turn `turn` of session `ov` (`prompt`, answered by the tool turn) waits in the
 * queue, its user and assistant messages and a commit, each in a private file of a private directory, and
 * nothing reached the server after the `seen`-th request.
 */
export async function expectQueuedTurn(rig: Rig, ov: string, turn: string, prompt: string, seen: number) {
  const listed = async () => (await ourQueue(rig.pendingDir)).length === 3;
  await waitUntil(listed, 30_000, "3 queued writes", 100, () => ourQueue(rig.pendingDir));
  const queued = await ourQueue(rig.pendingDir);
  for (const q of queued) assertEquals(await modeOf(q.file), 0o600, `${q.file} is private`);
  assertEquals(await modeOf(rig.pendingDir), 0o700);
  assertEquals(queued.map((q) => [q.kind, q.sessionId, q.payload]), [
    ["message", ov, { role: "user", content: prompt, turn_id: turn }],
    ["message", ov, { role: "assistant", content: TOOL_TURN_ANSWER, turn_id: turn }],
    ["commit", ov, undefined],
  ]);
  assertEquals(rig.fake!.requests.length, seen, "nothing reached the server while it was down");
}

/**
 * After an outage: the new session's turn is stored and committed, the queue is empty, and the queued session
 * `ov` was replayed in one batch and one commit after the `seen`-th request.
 */
export async function expectBackAfterOutage(rig: Rig, next: string, ov: string, seen: number): Promise<void> {
  const fake = rig.fake!;
  await expectFakeSession(fake, next, [
    ["0", "user", "third: a new session after the outage"],
    ["0", "assistant", "ACK: third: a new session after the outage"],
  ], 1);
  assertEquals(await ourQueue(rig.pendingDir), [], "the queue is empty again");
  const replayed = fake.requests.slice(seen).filter((q) => q.path.includes(encodeURIComponent(ov)));
  assertEquals(replayed.map((q) => q.route), [
    "POST /api/v1/sessions/:id/messages/batch",
    "POST /api/v1/sessions/:id/commit",
  ]);
}
