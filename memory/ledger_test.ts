import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { tempDir } from "../tests/support/temp.ts";
import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { sandboxEnv } from "../tests/support/hook-context.ts";
import { runHook } from "./dispatch.ts";
import {
  appendLedger,
  type CaptureEntry,
  hasLedger,
  ledgerEntryOf,
  ledgerFile,
  ledgerFiles,
  type PromptEntry,
  pruneLedger,
  readLedger,
  replayEntryOf,
  sessionBudget,
  snippet,
} from "./ledger.ts";
import type { HookResult } from "./context.ts";
import type { HookEvent } from "../kimi/hooks.ts";

const limits = { ledgerMaxBytes: 4 * 1024 * 1024, ledgerMaxAgeDays: 30 };
const prompt = (i: number): PromptEntry => ({
  ...{ kind: "prompt", at: 1_800_000_000_000 + i, ms: 40, path: "context", printedChars: 240 },
  prompt: snippet(`prompt number ${i}: how do I make the build reproducible across machines?`),
  injected: [{ uri: `viking://user/default/memories/preferences/m${i % 7}.md`, score: 0.8, chars: 120 }],
  suppressed: [`viking://user/default/memories/events/e${i % 3}.md`],
});
const capture = (i: number): CaptureEntry => ({
  ...{ kind: "capture", at: 1_800_000_000_000 + i, ms: 70, event: "stop", turns: 1, sent: 2, queued: 0 },
  ...{ rejected: 0, commit: "committed", taskId: `task-${i}` },
});

Deno.test("ledger: 10,000 hook runs in one session stay within twice the session's budget; the newest entries are kept", async () => {
  await using dir = await tempDir();
  for (let i = 0; i < 10_000; i++) {
    assertTrue(await appendLedger(dir.path, "session_a", i % 2 ? capture(i) : prompt(i), limits));
  }
  const [{ size }] = await ledgerFiles(dir.path);
  assertTrue(size <= 2 * sessionBudget(limits), `${size} bytes > 2 × ${sessionBudget(limits)}`);
  const entries = await readLedger(dir.path, "session_a");
  assertEquals(entries.map((e) => e.at - 1_800_000_000_000).slice(-3), [9_997, 9_998, 9_999]);
  assertTrue(entries.length * 300 > sessionBudget(limits), `${entries.length} entries kept`);
  assertEquals((await Deno.stat(`${dir.path}/session_a.1.jsonl`)).mode! & 0o777, 0o600);
  assertEquals((await Deno.stat(dir.path)).mode! & 0o777, 0o700);
});

Deno.test("ledger: 2,000 sessions are pruned to the total budget; old files go by age", async () => {
  await using dir = await tempDir();
  const small = { ledgerMaxBytes: 200 * 1024, ledgerMaxAgeDays: 30 };
  for (let i = 0; i < 2_000; i++) await appendLedger(dir.path, `session_${i}`, prompt(i), small);
  const old = new Date(Date.now() - 40 * 86_400_000);
  await Deno.utime(ledgerFile(dir.path, "session_1999"), old, old);
  await pruneLedger(dir.path, small);
  const files = await ledgerFiles(dir.path);
  const total = files.reduce((n, f) => n + f.size, 0);
  assertTrue(total <= small.ledgerMaxBytes, `${total} bytes left`);
  assertEquals(files.some((f) => f.name === "session_1999"), false, "the 40-day-old file is gone");
});

Deno.test("ledger: a torn or foreign line is skipped, not fatal", async () => {
  await using dir = await tempDir();
  await appendLedger(dir.path, "s", prompt(1), limits);
  const torn = '{"kind":"prompt","at":\n{"x":1}\nnot json\n';
  await Deno.writeTextFile(ledgerFile(dir.path, "s"), torn, { append: true });
  await appendLedger(dir.path, "s", capture(2), limits);
  assertEquals((await readLedger(dir.path, "s")).map((e) => e.kind), ["prompt", "capture"]);
});

Deno.test("ledger: a damaged file longer than any string is moved aside by the next line, skipped, then swept", async () => {
  await using dir = await tempDir();
  await Deno.writeFile(ledgerFile(dir.path, "s"), new Uint8Array());
  await Deno.truncate(ledgerFile(dir.path, "s"), 600 * 1024 * 1024); // sparse: no disk
  assertTrue(await appendLedger(dir.path, "s", prompt(1), limits));
  assertTrue(await hasLedger(dir.path, "s"), "only its .1 file now: still a ledger (status --session)");
  assertTrue(await appendLedger(dir.path, "s", prompt(2), limits));
  assertEquals((await readLedger(dir.path, "s")).map((e) => e.at - 1_800_000_000_000), [2]);
  assertEquals(await pruneLedger(dir.path, limits), 1);
  assertEquals([await ledgerFiles(dir.path), await hasLedger(dir.path, "s")], [[], false]);
});

Deno.test("ledger: snippets are one short line", () => {
  assertEquals(snippet("  a\n\tb  "), "a b");
  const long = snippet("x".repeat(500));
  assertEquals([long.length, long.endsWith("…")], [80, true]);
});

