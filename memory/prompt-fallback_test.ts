/** Without a journal the kept prompts are sent once; a later capture with the journal skips the same user text. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { stdinOf, type World, world } from "../tests/hooks/world.ts";
import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { hookIn } from "../tests/support/hook-context.ts";
import { duePrompts, keepPrompt, MAX_FALLBACK_CHARS, MAX_FALLBACK_PROMPTS } from "./prompt-fallback.ts";
import { emptyState } from "./state.ts";
import { fallbackKey, planCapture } from "../kimi/journal/plan.ts";
import { type JournalLine, scanTurns } from "../kimi/journal/turns.ts";

const opts = { maxLength: 24_000, redact: true };

Deno.test("keepPrompt: the text capture would send — injections out, redacted, acks not kept", () => {
  const raw = "<openviking-context>recalled</openviking-context>\nmy key is sk-live-abcdefghijklmnop1234 " +
    "<private>pin 1234</private> ok?";
  let s = keepPrompt(emptyState(), raw, 1000, opts);
  assertEquals(s.fallbackPrompts, [{ text: "my key is [REDACTED]  ok?", at: 1000 }]);
  s = keepPrompt(s, "ok", 2000, opts);
  assertEquals(s.fallbackPrompts.length, 1, "an acknowledgement is not kept (capture skips it too)");
  s = keepPrompt(s, raw, 1200, opts);
  assertEquals(s.fallbackPrompts.length, 1, "the same prompt's hook fired twice is kept once");
  assertEquals(
    keepPrompt(emptyState(), "raw <private>x</private> text here", 1, { ...opts, redact: false })
      .fallbackPrompts[0].text,
    "raw <private>x</private> text here",
  );
});

Deno.test("keepPrompt: bounded in count and in size; the newest are kept", () => {
  let s = emptyState();
  for (let i = 0; i < MAX_FALLBACK_PROMPTS + 5; i++) {
    s = keepPrompt(s, `prompt number ${i} here`, i * 1000, opts);
  }
  assertEquals(s.fallbackPrompts.length, MAX_FALLBACK_PROMPTS);
  assertEquals(s.fallbackPrompts[0].text, "prompt number 5 here");
  for (let i = 0; i < 5; i++) s = keepPrompt(s, `${i}${"x".repeat(30_000)}`, 100_000 + i * 1000, opts);
  const chars = s.fallbackPrompts.reduce((n, p) => n + p.text.length, 0);
  assertTrue(chars <= MAX_FALLBACK_CHARS, `${chars} chars`);
  assertEquals(s.fallbackPrompts.at(-1)!.text[0], "4");
  const huge = keepPrompt(emptyState(), "y".repeat(1_000_000), 1, { ...opts, maxLength: 10_000_000 });
  assertTrue(huge.fallbackPrompts[0].text.length <= MAX_FALLBACK_CHARS + 100, "one prompt is truncated too");
});

Deno.test("duePrompts: only prompts seen after the last journal capture, and not sent by a fallback yet", () => {
  const kept = [10, 20, 30].map((at, i) => ({ text: `${"abc"[i]} question`, at }));
  const capture = { ...emptyState(), lastCaptureAt: 15, capturedKeys: [fallbackKey("b question", 20)] };
  assertEquals(duePrompts(kept, capture), [{ text: "c question", at: 30 }]);
  assertEquals(duePrompts(kept, { ...capture, promptsFrom: 0 }).length, 2, "settling keys from now on");
});

function linesOf(text: string): JournalLine[] {
  let offset = 0;
  return text.split("\n").filter(Boolean).map((l) => {
    const line = { offset, end: offset + l.length + 1, value: JSON.parse(l) };
    offset = line.end;
    return line;
  });
}

Deno.test("plan: a fallback-sent user text is skipped once, for a turn begun around when it was seen", () => {
  const now = 1_800_000_000_000;
  const j = new JournalBuilder({ timeBase: now }).simpleTurn("continue please", "first answer")
    .simpleTurn("continue please", "second answer");
  const turns = scanTurns(linesOf(j.toString())).turns;
  const plan = (keys: string[]) =>
    planCapture(turns, new Set(keys), 0, { ...opts, includeOpen: false }).toSend.map((c) => c.key);
  // One fallback send: the first turn's user message is skipped, the second (same text) is still sent.
  assertEquals(plan([fallbackKey("continue please", now - 50)]), ["0:assistant", "1:user", "1:assistant"]);
  assertEquals(plan([fallbackKey("continue please", now - 50), fallbackKey("continue please", now)]), [
    "0:assistant",
    "1:assistant",
  ]);
  assertEquals(
    plan([fallbackKey("continue please", now - 3_600_000)]).length,
    4,
    "an hour apart: not the same",
  );
  assertEquals(plan([fallbackKey("another text", now)]).length, 4, "another text: not the same");
  const untimed = scanTurns(linesOf(j.toString().replace(/,"time":\d+/g, ""))).turns;
  assertEquals(
    planCapture(untimed, new Set([fallbackKey("continue please", now)]), 0, { ...opts, includeOpen: false })
      .toSend.length,
    4,
    "no time on the prompt: sent (a duplicate rather than a loss)",
  );
});

Deno.test("prompt fallback: no journal → the prompt reaches the server once; the journal later → nothing twice", async () => {
  await using w = await world();
  const prompt = "please remember that the build uses make, token=hunter2secret";
  const redacted = "please remember that the build uses make, token=[REDACTED]";
  const startedAt = Date.now();
  await w.run("user-prompt-submit", { prompt });
  assertEquals((await w.promptState()).fallbackPrompts.map((p) => p.text), [redacted]);
  for (let i = 0; i < 2; i++) await w.hook("stop");
  const stored = () => w.fake.messages(w.ov).map((m) => [m.role, m.content]);
  assertEquals(
    [stored(), w.commits()],
    [[["user", redacted]], 1],
    "once, though two captures found no journal",
  );
  // The journal appears (Kimi's home was elsewhere, or the index came late): it is the truth from now on.
  await w.journal(
    new JournalBuilder({ timeBase: startedAt + 200 }).simpleTurn(prompt, "noted: make it is").toString(),
  );
  await w.hook("stop");
  await w.hook("session-end", { reason: "exit" });
  assertEquals(stored(), [["user", redacted], ["assistant", "noted: make it is"]], "the user text once");
  assertEquals((await w.state()).ackedBelow, 1, "the turn is settled");
});

Deno.test("prompt fallback: a kept prompt the journal still lacks a minute on is sent once, by the next capture", async () => {
  await using w = await world();
  await w.run("user-prompt-submit", { prompt: "a prompt the hook saw but the journal lacks" });
  await w.journal(new JournalBuilder().simpleTurn("the journal's prompt", "its answer").toString());
  await w.hook("stop");
  const stored = () => w.fake.messages(w.ov).map((m) => m.content);
  assertEquals(
    stored(),
    ["the journal's prompt", "its answer"],
    "a fresh prompt may still reach the journal",
  );
  await age(w, 120_000);
  for (let i = 0; i < 2; i++) await w.hook("session-end", { reason: "exit" });
  assertEquals(stored(), [
    "the journal's prompt",
    "its answer",
    "a prompt the hook saw but the journal lacks",
  ]);
});

Deno.test("prompt fallback: a turn that never ends (kimi -p | head) — its prompt once, its answer once it ends", async () => {
  await using w = await world({ env: { OPENVIKING_CAPTURE_WAIT_MS: "200" } });
  const prompt = "The deploy window is Thursday 14:00 UTC.";
  await w.run("user-prompt-submit", { prompt });
  // Seen, and begun, ten minutes ago (`age` below moves the kept prompt there).
  const open = new JournalBuilder({ timeBase: Date.now() - 600_000 }).prompt(prompt).stepBegin().text(
    "Noted: Thursday.",
  )
    .stepEnd("end_turn");
  await w.journal(open.toString());
  for (let i = 0; i < 2; i++) await w.hook("stop");
  const stored = () => w.fake.messages(w.ov).map((m) => [m.role, m.content]);
  assertEquals(stored(), [], "whole turns only: the Stop's wait ran out");
  await age(w, 600_000);
  for (let i = 0; i < 2; i++) await w.hook("session-start", { source: "startup" }, OTHER);
  assertEquals(
    stored(),
    [["user", prompt]],
    "the next start, once the session is idle: the kept prompt, once",
  );
  await w.journal(open.ended().toString());
  await w.hook("stop");
  assertEquals(stored(), [["user", prompt], ["assistant", "Noted: Thursday."]]);
});

const OTHER = "session_0c1b8f4e-2f59-4a57-9d59-1f6ad2c1e7a0";

/** Moves every kept prompt of the world's session `ms` into the past, with the keys settling them. */
async function age(w: World, ms: number) {
  const file = w.stateFile(`${w.session}.prompt`);
  const s = JSON.parse(await Deno.readTextFile(file));
  const ats: number[] = s.fallbackPrompts.map((p: { at: number }) => p.at);
  const capture = await Deno.readTextFile(w.stateFile()).catch(() => undefined);
  if (capture !== undefined) {
    const aged = ats.reduce((text, at) => text.replaceAll(`@${at}"`, `@${at - ms}"`), capture);
    await Deno.writeTextFile(w.stateFile(), aged);
  }
  s.fallbackPrompts = s.fallbackPrompts.map((p: { at: number }) => ({ ...p, at: p.at - ms }));
  await new Promise((r) => setTimeout(r, 20)); // the prompt state changed after the capture state
  await Deno.writeTextFile(file, JSON.stringify(s));
}

