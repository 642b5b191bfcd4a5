/**
 * Fuzzing hook stdin: random bytes, random JSON, payload-shaped objects with wrong field types, truncated,
 * BOM-prefixed and byte-flipped payloads, huge strings and deep nesting — many runs through `runHook()`
 * in-process and a bounded number through the real entry point as processes. Either way: no internal error
 * (each run logs one outcome), only the documented stdout, no credential the fuzzers drew sent to OpenViking
 * or left in a file, and what is left under ~/.openviking private, parsing and matching its schema.
 */

import fc from "fast-check";
import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { placeJournal, sandboxEnv } from "../support/hook-context.ts";
import { JournalBuilder } from "../support/journal.ts";
import { tempDir } from "../support/temp.ts";
import { runHook } from "../../memory/dispatch.ts";
import { HOOK_EVENTS, isHookEvent } from "../../kimi/hooks.ts";
import { Processes } from "../chaos/procs.ts";
import { deep, leakedSecrets, params, runs, stdinArb } from "./arbitraries.ts";
import { privateFileProblems, walk } from "../chaos/audit.ts";

const SESSION = "session_fuzz-journal";
const EVENTS: (string | undefined)[] = [...HOOK_EVENTS, "bogus-event", undefined];

/** What is wrong with `stdout` for `event`; undefined when it is what the event may print. */
function undocumented(event: string | undefined, stdout: string): string | undefined {
  if (stdout === "") return undefined;
  if (event === "user-prompt-submit") {
    return /^<openviking-context[\s>]/.test(stdout) && stdout.endsWith("\n")
      ? undefined
      : "not a context block";
  }
  if (event !== "pre-tool-use") return "this event prints nothing";
  try {
    const out = JSON.parse(stdout) as { hookSpecificOutput?: Record<string, unknown> };
    const h = out.hookSpecificOutput;
    const deny = h?.permissionDecision === "deny" && typeof h.permissionDecisionReason === "string";
    return deny && Object.keys(out).length === 1 ? undefined : "not a deny decision";
  } catch {
    return "not JSON";
  }
}

/**
 * A sandbox on a fake server: a session with a journal (one open turn), a workspace with a broken config, the
 * debug log; and what it finds at the end (`leaks`).
 */
async function sandbox(home: string, fake: FakeOpenViking) {
  const j = new JournalBuilder().simpleTurn("first question about tabs", "first answer").prompt("open turn")
    .stepBegin().text("half an answer");
  await placeJournal(home, SESSION, j.toString());
  const ws = `${home}/ws`;
  await Deno.mkdir(`${ws}/.openviking`, { recursive: true });
  await Deno.writeTextFile(
    `${ws}/.openviking/config.json`,
    '{"recallLimit":"lots","url":"http://x","debug":[1]',
  );
  await Deno.writeTextFile(`${ws}/.openviking/config.local.json`, '{"captureMaxLength":-5,"redact":"maybe"}');
  const log = `${home}/.openviking/logs/fuzz.log`;
  const env = sandboxEnv(home, fake.url, {
    OPENVIKING_DEBUG: "1",
    OPENVIKING_DEBUG_LOG: log,
    OPENVIKING_PROMPT_BUDGET_MS: "1500",
    OPENVIKING_CAPTURE_WAIT_MS: "0",
  });
  /** Outcomes of the `done` log lines from byte `from` on, and the new end. */
  const outcomes = async (from = 0) => {
    const bytes = await Deno.readFile(log).catch(() => new Uint8Array());
    const lines = new TextDecoder().decode(bytes.subarray(from)).split("\n").filter(Boolean);
    const done = lines.map((l) => JSON.parse(l) as { stage?: string; outcome?: string }).filter((v) =>
      v.stage === "done"
    );
    return { outcomes: done.map((v) => String(v.outcome)), end: bytes.length };
  };
  /** Files under ~/.openviking that are not private, do not parse, or hold a drawn credential; and requests that do. */
  const leaks = async () => {
    const problems: string[] = [];
    for (const f of await walk(`${home}/.openviking`)) {
      problems.push(...await privateFileProblems(`${home}/.openviking`, f));
      const text = f.isDir ? "" : await Deno.readTextFile(f.path).catch(() => "");
      problems.push(...leakedSecrets(text).map((s) => `${f.path}: holds the credential ${s}`));
    }
    const sent = fake.requests.flatMap((r) => leakedSecrets(JSON.stringify(r.body) ?? ""));
    return [...problems, ...sent.map((s) => `a credential pasted into a prompt reached OpenViking: ${s}`)];
  };
  return {
    env,
    outcomes,
    leaks,
    sessionIds: [SESSION, "session_other"],
    cwds: [ws, home, "/nonexistent/dir", "relative/dir"],
  };
}

const encoder = new TextEncoder();

