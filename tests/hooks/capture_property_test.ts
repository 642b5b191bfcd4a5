/**
 * Property: random journals, written in random byte-cut pieces, sometimes rewritten, captured after each
 * piece under random server faults, deliver every closed turn's messages once and in order (duplicates only
 * from lost replies), nothing injected or redacted. The expectation comes from the turn model, not the planner.
 */

import fc from "fast-check";
import { assertEquals, assertTrue } from "../support/assert.ts";
import { FakeOpenViking, type Fault } from "../support/fake-openviking.ts";
import { JournalBuilder } from "../support/journal.ts";
import { makeContext, placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { tempDir } from "../support/temp.ts";
import { captureSession, WORKER_LOCK_WAIT_MS } from "../../memory/capture.ts";
import { Budget, createClient } from "../../openviking/client.ts";
import { queueSummary, replayQueue } from "../../openviking/queue.ts";
import { redact } from "../../lib/redact.ts";
import { skipReason } from "../../kimi/journal/clean.ts";

const MARK = "INJECTED-MARKER";
const SECRET = "sk-propertytestsecretvalue0123";

type Step = { texts: string[]; tool: boolean; think: boolean };
type TurnModel = { user: string; steps: Step[]; injectInUser: boolean; secret: boolean; reason: string };

// A lone surrogate too: the real server refuses a message holding one (the fake does), capture sends U+FFFD.
const word = fc.constantFrom(
  ..."alpha beta gamma delta tabs spaces parser deploy 模块 测试 😀 half\ud83d".split(" "),
);
const sentence = fc.array(word, { minLength: 3, maxLength: 9 }).map((w) => w.join(" "));
const turnArb: fc.Arbitrary<TurnModel> = fc.record({
  user: sentence,
  steps: fc.array(
    fc.record({ texts: fc.array(sentence, { maxLength: 2 }), tool: fc.boolean(), think: fc.boolean() }),
    { maxLength: 3 },
  ),
  injectInUser: fc.boolean(),
  secret: fc.boolean(),
  reason: fc.constantFrom("completed", "completed", "cancelled", "failed"),
});
const faultArb: fc.Arbitrary<Fault | null> = fc.oneof(
  fc.constant(null),
  fc.constant(null),
  fc.record({
    route: fc.constantFrom(
      ...["messages/batch", "messages", "commit"].map((r) => `POST /api/v1/sessions/:id/${r}`),
      "*",
    ),
    status: fc.constantFrom(500, 502, 503, 429, 408),
    times: fc.integer({ min: 1, max: 3 }),
  }),
  ...[{ drop: true }, { lostReply: true }, { delayMs: 1500 }].map((f) =>
    fc.constant({ route: "POST /api/v1/sessions/:id/messages/batch", times: 1, ...f })
  ),
);

type Stored = { turn_id: string; role: "user" | "assistant"; content: string };

/** The text capture sends for `text` (well-formed, redacted, trimmed), or undefined when the filters skip it. */
function captured(text: string, role: "user" | "assistant"): string | undefined {
  const sent = redact(text.toWellFormed()).trim();
  return skipReason(sent, role) ? undefined : sent;
}

/** What OpenViking must hold, from the model alone: per turn the user's words and the steps' text (blank-line apart). */
function expectedMessages(model: TurnModel[]): Stored[] {
  return model.flatMap((t, i): Stored[] => {
    const user = captured(`${t.user}${t.secret ? ` key ${SECRET}` : ""}`, "user");
    const steps = t.steps.map((s) => s.texts.join("").trim()).filter((s) => s !== "");
    const assistant = captured(steps.join("\n\n"), "assistant");
    const message = (role: Stored["role"], content?: string) =>
      content === undefined ? [] : [{ turn_id: String(i), role, content }];
    return [...message("user", user), ...message("assistant", assistant)];
  });
}

function build(turns: TurnModel[], v2: boolean): JournalBuilder {
  const j = new JournalBuilder({ v2 });
  for (const t of turns) {
    j.hookResult(`<openviking-context>${MARK} memory</openviking-context>`);
    const injected = t.injectInUser ? ` <system-reminder>${MARK}</system-reminder>` : "";
    j.prompt(`${t.user}${t.secret ? ` key ${SECRET}` : ""}${injected}`);
    j.reminder(MARK);
    for (const [i, s] of t.steps.entries()) {
      j.stepBegin();
      if (s.think) j.think(MARK);
      for (const text of s.texts) j.text(text);
      if (s.tool) j.tool("Bash", MARK);
      j.stepEnd(i === t.steps.length - 1 && !s.tool ? "end_turn" : "tool_use");
    }
    if (!v2 && (t.steps.length === 0 || t.steps.at(-1)!.tool)) j.stepBegin().stepEnd("end_turn");
    j.ended(t.reason);
  }
  return j;
}

Deno.test({
  name: "property: repeated capture delivers every closed turn exactly once, in order, nothing injected",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const fake = await FakeOpenViking.start();
    let [runs, totalDuplicates] = [0, 0];
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(turnArb, { minLength: 1, maxLength: 6 }),
          fc.boolean(),
          fc.array(fc.tuple(fc.noBias(fc.nat(1_000_000)), faultArb, fc.boolean()), {
            minLength: 1,
            maxLength: 6,
          }),
          async (model, v2, schedule) => {
            runs++;
            await using dir = await tempDir();
            const sid = `session_prop-${runs}`;
            const env = sandboxEnv(dir.path, fake.url);
            const bytes = new TextEncoder().encode(build(model, v2).toString());
            const path = await placeJournal(dir.path, sid, "");
            const capture = async (budgetMs: number) => {
              const ctx = await makeContext("stop", { session_id: sid, cwd: "/home/user/proj" }, env);
              const budget = new Budget(budgetMs);
              await captureSession(ctx, { waitMs: 0, force: false, lockWaitMs: WORKER_LOCK_WAIT_MS, budget });
              return ctx;
            };
            const cuts = schedule.map(([c]) => Math.floor((c / 1_000_000) * bytes.length)).sort((a, b) =>
              a - b
            );
            const lostBefore = fake.lostReplyMessages;
            for (const [i, [, fault, rewrite]] of schedule.entries()) {
              // Kimi rewrites old journals on resume: same records, new file.
              const to = rewrite && i > 0 ? `${path}.new` : path;
              await Deno.writeFile(to, bytes.subarray(0, cuts[i]));
              if (to !== path) await Deno.rename(to, path);
              fake.clearFaults();
              if (fault) fake.fault({ ...fault });
              await capture(3000);
            }
            // The journal completes, the server recovers, the queue drains.
            fake.clearFaults();
            await Deno.writeFile(path, bytes);
            const ctx = await capture(5000);
            const client = createClient({ baseUrl: fake.url, userAgent: "t", timeoutMs: 2000 });
            const queued = async () => (await queueSummary(ctx.pendingDir)).entries;
            for (let k = 0; k < 5 && await queued() > 0; k++) {
              await replayQueue(ctx.pendingDir, client, {
                limit: 1000,
                budget: new Budget(5000),
              });
            }
            assertEquals(await queued(), 0);

            const expected = expectedMessages(model);
            const got = fake.messages(ctx.ovSessionId).map(({ turn_id, role, content }) => ({
              turn_id,
              role,
              content,
            }));
            const unique = got.filter((m, i) =>
              got.findIndex((x) => x.turn_id === m.turn_id && x.role === m.role) === i
            );
            const duplicates = got.length - unique.length;
            totalDuplicates += duplicates;
            assertEquals(unique, expected, "every closed turn's messages, once, in order");
            const lost = fake.lostReplyMessages - lostBefore;
            assertTrue(duplicates <= lost, `duplicates ${duplicates} only from lost replies`);
            for (const m of got) {
              assertTrue(!String(m.content).includes(MARK), "nothing injected is captured");
              assertTrue(!String(m.content).includes(SECRET), "secrets are redacted");
            }
          },
        ),
        {
          numRuns: Number(Deno.env.get("CAPTURE_PROPERTY_RUNS") ?? 25),
          seed: Number(Deno.env.get("CAPTURE_PROPERTY_SEED") ?? Date.now() % 100000),
        },
      );
    } finally {
      console.log(
        `capture property: ${runs} runs, ${totalDuplicates} duplicates (all from lost replies), ${fake.lostReplyMessages} lost-reply writes`,
      );
      await fake.close();
    }
  },
});