const timing = { startedAt: 1000, now: 1042 };
const base = { at: 1000, ms: 42 };
const emptyReplay = { replayed: 0, messages: 0, rejected: 0, commitTasks: [] };
const ENTRIES: [string, HookEvent, HookResult, unknown][] = [
  ["a prompt: the query's snippet, what was injected and left out, the stage", "user-prompt-submit", {
    stdout: "x".repeat(10),
    outcome: "injected",
    query: "my token=[REDACTED]   and how\ndo I build?",
    data: {
      recall: "context",
      injected: [{ uri: "viking://a", score: 0.9, chars: 40 }],
      suppressed: ["viking://b"],
    },
  }, {
    kind: "prompt",
    ...base,
    prompt: "my token=[REDACTED] and how do I build?",
    path: "context",
    injected: [{ uri: "viking://a", score: 0.9, chars: 40 }],
    suppressed: ["viking://b"],
    printedChars: 10,
  }],
  ["a duplicate prompt", "user-prompt-submit", { outcome: "duplicate" }, undefined],
  ["recall switched off", "user-prompt-submit", { outcome: "recall-off" }, undefined],
  ["a paused prompt's probe", "user-prompt-submit", { outcome: "probe" }, undefined],
  ["a prompt whose handler left fields out", "user-prompt-submit", { outcome: "nothing", data: {} }, {
    kind: "prompt",
    ...base,
    prompt: "",
    path: "skipped",
    injected: [],
    suppressed: [],
    printedChars: 0,
  }],
  ["a capture", "stop", {
    outcome: "captured",
    data: { turns: 2, sent: 4, queued: 0, rejected: 0, commit: "committed", taskId: "t1", planned: 4 },
  }, {
    kind: "capture",
    ...base,
    event: "stop",
    turns: 2,
    sent: 4,
    queued: 0,
    rejected: 0,
    commit: "committed",
    taskId: "t1",
  }],
  ["a capture that timed out on the lock", "stop", { outcome: "lock-timeout" }, undefined],
  ["a capture of the kept prompts that settled one", "stop", {
    outcome: "no-journal",
    data: { reason: "no journal", turns: 1, sent: 1, queued: 0, commit: "none", fallback: 1 },
  }, { kind: "capture", ...base, event: "stop", turns: 1, sent: 1, queued: 0, rejected: 0, commit: "none" }],
  [
    "no journal and no kept prompt",
    "stop",
    { outcome: "no-journal", data: { reason: "x", fallback: 0 } },
    undefined,
  ],
  ["an empty replay (no news)", "session-start", { outcome: "replayed", data: emptyReplay }, undefined],
  ["a replay", "session-start", {
    outcome: "replayed",
    data: { ...emptyReplay, replayed: 2, messages: 3, commitTasks: [{ sessionId: "kc-a", taskId: "t9" }] },
  }, {
    kind: "replay",
    ...base,
    ...emptyReplay,
    replayed: 2,
    messages: 3,
    commitTasks: [{ sessionId: "kc-a", taskId: "t9" }],
  }],
];

Deno.test("ledger entries: what each hook run records, and the runs that record nothing", () => {
  for (const [name, event, result, want] of ENTRIES) {
    assertEquals(ledgerEntryOf({ event }, result, timing), want, name);
  }
});

Deno.test("ledger entry of a replay outside a session start (the replay command, a capture's backlog): its cause kept as text", () => {
  const report = {
    ...{ replayed: 1, messages: 2, rejected: 0, expired: 0, deferred: 1, commitTasks: [] },
    delivered: [{ sessionId: "kc-a", messages: 2 }],
    // A capture's backlog report carries the client's failure as it is.
    cause: { ok: false, kind: "server", status: 503, error: { message: "busy" } },
  };
  const { expired: _, deferred: __, ...counts } = report;
  assertEquals(replayEntryOf(report, timing), {
    kind: "replay",
    ...base,
    ...counts,
    cause: { kind: "server", status: 503, message: "busy" },
  });
  assertEquals(replayEntryOf({ ...report, replayed: 0, cause: undefined }, timing), undefined, "no news");
  // Its code too: a hung server's TIMEOUT is what tells status "does not answer" from "not reachable".
  const hung = {
    ok: false,
    kind: "unreachable",
    status: 0,
    error: { code: "TIMEOUT", message: "no answer" },
  };
  assertEquals(replayEntryOf({ ...report, cause: hung }, timing), {
    kind: "replay",
    ...base,
    ...counts,
    cause: { kind: "unreachable", status: 0, message: "no answer", code: "TIMEOUT" },
  });
});

Deno.test("ledger: a prompt whose ledger cannot be written still prints, and the debug log says so", async () => {
  await using dir = await tempDir();
  await using fake = await FakeOpenViking.start();
  await Deno.mkdir(`${dir.path}/.openviking`);
  await Deno.writeTextFile(`${dir.path}/.openviking/ledger`, "a file where the ledger's folder goes");
  const log = `${dir.path}/debug.log`;
  const env = sandboxEnv(dir.path, fake.url, { OPENVIKING_DEBUG: "1", OPENVIKING_DEBUG_LOG: log });
  const stdin = {
    hook_event_name: "UserPromptSubmit",
    session_id: "s1",
    cwd: "/p",
    prompt: "how do I indent?",
  };
  const stdout = await runHook("user-prompt-submit", new TextEncoder().encode(JSON.stringify(stdin)), env);
  assertTrue(stdout.includes("<openviking-context>"), stdout);
  assertTrue((await Deno.readTextFile(log)).includes('"stage":"ledger-unwritable"'));
});

Deno.test("ledger: a ledger file that is a link is never followed: the linked file stays as it was", async () => {
  if (Deno.build.os === "windows") return;
  await using dir = await tempDir();
  const target = `${dir.path}/users-notes.txt`;
  await Deno.writeTextFile(target, "my notes\n");
  await Deno.mkdir(`${dir.path}/ledger`, { mode: 0o700 });
  await Deno.symlink(target, ledgerFile(`${dir.path}/ledger`, "s"));
  // Before: the entry was appended to the user's file.
  assertEquals(await appendLedger(`${dir.path}/ledger`, "s", prompt(1), limits), false);
  assertEquals(await Deno.readTextFile(target), "my notes\n");
  assertTrue((await Deno.lstat(ledgerFile(`${dir.path}/ledger`, "s"))).isSymlink, "the link left as it was");
});
