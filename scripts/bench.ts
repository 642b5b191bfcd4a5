/**
 * `deno task bench`: measures the hot paths as real processes against a fast local fake OpenViking — the
 * prompt hook and the Stop parent of the installed program copy (through its launcher, as Kimi runs it) next
 * to the same hooks run from the checkout (`deno run` with the `cli` task's flags) and a bare `deno run` of an
 * empty file, their runs interleaved in one run — and writes docs/BENCHMARKS.md. Figures are ratios within
 * one run, so the machine's speed cancels out.
 *
 * Then 5 prompts of one session against a server that accepts connections and never answers, one after
 * another, as Kimi would send them; and what commits cost under each commit policy (bench/commit_bench.ts).
 *
 *   deno task bench [--runs N] [--quick]      (--quick: fewer runs and no 100 MB journal, for a smoke check)
 */

import { FakeOpenViking } from "../tests/support/fake-openviking.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { cliArgs, denoEnv, ROOT, runCli } from "../tests/support/run.ts";
import { placeJournal } from "../tests/support/hook-context.ts";
import { benchMcpProxy, percentile } from "../bench/mcp_bench.ts";
import { startHungServer } from "../tests/support/hung-server.ts";
import { commitSection, sectionOf, withSection } from "../bench/commit_bench.ts";

const args = Deno.args;
const quick = args.includes("--quick");
const RUNS = Number(args[args.indexOf("--runs") + 1]) || (quick ? 10 : 40);

/** One measured process run. */
interface Sample {
  ms: number;
  rssKb: number;
}

/** Summary of samples. */
interface Stats {
  p50: number;
  p95: number;
  rssKb: number;
}

const stats = (samples: Sample[]): Stats => {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  return {
    p50: percentile(ms, 50),
    p95: percentile(ms, 95),
    rssKb: Math.max(...samples.map((s) => s.rssKb)),
  };
};

const hasTime = await Deno.stat("/usr/bin/time").then(() => true, () => false);

/** Runs a command with `stdin` and a clean environment; resolves to its output. */
async function runWithStdin(
  cmd: string,
  cmdArgs: string[],
  stdin: string,
  env: Record<string, string>,
): Promise<Deno.CommandOutput> {
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(stdin));
  await w.close();
  return await child.output();
}