Deno.test("prompt fallback: killed before its Stop — the next session's start sends the prompt, once", async () => {
  await using w = await world();
  const prompt = "remember: the staging host is called kestrel";
  await w.run("user-prompt-submit", { prompt });
  await w.journal(
    new JournalBuilder({ timeBase: Date.now() }).prompt(prompt).stepBegin().text("Noted").toString(),
  );
  await age(w, 600_000);
  for (let i = 0; i < 2; i++) await w.hook("session-start", { source: "startup" }, OTHER);
  assertEquals(w.fake.messages(w.ov).map((m) => [m.role, m.content]), [["user", prompt]]);
  assertEquals(w.commits(), 1, "committed (every-turn)");
});

Deno.test("prompt fallback: a prompt the journal delivered is never sent again by a later start", async () => {
  await using w = await world();
  const prompt = "please remember the build uses make";
  await w.run("user-prompt-submit", { prompt });
  await w.journal(
    new JournalBuilder({ timeBase: Date.now() }).simpleTurn(prompt, "noted: make it is").toString(),
  );
  await w.hook("stop");
  await age(w, 600_000);
  await w.hook("session-start", { source: "startup" }, OTHER);
  await w.hook("session-end", { reason: "exit" });
  assertEquals(w.fake.messages(w.ov).map((m) => m.content), [prompt, "noted: make it is"]);
});