/** Inputs too big or too deep for the generators, tried on every event. */
function extremes(): Uint8Array[] {
  const payload = (extra: Record<string, unknown>) =>
    encoder.encode(JSON.stringify({ session_id: SESSION, cwd: "/tmp", ...extra }));
  return [
    new Uint8Array(),
    encoder.encode("[".repeat(200_000)),
    encoder.encode(`${"[".repeat(50_000)}${"]".repeat(50_000)}`),
    payload({ tool_name: "Read", tool_input: deep(20_000) }),
    payload({ prompt: deep(5_000, "how should I indent") }),
    payload({ prompt: "x".repeat(3_000_000) }),
    payload({ prompt: [{ type: "text", text: "y ".repeat(1_000_000) }] }),
    payload({ session_id: "s".repeat(100_000) }),
    encoder.encode(
      `{"session_id":"${SESSION}","cwd":"/tmp","prompt":"\\ud800\\udfff\\u0000<private>k</private>"}`,
    ),
  ];
}

const withFake = (fn: (dir: string, fake: FakeOpenViking) => Promise<void>) => async () => {
  await using dir = await tempDir("ovk-fuzz-");
  await using fake = await FakeOpenViking.start();
  await fn(dir.path, fake);
};

Deno.test({
  name: "fuzz: hook stdin through runHook() in-process — no internal error, only the documented stdout",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: withFake(async (home, fake) => {
    const original = { log: console.log, error: console.error, warn: console.warn, info: console.info };
    const printed: string[] = [];
    try {
      const s = await sandbox(home, fake);
      s.env.OPENVIKING_WRITE_PATH_ASYNC = "0"; // in-process: no detached session-start workers
      let offset = 0;
      const seen = new Map<string, number>();
      const check = async (event: string | undefined, bytes: Uint8Array) => {
        const stdout = await runHook(event, bytes, s.env);
        const bad = undocumented(event, stdout);
        assertEquals(bad, undefined, `${event}: ${bad}: ${JSON.stringify(stdout.slice(0, 200))}`);
        const { outcomes, end } = await s.outcomes(offset);
        offset = end;
        assertEquals(outcomes.length, 1, `one run, one outcome (${event})`);
        assertTrue(!outcomes[0].startsWith("error"), `${event}: internal error: ${outcomes[0]}`);
        const kind = `${event}: ${outcomes[0].replace(/[:(].*$/, "")}`;
        seen.set(kind, (seen.get(kind) ?? 0) + 1);
      };
      const capture = (...args: unknown[]) => void printed.push(args.map(String).join(" "));
      Object.assign(console, { log: capture, error: capture, warn: capture, info: capture });
      for (const bytes of extremes()) for (const event of EVENTS) await check(event, bytes);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...EVENTS), stdinArb(s.sessionIds, s.cwds), check),
        params(1500),
      );
      Object.assign(console, original);
      assertEquals(printed, [], "hooks never write to the console");
      const total = [...seen.values()].reduce((a, b) => a + b, 0);
      console.log(
        `hook stdin fuzz: ${total} in-process runs; outcomes ${JSON.stringify(Object.fromEntries(seen))}`,
      );
      assertEquals(await s.leaks(), []);
      const redacted = fake.requests.filter((r) => JSON.stringify(r.body)?.includes("[REDACTED]")).length;
      assertTrue(redacted > 0, "prompts with credentials were sent, redacted");
    } finally {
      Object.assign(console, original);
    }
  }),
});

Deno.test({
  name:
    "fuzz: hook stdin through the real entry point — exit 0, documented stdout, stderr only for a wrong event",
  ignore: Deno.build.os === "windows",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: withFake(async (home, fake) => {
    const s = await sandbox(home, fake);
    const procs = new Processes(home, s.env);
    const seed = Number(Deno.env.get("FUZZ_SEED") ?? Date.now() % 1_000_000);
    const cases: [string | undefined, Uint8Array][] = [
      ...extremes().slice(1, 6).map((b, i): [string | undefined, Uint8Array] => [EVENTS[(i * 3) % 7], b]),
      ...fc.sample(stdinArb(s.sessionIds, s.cwds), { numRuns: runs(30), seed })
        .map((b, i): [string | undefined, Uint8Array] => [EVENTS[i % EVENTS.length], b]),
    ];
    for (let i = 0; i < cases.length; i += 2) { // two at a time
      const pair = cases.slice(i, i + 2);
      const started = await Promise.all(
        pair.map(([e, bytes]) => procs.start(["hook", ...(e ? [e] : [])], bytes)),
      );
      for (const [k, run] of started.entries()) {
        const out = await run.ended;
        const event = pair[k][0];
        const what = `FUZZ_SEED=${seed} case ${i + k} (${event})`;
        if (event !== undefined && isHookEvent(event)) assertEquals([out.code, out.stderr], [0, ""], what);
        else {
          assertEquals(out.code, 0, what);
          assertMatch(out.stderr, /unknown event|missing <event>/, what);
        }
        assertEquals(undocumented(event, out.stdout), undefined, `${what}: ${out.stdout.slice(0, 200)}`);
      }
    }
    await procs.settle(60_000);
    const { outcomes } = await s.outcomes();
    assertTrue(
      outcomes.length >= cases.filter(([e]) => e !== undefined).length,
      "every hook run logged its outcome",
    );
    assertEquals(outcomes.filter((o) => o.startsWith("error")), [], `FUZZ_SEED=${seed}: internal errors`);
    assertEquals(await s.leaks(), [], `FUZZ_SEED=${seed}`);
    console.log(
      `hook stdin fuzz: ${cases.length} processes (FUZZ_SEED=${seed}), ${outcomes.length} outcomes`,
    );
  }),
});