/** Wall time of one run (RSS is measured in a separate run under /usr/bin/time). */
async function timed(
  cmd: string,
  cmdArgs: string[],
  stdin: string,
  env: Record<string, string>,
): Promise<number> {
  const t0 = performance.now();
  const out = await runWithStdin(cmd, cmdArgs, stdin, env);
  const ms = performance.now() - t0;
  if (!out.success) throw new Error(`${cmdArgs.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  return ms;
}

/** Peak RSS (KB) of one run, via GNU time; 0 when unavailable. */
async function peakRss(
  cmd: string,
  cmdArgs: string[],
  stdin: string,
  env: Record<string, string>,
): Promise<number> {
  if (!hasTime) return 0;
  const out = await runWithStdin("/usr/bin/time", ["-f", "%M", cmd, ...cmdArgs], stdin, env);
  return Number(new TextDecoder().decode(out.stderr).trim().split("\n").at(-1)) || 0;
}

/** One process kind measured by {@link measureInterleaved}. */
interface Variant {
  label: string;
  cmd: string;
  args: string[];
  stdin: (i: number) => string;
  env: Record<string, string>;
}

/**
 * Measures several variants with their runs interleaved (run i of each, then run i + 1 of each), so drift
 * and the neighbours' load hit all of them alike; 3 warm-up rounds first, peak RSS from one more run each.
 */
async function measureInterleaved(variants: Variant[], runs = RUNS): Promise<Stats[]> {
  const samples = variants.map(() => [] as Sample[]);
  for (let i = -3; i < runs; i++) {
    for (const [k, v] of variants.entries()) {
      const ms = await timed(v.cmd, v.args, v.stdin(i), v.env);
      if (i >= 0) samples[k].push({ ms, rssKb: 0 });
    }
  }
  const out: Stats[] = [];
  for (const [k, v] of variants.entries()) {
    samples[k][0].rssKb = await peakRss(v.cmd, v.args, v.stdin(runs), v.env);
    const st = stats(samples[k]);
    console.error(
      `${v.label}: p50 ${st.p50.toFixed(1)} ms, p95 ${st.p95.toFixed(1)} ms, peak RSS ${
        (st.rssKb / 1024).toFixed(1)
      } MB`,
    );
    out.push(st);
  }
  return out;
}

/** Prompts of one session against a server that never answers. */
const HUNG_PROMPTS = 5;

function machine(): string {
  let cpu = "unknown CPU";
  try {
    const out = new Deno.Command("lscpu", { stdout: "piped", stderr: "null" }).outputSync();
    cpu = /Model name:\s*(.+)/.exec(new TextDecoder().decode(out.stdout))?.[1]?.trim() ?? cpu;
  } catch {
    // no lscpu
  }
  const mem = `${(Deno.systemMemoryInfo().total / 1024 ** 3).toFixed(1)} GiB RAM`;
  return `${cpu}, ${navigator.hardwareConcurrency} cores, ${mem}, ${Deno.build.os} ${Deno.osRelease()}, Deno ${Deno.version.deno}`;
}

/** A journal of about `bytes` bytes made of complete turns with realistic records (tool output, reasoning). */
function journalOfSize(bytes: number): { text: string; turns: number } {
  const j = new JournalBuilder();
  const filler = "x".repeat(8000);
  let turns = 0;
  let size = 0;
  let counted = 0;
  while (size < bytes) {
    j.prompt(`question ${turns} about the parser and its tests`).stepBegin().think("thinking").tool(
      "Bash",
      filler,
    ).stepEnd("tool_use")
      .stepBegin().text(`answer ${turns}: the parser handles it.`).stepEnd("end_turn").ended();
    turns++;
    for (; counted < j.lines.length; counted++) size += j.lines[counted].length + 1;
  }
  return { text: j.toString(), turns };
}

/**
 * A pasted log of 64 KB — as much of a prompt as the recall query cleans and redacts — with CRLF lines and
 * credentials in it: the prompt that makes redaction work the hardest it is asked to.
 */
const PASTED_LOG = Array.from(
  { length: 800 },
  (_, i) =>
    i % 40 === 0
      ? `DB_PASSWORD=hunter${i} DATABASE_URL=postgres://app:pw${i}@db/app Authorization: Bearer tok${i}abcdef`
      : `2026-12-01T00:00:${i % 60}Z INFO GET /api/v1/items?id=${i} 200 ${
        i % 90
      }ms user=bob token_count=${i}`,
).join("\r\n").slice(0, 64_000);

/**
 * Fills `home` with the history of `sessions` past sessions — each one's capture and prompt state and its
 * ledger, `ledgerLines` lines in all — as a long-used home has them. Returns it in words.
 */
function largeHome(home: string, sessions: number, ledgerLines: number): string {
  const ov = `${home}/.openviking`;
  const [state, ledger] = [`${ov}/hook-state/kimicode`, `${ov}/ledger/kimicode`];
  for (const d of [state, ledger]) Deno.mkdirSync(d, { recursive: true, mode: 0o700 });
  const line = (at: number) =>
    JSON.stringify({
      kind: "prompt",
      at,
      ms: 120,
      prompt: "how should I name the parser tests?",
      path: "context",
      injected: [{ uri: "viking://user/default/memories/preferences/naming.md", chars: 80 }],
      suppressed: [],
      printedChars: 160,
    });
  const perSession = Math.ceil(ledgerLines / sessions);
  const now = Date.now();
  for (let i = 0; i < sessions; i++) {
    const id = `session_past-${i}`;
    const at = now - (sessions - i) * 60_000;
    const capture = { version: 1, capturedKeys: ["0:user", "0:assistant"], ackedBelow: 1, lastCaptureAt: at };
    Deno.writeTextFileSync(`${state}/${id}.json`, JSON.stringify(capture), { mode: 0o600 });
    const promptState = { version: 1, injectedUris: ["viking://user/default/memories/x"] };
    Deno.writeTextFileSync(`${state}/${id}.prompt.json`, JSON.stringify(promptState), { mode: 0o600 });
    const lines = Array.from({ length: perSession }, (_, k) => line(at + k * 1000));
    Deno.writeTextFileSync(`${ledger}/${id}.jsonl`, `${lines.join("\n")}\n`, { mode: 0o600 });
  }
  return `${sessions} past sessions, ${perSession * sessions} ledger lines`;
}

/**
 * Rounds of: a bare `deno run`, then in each home a SessionStart through `launcher` followed at once by the
 * session's first prompt, timed (the start's detached worker is waited for before the next round: its `done`
 * line in the debug log). The bare runs and the prompt hooks' times, per home.
 */
async function measureStartThenPrompt(
  bareArgs: string[],
  launcher: string,
  envs: Record<string, string>[],
): Promise<Stats[]> {
  const samples = [[], ...envs.map(() => [])] as Sample[][];
  for (let i = -3; i < RUNS; i++) {
    const bare = await timed(deno, bareArgs, "", envs[0]);
    if (i >= 0) samples[0].push({ ms: bare, rssKb: 0 });
    for (const [k, base] of envs.entries()) {
      const log = `${base.HOME}/start-prompt.log`;
      const env = { ...base, OPENVIKING_DEBUG: "1", OPENVIKING_DEBUG_LOG: log };
      const session = `session_start_${i}`;
      const start = JSON.stringify({ session_id: session, cwd: base.HOME, source: "startup" });
      await timed(launcher, ["hook", "session-start"], start, env);
      const prompt = JSON.stringify({
        session_id: session,
        cwd: base.HOME,
        prompt: `how should I name test ${i}?`,
      });
      const ms = await timed(launcher, ["hook", "user-prompt-submit"], prompt, env);
      if (i >= 0) samples[k + 1].push({ ms, rssKb: 0 });
      const done = new RegExp(
        `"source":"kimicode:session-start:worker","stage":"done".*"session":"${session}"`,
      );
      for (let t = 0; t < 600 && !done.test(await Deno.readTextFile(log).catch(() => "")); t++) {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
  return samples.map((x) => stats(x));
}

const fake = await FakeOpenViking.start();
const home = await Deno.makeTempDir({ prefix: "ovk-bench-" });
const baseEnv = {
  HOME: home,
  KIMI_CODE_HOME: `${home}/.kimi-code`,
  OPENVIKING_URL: fake.url,
  ...denoEnv(),
  PATH: Deno.env.get("PATH") ?? "/usr/bin",
};
const deno = Deno.execPath();
const cli = await cliArgs();
const empty = `${home}/empty.ts`;
await Deno.writeTextFile(empty, "");
const flags = cli.slice(1, cli.indexOf("--config"));
const results: Record<string, Stats> = {};
/** Wall time of each prompt against the hung server. */
const hungMs: number[] = [];
/** The long history of the large-home case, in words. */
let bigHistory = "";

// The installed program copy, placed by install itself; its launcher is what the hooks run.
await Deno.mkdir(`${home}/.kimi-code`, { recursive: true });
const installed = await runCli(["install", "--url", fake.url], { env: baseEnv, clearEnv: true, cwd: home });
if (installed.code !== 0) throw new Error(`install failed: ${installed.stderr}`);
const hooksRun = /^Hooks run: \.\/(\S+) hook <event>, in ([^\s:]+)(?:: the program copy (\S+),)?/m
  .exec(installed.stdout);
if (!hooksRun) throw new Error(`install did not say what the hooks run:\n${installed.stdout}`);
const launcher = `${hooksRun[2]}/${hooksRun[1]}`;
const copyDir = hooksRun[3] ?? "";
const copyBytes = (await Promise.all(["main.js", "hook.js"].map((f) => Deno.stat(`${copyDir}/${f}`))))
  .reduce((n, st) => n + st.size, 0);

try {
  const prompt = (prefix: string) => (i: number) =>
    JSON.stringify({
      session_id: `session_${prefix}`,
      cwd: home,
      prompt: [{ type: "text", text: `how should I name test ${i}?` }],
    });
  const pasted = (prefix: string) => (i: number) =>
    JSON.stringify({
      session_id: `session_${prefix}`,
      cwd: home,
      prompt: [{ type: "text", text: `why does deploy ${i} fail?\r\n${PASTED_LOG}` }],
    });
  const first = (prefix: string) => (i: number) =>
    JSON.stringify({
      session_id: `session_${prefix}_${i}`,
      cwd: home,
      prompt: [{ type: "text", text: `how should I indent file ${i}?` }],
    });
  // Stop parent: time until the hook process returns (the detached worker runs on).
  const stopSid = "session_stopbench";
  await placeJournal(
    home,
    stopSid,
    new JournalBuilder().simpleTurn("remember I like tabs", "Noted, tabs.").toString(),
  );
  const stop = () => JSON.stringify({ session_id: stopSid, cwd: home, stop_hook_active: false });
  // The workers' idle watch (the default policy) ends a second after the last one: the bench waits for none.
  const stopEnv = { ...baseEnv, OPENVIKING_CAPTURE_WAIT_MS: "0", OPENVIKING_IDLE_COMMIT_SECONDS: "1" };
  const checkout = (event: string) => [...cli, "hook", event];
  [
    results.bare,
    results.prompt,
    results.copyPrompt,
    results.copyPasted,
    results.promptFirst,
    results.copyPromptFirst,
    results.stop,
    results.copyStop,
  ] = await measureInterleaved([
    {
      label: "bare deno run (empty file)",
      cmd: deno,
      args: ["run", ...flags, empty],
      stdin: () => "",
      env: baseEnv,
    },
    {
      label: "checkout: user-prompt-submit, later prompt",
      cmd: deno,
      args: checkout("user-prompt-submit"),
      stdin: prompt("later_checkout"),
      env: baseEnv,
    },
    {
      label: "installed copy: user-prompt-submit, later prompt",
      cmd: launcher,
      args: ["hook", "user-prompt-submit"],
      stdin: prompt("later_copy"),
      env: baseEnv,
    },
    {
      label: "installed copy: user-prompt-submit, later prompt with a 64 KB pasted log",
      cmd: launcher,
      args: ["hook", "user-prompt-submit"],
      stdin: pasted("pasted_copy"),
      env: baseEnv,
    },
    {
      label: "checkout: user-prompt-submit, first prompt",
      cmd: deno,
      args: checkout("user-prompt-submit"),
      stdin: first("first_checkout"),
      env: baseEnv,
    },
    {
      label: "installed copy: user-prompt-submit, first prompt",
      cmd: launcher,
      args: ["hook", "user-prompt-submit"],
      stdin: first("first_copy"),
      env: baseEnv,
    },
    { label: "checkout: stop parent", cmd: deno, args: checkout("stop"), stdin: stop, env: stopEnv },
    {
      label: "installed copy: stop parent",
      cmd: launcher,
      args: ["hook", "stop"],
      stdin: stop,
      env: stopEnv,
    },
  ]);

  // Prompts of one session against a hung server, one after another: each prompt's wall time.
  const hung = startHungServer();
  try {
    for (let i = 0; i < HUNG_PROMPTS; i++) {
      const stdin = JSON.stringify({
        session_id: "session_hung",
        cwd: home,
        prompt: [{ type: "text", text: `how should I name hung test ${i}?` }],
      });
      hungMs.push(
        await timed(launcher, ["hook", "user-prompt-submit"], stdin, {
          ...baseEnv,
          OPENVIKING_URL: hung.url,
        }),
      );
    }
  } finally {
    await hung.close();
  }
  console.error(`hung server, ${HUNG_PROMPTS} prompts: ${hungMs.map((ms) => ms.toFixed(0)).join(", ")} ms`);
  // The first prompt of a session, right after its SessionStart (as `kimi -p` fires them: the session start's
  // detached worker runs beside the prompt), in the empty home and in one with a long history (10,000 past
  // sessions, 100,000 ledger lines), interleaved with a bare `deno run`: a prompt's cost must not grow with it.
  const bigHome = await Deno.makeTempDir({ prefix: "ovk-bench-big-" });
  bigHistory = largeHome(bigHome, quick ? 1_000 : 10_000, quick ? 10_000 : 100_000);
  [results.bareAgain, results.startPrompt, results.startPromptBig] = await measureStartThenPrompt(
    ["run", ...flags, empty],
    launcher,
    [baseEnv, { ...baseEnv, HOME: bigHome, KIMI_CODE_HOME: `${bigHome}/.kimi-code` }],
  );
  await Deno.remove(bigHome, { recursive: true }).catch(() => {});

  // Capture of one new turn on journals of growing size, the cursor already at the end of the old part.
  const sizes = quick ? [1, 10] : [1, 10, 100];
  for (const mb of sizes) {
    const sid = `session_capture_${mb}mb`;
    const { text, turns } = journalOfSize(mb * 1024 * 1024);
    const path = await placeJournal(home, sid, text);
    // The capture's own cost, as before the policy's default changed (a commit each run, no idle watch).
    const workerEnv = {
      ...baseEnv,
      OPENVIKING_KIMI_HOOK_WORKER: "1",
      OPENVIKING_CAPTURE_WAIT_MS: "0",
      OPENVIKING_COMMIT_POLICY: "every-turn",
    };
    const payload = JSON.stringify({ session_id: sid, cwd: home });
    await timed(deno, [...cli, "hook", "stop"], payload, workerEnv); // first capture takes the whole journal
    let next = turns;
    const samples: Sample[] = [];
    const runs = Math.min(RUNS, 20);
    for (let i = 0; i < runs + 1; i++) {
      const t = new JournalBuilder({ continueAt: next });
      t.prompt(`new question ${next} about the parser`).stepBegin().text(`new answer ${next}: done.`).stepEnd(
        "end_turn",
      ).ended();
      await Deno.writeTextFile(path, t.toString(), { append: true });
      next++;
      const ms = await timed(deno, [...cli, "hook", "stop"], payload, workerEnv);
      if (i > 0) samples.push({ ms, rssKb: 0 });
    }
    samples[0].rssKb = await peakRss(deno, [...cli, "hook", "stop"], payload, workerEnv);
    const s = stats(samples);
    results[`capture${mb}`] = s;
    const size = (await Deno.stat(path)).size;
    console.error(
      `capture of one new turn, ${(size / 1048576).toFixed(0)} MB journal: p50 ${s.p50.toFixed(1)} ms, p95 ${
        s.p95.toFixed(1)
      } ms, peak RSS ${(s.rssKb / 1024).toFixed(1)} MB`,
    );
  }
  const stored = fake.messages("kc-session_capture_1mb").length;
  if (stored < 2) throw new Error("capture benchmark stored nothing: the measurement would be meaningless");
} finally {
  await fake.close();
}

const mcpSse = await benchMcpProxy({ calls: quick ? 60 : 300, sse: true });
const mcpJson = await benchMcpProxy({ calls: quick ? 60 : 300, sse: false });
console.error(
  `mcp proxy overhead: SSE p50 ${mcpSse.overheadP50Ms.toFixed(2)} ms, JSON p50 ${
    mcpJson.overheadP50Ms.toFixed(2)
  } ms`,
);

const ratio = (a: number, b: number) => (a / b).toFixed(2);
const r = results;
const cap100 = r.capture100 ?? r.capture10;
/** A target row: what, the ratio measured, its goal and whether it was met (no goal: a comparison only). */
const row = (what: string, measured: number, limit?: number): [string, string, string, string] => [
  what,
  measured.toFixed(2),
  limit === undefined ? "—" : `≤ ${limit}`,
  limit === undefined ? "" : measured <= limit ? "met" : "missed",
];
/** Time each prompt against the hung server added to a later prompt's p50 against the fake, and their mean. */
const hungAdded = hungMs.map((ms) => ms - r.copyPrompt.p50);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const rows: [string, string, string, string][] = [
  row("prompt hook (later prompt), installed copy ÷ bare deno, p50", r.copyPrompt.p50 / r.bare.p50, 2.5),
  row("prompt hook (later prompt), checkout ÷ bare deno, p50", r.prompt.p50 / r.bare.p50),
  row(
    "prompt hook, 64 KB pasted log ÷ short prompt, installed copy, p50",
    r.copyPasted.p50 / r.copyPrompt.p50,
  ),
  row(
    "first prompt after session start, long history ÷ empty home, p50",
    r.startPromptBig.p50 / r.startPrompt.p50,
    1.1,
  ),
  row("first prompt after session start, empty home ÷ bare deno, p50", r.startPrompt.p50 / r.bareAgain.p50),
  row(
    "first prompt after session start, long history ÷ bare deno, p50",
    r.startPromptBig.p50 / r.bareAgain.p50,
  ),
  row("Stop parent, installed copy ÷ bare deno, p50", r.copyStop.p50 / r.bare.p50, 1.3),
  row("Stop parent, checkout ÷ bare deno, p50", r.stop.p50 / r.bare.p50),
  row(
    `hung server: added time per prompt over ${HUNG_PROMPTS} prompts, installed copy ÷ bare deno`,
    mean(hungAdded) / r.bare.p50,
  ),
  row(
    `hung server: added time per prompt after the first, installed copy ÷ bare deno`,
    mean(hungAdded.slice(1)) / r.bare.p50,
    1,
  ),
  [
    `${r.capture100 ? "100" : "10"} MB capture ÷ 1 MB capture, p50`,
    ratio(cap100.p50, r.capture1.p50),
    "≤ 1.2",
    cap100.p50 / r.capture1.p50 <= 1.2 ? "met" : "missed",
  ],
  [
    "MCP proxy overhead per call, p50 (SSE)",
    `${mcpSse.overheadP50Ms.toFixed(2)} ms`,
    "≤ 1 ms",
    mcpSse.overheadP50Ms <= 1 ? "met" : "missed",
  ],
];
const fmt = (s: Stats) =>
  `${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} | ${s.rssKb ? (s.rssKb / 1024).toFixed(1) : "n/a"}`;
const md = `# Benchmarks

Written by \`deno task bench\` on ${new Date().toISOString().slice(0, 10)}. Machine: ${machine()}.
Every process is started like production against the fake OpenViking on 127.0.0.1: the installed program
copy through its launcher (what \`install\` registers: ${
  (copyBytes / 1024).toFixed(0)
} KB of bundles), the checkout as \`deno run\` with the \`cli\` task's flags; ${RUNS} runs each, interleaved,
after 3 warm-up rounds; peak RSS from one extra run under GNU time. A compiled binary could not be measured
here (\`deno compile\` needs dl.deno.land).

| what | p50 ms | p95 ms | peak RSS MB |
| --- | ---: | ---: | ---: |
| bare \`deno run\` of an empty file (same flags) | ${fmt(r.bare)} |
| installed copy: user-prompt-submit, later prompt (recall, 1 request) | ${fmt(r.copyPrompt)} |
| checkout: user-prompt-submit, later prompt | ${fmt(r.prompt)} |
| installed copy: user-prompt-submit, later prompt with a 64 KB pasted log (CRLF, credentials) | ${
  fmt(r.copyPasted)
} |
| installed copy: user-prompt-submit, first prompt of a session (recall, 1 request) | ${
  fmt(r.copyPromptFirst)
} |
| checkout: user-prompt-submit, first prompt of a session | ${fmt(r.promptFirst)} |
| installed copy: stop, until the parent returns (worker detached) | ${fmt(r.copyStop)} |
| checkout: stop, until the parent returns | ${fmt(r.stop)} |
| bare \`deno run\` again, interleaved with the two rows below | ${fmt(r.bareAgain)} |
| installed copy: user-prompt-submit right after session-start (its worker beside it), empty home | ${
  fmt(r.startPrompt)
} |
| installed copy: the same, in a home with ${bigHistory} | ${fmt(r.startPromptBig)} |
${
  (quick ? [1, 10] : [1, 10, 100]).map((mb) =>
    `| capture of one new turn, ${mb} MB journal (worker process) | ${fmt(r[`capture${mb}`])} |`
  ).join("\n")
}

Against a server that accepts connections and never answers: ${HUNG_PROMPTS} prompts of one session, one after
another, through the installed copy (added: its wall time less the later prompt's p50 above):

| prompt | wall ms | added ms | added ÷ bare p50 |
| ---: | ---: | ---: | ---: |
${
  hungMs.map((ms, i) =>
    `| ${i + 1} | ${ms.toFixed(0)} | ${hungAdded[i].toFixed(0)} | ${(hungAdded[i] / r.bare.p50).toFixed(2)} |`
  ).join("\n")
}

MCP proxy (${mcpSse.calls} warm tools/call each, calls alternating direct/proxied):

| reply mode | proxied p50 / p95 ms | direct p50 / p95 ms | added p50 / p95 ms | start-up to initialize ms |
| --- | --- | --- | --- | ---: |
| SSE (OpenViking's) | ${mcpSse.p50Ms.toFixed(2)} / ${mcpSse.p95Ms.toFixed(2)} | ${
  mcpSse.directP50Ms.toFixed(2)
} / ${mcpSse.directP95Ms.toFixed(2)} | ${mcpSse.overheadP50Ms.toFixed(2)} / ${
  mcpSse.overheadP95Ms.toFixed(2)
} | ${mcpSse.startupMs.toFixed(0)} |
| JSON | ${mcpJson.p50Ms.toFixed(2)} / ${mcpJson.p95Ms.toFixed(2)} | ${mcpJson.directP50Ms.toFixed(2)} / ${
  mcpJson.directP95Ms.toFixed(2)
} | ${mcpJson.overheadP50Ms.toFixed(2)} / ${mcpJson.overheadP95Ms.toFixed(2)} | ${
  mcpJson.startupMs.toFixed(0)
} |

## Targets (ratios within this run)

| target | measured | goal | |
| --- | ---: | ---: | --- |
${rows.map((row) => `| ${row.join(" | ")} |`).join("\n")}
`;
await Deno.mkdir(`${ROOT}/docs`, { recursive: true });
const existing = await Deno.readTextFile(`${ROOT}/docs/BENCHMARKS.md`).catch(() => "");
const analysis = existing.includes("\n## Analysis") ? existing.slice(existing.indexOf("\n## Analysis")) : "";
// What commits cost, against the real OpenViking (minutes): a quick run keeps the section it finds.
const commits = quick ? sectionOf(existing) : await commitSection();
await Deno.writeTextFile(`${ROOT}/docs/BENCHMARKS.md`, withSection(md + analysis, commits));
// Laid out as `deno fmt --check` (part of `deno task test`) wants it.
await new Deno.Command(Deno.execPath(), {
  args: ["fmt", "docs/BENCHMARKS.md"],
  cwd: ROOT,
  stdout: "null",
  stderr: "null",
})
  .output();
console.log(md);
await Deno.remove(home, { recursive: true }).catch(() => {});
