import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { ROOT } from "../support/run.ts";
import {
  appendLedger,
  type CaptureEntry,
  ledgerFile,
  ledgerFiles,
  type PromptEntry,
  pruneLedger,
  readLedger,
  sessionBudget,
  snippet,
} from "../../memory/ledger.ts";

const limits = { maxTotalBytes: 4 * 1024 * 1024, maxAgeDays: 30 };
const prompt = (i: number): PromptEntry => ({
  kind: "prompt",
  at: 1_800_000_000_000 + i,
  ms: 40,
  prompt: snippet(`prompt number ${i}: how do I make the build reproducible across machines?`),
  path: "context",
  injected: [{ uri: `viking://user/default/memories/preferences/m${i % 7}.md`, score: 0.8, chars: 120 }],
  suppressed: [`viking://user/default/memories/events/e${i % 3}.md`],
  printedChars: 240,
});
const capture = (i: number): CaptureEntry => ({
  kind: "capture",
  at: 1_800_000_000_000 + i,
  ms: 70,
  event: "stop",
  turns: 1,
  sent: 2,
  queued: 0,
  rejected: 0,
  commit: "committed",
  taskId: `task-${i}`,
});

Deno.test("ledger: 10,000 hook runs in one session stay within the session's budget; the newest entries are kept", async () => {
  await using dir = await tempDir();
  for (let i = 0; i < 10_000; i++) {
    assertTrue(await appendLedger(dir.path, "session_a", i % 2 ? capture(i) : prompt(i), limits));
  }
  const size = (await Deno.stat(ledgerFile(dir.path, "session_a"))).size;
  assertTrue(size <= sessionBudget(limits), `${size} bytes > ${sessionBudget(limits)}`);
  const entries = await readLedger(dir.path, "session_a");
  assertEquals(entries.at(-1)?.at, 1_800_000_000_000 + 9_999, "the newest entry is there");
  assertTrue(entries.length > 100, `${entries.length} entries kept`);
  assertEquals((await Deno.stat(ledgerFile(dir.path, "session_a"))).mode! & 0o777, 0o600);
  assertEquals((await Deno.stat(dir.path)).mode! & 0o777, 0o700);
});

Deno.test("ledger: 2,000 sessions are pruned to the total budget; old files go by age", async () => {
  await using dir = await tempDir();
  const small = { maxTotalBytes: 200 * 1024, maxAgeDays: 30 };
  for (let i = 0; i < 2_000; i++) await appendLedger(dir.path, `session_${i}`, prompt(i), small);
  const old = new Date(Date.now() - 40 * 86_400_000);
  await Deno.utime(ledgerFile(dir.path, "session_1999"), old, old);
  await pruneLedger(dir.path, small);
  const files = await ledgerFiles(dir.path);
  const total = files.reduce((n, f) => n + f.size, 0);
  assertTrue(total <= small.maxTotalBytes, `${total} bytes left`);
  assertEquals(files.some((f) => f.name === "session_1999"), false, "the 40-day-old file is gone");
});

Deno.test("ledger: a torn or foreign line is skipped, not fatal", async () => {
  await using dir = await tempDir();
  await appendLedger(dir.path, "s", prompt(1), limits);
  await Deno.writeTextFile(ledgerFile(dir.path, "s"), '{"kind":"prompt","at":\n{"x":1}\nnot json\n', {
    append: true,
  });
  await appendLedger(dir.path, "s", capture(2), limits);
  assertEquals((await readLedger(dir.path, "s")).map((e) => e.kind), ["prompt", "capture"]);
});

/** Runs `script` (given the directory and a writer's name as arguments) in one process per writer, at once. */
async function writers(dir: string, script: string, names: string[], beforeStart?: () => Promise<void>) {
  const path = `${dir}/w.ts`;
  await Deno.writeTextFile(path, script);
  const run = (who: string) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--config", `${ROOT}/deno.json`, path, dir, who],
      stdout: "null",
    }).output();
  const done = Promise.all(names.map(run));
  await beforeStart?.();
  assertTrue((await done).every((o) => o.success), "every writer finished");
}

Deno.test("ledger: two processes appending at once never mix their lines", async () => {
  await using dir = await tempDir();
  const script = `
    import { appendLedger } from "${new URL("../../memory/ledger.ts", import.meta.url).href}";
    const [dir, who] = Deno.args;
    for (let i = 0; i < 300; i++) {
      await appendLedger(dir, "s", { kind: "prompt", at: i, ms: 1, prompt: who.repeat(200), path: "none",
        injected: [], suppressed: [], printedChars: 0 }, { maxTotalBytes: 1 << 30, maxAgeDays: 30 });
    }`;
  await writers(dir.path, script, ["a", "b"]);
  const entries = await readLedger(dir.path, "s");
  assertEquals(entries.length, 600, "every line parses whole");
  assertTrue(entries.every((e) => e.kind === "prompt" && /^(a+|b+)$/.test(e.prompt)));
});

Deno.test("ledger: three processes appending while files are compacted lose no line", async () => {
  await using dir = await tempDir();
  // Each of 40 sessions gets ~1.1 times its 64 KB budget from three writers at once: one compaction each, so
  // every line after the half it keeps is still there. Lines are numbered per writer: what survives of one
  // writer in a session must be an unbroken run ending at its last line — a line lost to a compaction is a gap.
  const LINES = 110;
  const script = `
    import { appendLedger } from "${new URL("../../memory/ledger.ts", import.meta.url).href}";
    const [dir, who] = Deno.args;
    while (!(await Deno.stat(dir + "/go").then(() => true, () => false))) await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < ${LINES}; i++) {
      for (let s = 0; s < 40; s++) {
        await appendLedger(dir, "s" + s, { kind: "prompt", at: i, ms: 1, prompt: who.repeat(120), path: "none",
          injected: [], suppressed: [], printedChars: 0 }, { maxTotalBytes: 1024, maxAgeDays: 30 });
      }
    }`;
  const names = ["a", "b", "c"];
  await writers(dir.path, script, names, async () => {
    await new Promise((r) => setTimeout(r, 1500)); // all three have started and wait
    await Deno.writeTextFile(`${dir.path}/go`, "");
  });
  const broken: string[] = [];
  for (let s = 0; s < 40; s++) {
    const entries = await readLedger(dir.path, `s${s}`);
    assertTrue(entries.length < 3 * LINES, `s${s} was compacted`);
    for (const who of names) {
      const seen = entries.filter((e) => e.kind === "prompt" && e.prompt.startsWith(who)).map((e) => e.at);
      const from = seen[0] ?? LINES;
      const missing = Array.from({ length: LINES - from }, (_, i) => from + i).filter((n) =>
        !seen.includes(n)
      );
      if (!seen.length || missing.length) broken.push(`s${s}/${who}: kept from ${from}, missing ${missing}`);
    }
  }
  assertEquals(broken, []);
});

Deno.test("ledger: snippets are one short line", () => {
  assertEquals(snippet("  a\n\tb  "), "a b");
  const long = snippet("x".repeat(500));
  assertEquals([long.length, long.endsWith("…")], [80, true]);
});
