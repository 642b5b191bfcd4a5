/**
 * Capture over journals recorded with the real Kimi Code CLI (tests/fixtures/journals: 2.1.0, 0.41.0 and
 * 0.41.0 with the legacy engine): exact turns per scenario, the journal as it was at each Stop, and the whole
 * Stop → … → SessionEnd sequence against the fake OpenViking delivering every message once.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { makeContext, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { captureMode, captureSession } from "../../memory/capture.ts";
import { Budget } from "../../openviking/client.ts";
import { messagesOf, type TurnMessage } from "../../scripts/turns.ts";
import { scanJournal } from "../../kimi/journal/turns.ts";

const ROOT = new URL("../fixtures/journals/", import.meta.url).pathname;
const VARIANTS = ["2.1.0", "0.41.0", "0.41.0-legacy"] as const;
const opts = { maxLength: 24000, redact: true };

type Msg = [string, "user" | "assistant", string];
const ack = (
  n: number,
  p: string,
): Msg[] => [[String(n - 1), "user", p], [String(n - 1), "assistant", `ACK ${n}: ${p}`]];
const TOOL_RAN = "FINAL after tool: tool-ran";
const AGENT = "FINAL after agent: agent_id: agent-0 | actual_subagent_type: coder";
const DEPLOY: Msg[] = [
  ["0", "user", "The deploy window is Thursday 14:00 UTC."],
  ["0", "assistant", "Noted: Thursday 14:00 UTC.\n\n- second line\n- third line"],
];

/** What capture must send for each recorded scenario's final journal (closed turns only). */
function expected(variant: string, scenario: string): Msg[] {
  const legacy = variant.endsWith("legacy");
  const slow = SLOW;
  switch (scenario) {
    case "plain":
      return ack(1, "hello, remember that I prefer tabs over spaces");
    case "closed-stdout":
      // Kimi died of EPIPE before turn.ended: 2.1.0's agent.turn.ended closes the turn, 0.41.0 has no marker.
      return variant === "0.41.0" ? [] : DEPLOY;
    case "tool":
      return [["0", "user", "please RUN_TOOL and THINK about it"], ["0", "assistant", TOOL_RAN]];
    case "subagent":
      return [["0", "user", "please RUN_AGENT for me"], ["0", "assistant", AGENT]];
    case "failed":
      return legacy ? [] : [["0", "user", "this will FAIL at the provider"]];
    case "interrupted-print":
      return legacy
        ? [["0", "user", "tell me a long SLOW story"]]
        : [["0", "user", "tell me a long SLOW story"], ["0", "assistant", slow]];
    case "interrupted-tui":
      return [
        ["0", "user", "tell me a long SLOW story"],
        ...(legacy ? [] : [["0", "assistant", slow] as Msg]),
        ["1", "user", "ok, just say hi then"],
        ["1", "assistant", "ACK: hi after the interruption"],
      ];
    case "compaction":
      return [
        ...ack(1, "first: remember that I prefer tabs"),
        ["1", "user", "second: RUN_TOOL please"],
        ["1", "assistant", TOOL_RAN],
        ...ack(5, "third: after the compaction").map(([, r, c]) => ["2", r, c] as Msg),
      ];
    case "resumed":
      return [
        ...ack(1, "first: remember that I prefer tabs over spaces"),
        ["1", "user", "second: RUN_TOOL please"],
        ["1", "assistant", "FINAL after tool: tool-ran"],
        ["2", "user", "third: RUN_AGENT now"],
        ["2", "assistant", AGENT],
      ];
    case "undo":
      // `/undo 1` withdrew the second turn, `/undo 2` the third and fourth.
      return [...UNDO_TURNS[0], ...UNDO_TURNS[4]];
    case "hook-context": {
      const tool: Msg[] = [["1", "user", "and RUN_TOOL to check"], ["1", "assistant", TOOL_RAN]];
      return [...ack(1, "what do I prefer, tabs or spaces?"), ...tool];
    }
  }
  throw new Error(`no expectation for ${scenario}`);
}

const scenarios = (variant: string) =>
  [...Deno.readDirSync(`${ROOT}${variant}`)].filter((e) => e.isDirectory).map((e) => e.name).sort();
const stopSnapshots = (dir: string) =>
  [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => /^wire-at-stop-\d+\.jsonl$/.test(n)).sort((
    a,
    b,
  ) => Number(a.match(/\d+/)![0]) - Number(b.match(/\d+/)![0]));
/** The five turns of the undo scenario, as capture sends them. */
const UNDO_TURNS: Msg[][] = [
  ack(1, "first: keep this one"),
  ack(2, "second: take this back"),
  ack(3, "third: after the undo").map(([, r, c]) => ["2", r, c] as Msg),
  [["3", "user", "fourth: RUN_TOOL then take it back"], ["3", "assistant", "FINAL after tool: tool-ran"]],
  ack(6, "fifth: the last word").map(([, r, c]) => ["4", r, c] as Msg),
];

/**
 * Whether the newest turn is closed when its Stop runs: 0.41.0's v2 engine writes `turn.ended` after Stop
 * and nothing before it; 2.1.0 writes `agent.turn.ended` before Stop; legacy closes it at its final `step.end`.
 */
const closedAtStop = (variant: string) => variant !== "0.41.0";