Deno.test("prompt fallback: a prompt withdrawn by /undo is never sent, by the journal nor the fallback", async () => {
  await using w = await world();
  const prompt = "remember that the staging database is called heron";
  await w.run("user-prompt-submit", { prompt });
  const j = new JournalBuilder({ timeBase: Date.now() }).simpleTurn(prompt, "noted: heron it is").undo(1);
  await w.journal(j.toString());
  await w.hook("stop");
  await age(w, 600_000);
  await w.hook("session-start", { source: "startup" }, OTHER);
  await w.hook("session-end", { reason: "exit" });
  assertEquals(w.fake.messages(w.ov).length, 0);
});

Deno.test("prompt fallback: a kept prompt goes only to the server it was asked on, never another start's", async () => {
  await using w = await world();
  await using other = await FakeOpenViking.start();
  const prompt = "the acquisition of Contoso closes on March 3rd, keep it quiet";
  await w.run("user-prompt-submit", { prompt });
  await age(w, 600_000);
  const start = (env: Record<string, string>, session: string) =>
    hookIn("session-start", { env, stdin: stdinOf("session-start", session, { source: "startup" }) });
  await start({ ...w.env, OPENVIKING_URL: other.url }, OTHER);
  assertEquals(other.messages(w.ov), [], "not to another server");
  await start(w.env, OTHER.replace(/0$/, "1")); // another session: a start repeated within 2 s is ignored
  assertEquals(w.fake.messages(w.ov).map((m) => m.content), [prompt], "to its own, once back there");
});