/** The undo scenario at its n-th Stop: closed turns the undos on disk by then had not withdrawn. */
function undoAtStop(variant: string, stop: number): Msg[] {
  const turns = closedAtStop(variant)
    ? [[0], [0, 1], [0, 2], [0, 2, 3], [0, 4]]
    : [[], [0], [0], [0, 2], [0]];
  return turns[stop - 1].flatMap((i) => UNDO_TURNS[i]);
}

/**
 * What Stop at every instant, then SessionEnd, delivers in the undo scenario: a turn captured before the
 * /undo that withdrew it stays captured (0.41.0: the third, closed by the fourth Stop; else every turn).
 */
function undoDelivered(variant: string): Msg[] {
  const turns = closedAtStop(variant) ? [0, 1, 2, 3, 4] : [0, 2, 4];
  return turns.flatMap((i) => UNDO_TURNS[i]);
}

/** The interrupted story's length depends on when the interrupt landed: compare its start only. */
const SLOW = "slow token 1 slow token 2 …";
const norm = (content: string) => content.replace(/^slow token 1 slow token 2 [\s\S]*$/, SLOW);
const asMsgs = (messages: TurnMessage[]): Msg[] => messages.map((o) => [o.turn_id, o.role, norm(o.content)]);
Deno.test("recorded journals, at each Stop and whole: each turn taken once it ended, exactly the conversation; the protocol", async () => {
  const all =
    "closed-stdout compaction failed hook-context interrupted-print interrupted-tui plain resumed subagent tool undo";
  for (const variant of VARIANTS) {
    assertEquals(scenarios(variant).join(" "), all);
    for (const scenario of scenarios(variant)) {
      const dir = `${ROOT}${variant}/${scenario}`;
      const final = expected(variant, scenario);
      for (const snap of [...stopSnapshots(dir), "wire.jsonl"]) {
        const { turns } = await scanJournal(`${dir}/${snap}`);
        assertEquals(
          turns.protocolVersion,
          variant.endsWith("legacy") ? "1.4" : "1.5",
          `${variant}/${scenario}`,
        );
        const got = asMsgs(await messagesOf(`${dir}/${snap}`, opts));
        if (snap === "wire.jsonl") {
          assertEquals(got, final, `${variant}/${scenario}: exactly the conversation, nothing injected`);
          continue;
        }
        // A later /undo withdraws turns a Stop saw: that scenario has its own table.
        const want = scenario === "undo"
          ? undoAtStop(variant, Number(snap.match(/\d+/)![0]))
          : final.slice(0, got.length);
        assertEquals(got, want, `${variant}/${scenario}/${snap}: a prefix of the final conversation`);
        // The subagent's Stop fires in the middle of the main turn (its journal ends at `subagent.started`).
        const subagentStop = (await Deno.readTextFile(`${dir}/${snap}`)).trimEnd().split("\n").at(-1)!
          .includes('"type":"subagent.started"');
        if (!variant.endsWith("legacy")) {
          assertEquals(
            turns.turns.at(-1)!.closed,
            closedAtStop(variant) && !subagentStop,
            `${variant}/${scenario}/${snap}: closed by agent.turn.ended (2.1.0), open until turn.ended (0.41.0)`,
          );
        }
      }
    }
  }
});

Deno.test("recorded journals: Stop at every recorded instant, then SessionEnd — each message delivered once, in order", async () => {
  const fake = await FakeOpenViking.start();
  try {
    for (const variant of VARIANTS) {
      for (const scenario of scenarios(variant)) {
        await using home = await tempDir();
        const dir = `${ROOT}${variant}/${scenario}`;
        const sid = `session_${variant}-${scenario}`.replace(/[^A-Za-z0-9_.-]/g, "-");
        const env = sandboxEnv(home.path, fake.url);
        const path = await placeJournal(home.path, sid, "");
        for (const snap of stopSnapshots(dir)) {
          await Deno.writeTextFile(path, await Deno.readTextFile(`${dir}/${snap}`));
          const ctx = await makeContext("stop", { session_id: sid, cwd: "/home/user/project" }, env);
          await captureSession(ctx, { ...captureMode("stop", ctx.config, Date.now()), waitMs: 0 });
        }
        await Deno.writeTextFile(path, await Deno.readTextFile(`${dir}/wire.jsonl`));
        const end = await makeContext("session-end", {
          session_id: sid,
          cwd: "/home/user/project",
          reason: "exit",
        }, env);
        await captureSession(end, {
          ...captureMode("session-end", end.config, Date.now()),
          waitMs: 0,
          budget: new Budget(5000),
        });
        const stored: Msg[] = fake.messages(end.ovSessionId).map((
          m,
        ) => [m.turn_id!, m.role as Msg[1], norm(m.content!)]);
        // SessionEnd also takes a turn that never closed (a legacy failed turn leaves no end marker). A turn
        // captured at a Stop before the /undo that withdrew it stays captured (see undoDelivered).
        // 0.41.0's closed-stdout turn never closes either (and print mode fires no SessionEnd).
        const want = variant.endsWith("legacy") && scenario === "failed"
          ? [["0", "user", "this will FAIL at the provider"] as Msg]
          : variant === "0.41.0" && scenario === "closed-stdout"
          ? DEPLOY
          : scenario === "undo"
          ? undoDelivered(variant)
          : expected(variant, scenario);
        assertEquals(stored, want, `${variant}/${scenario}`);
        assertTrue(
          (fake.sessions.get(end.ovSessionId)?.commits ?? 0) >= (want.length ? 1 : 0),
          `${variant}/${scenario} committed`,
        );
      }
    }
  } finally {
    await fake.close();
  }
});
