/**
 * Records real Kimi Code CLI sessions (wire.jsonl journals, subagent journals, session_index.jsonl, every
 * hook's stdin, the journal as it was at each Stop hook, what the model received) against the scripted model
 * server, and writes them under tests/fixtures/journals/<variant>/<scenario>/ with temp paths replaced by
 * stable placeholders.
 *
 *   deno run -A scripts/record-journals.ts [--variant 2.1.0|0.41.0|0.41.0-legacy]… [--scenario NAME]…
 *                                          [--out DIR] [--keep] [--list]
 *
 * Variants run one after another (the machine is small); everything talks to 127.0.0.1 only (npm is used
 * once per version to install the CLI into the cache, see tests/support/kimi.ts).
 */

import { join, relative } from "node:path";
import { createHash } from "node:crypto";
import { type ChatMessage, ModelServer } from "../tests/support/model-server.ts";
import {
  installKimi,
  KimiEnv,
  type KimiInstall,
  type KimiTui,
  parseJsonl,
  type PrintOptions,
  type PrintResult,
  shQuote,
  waitUntil,
} from "../tests/support/kimi.ts";

/** Every hook event Kimi Code's v2 engine knows (0.41.0 and 2.1.0 alike). */
export const HOOK_EVENTS = (
  "SessionStart SessionEnd SessionHeartbeat UserPromptSubmit UserPromptQueued TurnStarted PreToolUse " +
  "PostToolUse PostToolUseFailure PermissionRequest PermissionResult Stop StopFailure Interrupt " +
  "SubagentStart SubagentStop TaskStarted PreCompact PostCompact Notification"
).split(" ");

/** The hook events the legacy engine (`KIMI_CODE_LEGACY_FLAG=1`) accepts. */
export const LEGACY_HOOK_EVENTS = HOOK_EVENTS.filter((e) =>
  !["TurnStarted", "UserPromptQueued", "SessionHeartbeat", "TaskStarted"].includes(e)
);

/** A `[[hooks]]` entry of config.toml (exactly the four keys Kimi accepts). */
interface HookDef {
  event: string;
  command: string;
  matcher?: string;
  timeout?: number;
}

/** Appends `[[hooks]]` entries to the env's config.toml. */
async function addHooks(env: KimiEnv, hooks: HookDef[]): Promise<void> {
  const blocks = hooks.map((h) => {
    const lines = ["", "[[hooks]]", `event = ${JSON.stringify(h.event)}`];
    if (h.matcher !== undefined) lines.push(`matcher = ${JSON.stringify(h.matcher)}`);
    lines.push(`command = ${JSON.stringify(h.command)}`);
    if (h.timeout !== undefined) lines.push(`timeout = ${Math.trunc(h.timeout)}`);
    return lines.join("\n");
  });
  await Deno.writeTextFile(env.configPath, blocks.join("\n") + "\n", { append: true });
}

/**
 * Installs a hook on every event (the legacy engine's, or all) that appends `{"event":…,"stdin":<payload>}`
 * to `outFile`; each `Stop` hook first copies every agent journal of the session as it is at that instant to
 * `<snapDir>/wire-at-stop-<n>.jsonl` (main) and `<snapDir>/<agent>.wire-at-stop-<n>.jsonl` (subagents), and
 * the record gets `"snapshot": n`.
 */
async function addRecordingHooks(env: KimiEnv, legacy: boolean, outFile: string, snapDir: string) {
  const script = join(env.root, "hook-recorder.mjs");
  await Deno.writeTextFile(script, HOOK_RECORDER_JS);
  await addHooks(
    env,
    (legacy ? LEGACY_HOOK_EVENTS : HOOK_EVENTS).map((event) => ({
      event,
      command: [env.install.node, script, event, outFile, snapDir].map(shQuote).join(" "),
      timeout: 30,
    })),
  );
}

/** All agent journals of a session: `{main: path, "agent-0": path, …}`. */
async function journals(env: KimiEnv, sessionId: string): Promise<Record<string, string>> {
  const dir = join(env.sessionDir(sessionId), "agents");
  const out: Record<string, string> = {};
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name, "wire.jsonl");
    if (e.isDirectory && await Deno.stat(p).then(() => true, () => false)) out[e.name] = p;
  }
  return out;
}

/** A CLI version + engine to record. */
interface Variant {
  name: string;
  version: string;
  legacy: boolean;
}

const VARIANTS: Variant[] = [
  { name: "2.1.0", version: "2.1.0", legacy: false },
  { name: "0.41.0", version: "0.41.0", legacy: false },
  { name: "0.41.0-legacy", version: "0.41.0", legacy: true },
];

/** One step of a scenario, as written to run.json. */
type Step =
  | {
    kind: "print";
    command: string;
    exitCode: number;
    signal: string | null;
    stdout: string;
    stderr: string;
    note?: string;
  }
  | { kind: "tui"; action: string; note?: string }
  | { kind: "config"; action: string };

interface Ctx {
  variant: Variant;
  env: KimiEnv;
  server: ModelServer;
  steps: Step[];
  payloadsFile: string;
  snapDir: string;
}

/** The block the hook-context scenario's UserPromptSubmit hook prints. */
const OV_CONTEXT =
  "<openviking-context>\\n[memory] The user prefers tabs over spaces.\\n</openviking-context>";

interface Scenario {
  name: string;
  description: string;
  run: (ctx: Ctx) => Promise<void>;
  /** Skip for some variants (with the reason). */
  skip?: (v: Variant) => string | undefined;
}

function cmdline(v: Variant, prompt: string, opts: PrintOptions = {}): string {
  const parts = [v.legacy ? "KIMI_CODE_LEGACY_FLAG=1 kimi" : "kimi"];
  if (opts.sessionId) parts.push("-S", opts.sessionId);
  parts.push("-p", shQuote(prompt));
  return parts.join(" ");
}

async function print(ctx: Ctx, prompt: string, opts: PrintOptions = {}, note?: string): Promise<PrintResult> {
  const r = await ctx.env.print(prompt, { timeoutMs: 90_000, ...opts });
  ctx.steps.push(printStep(ctx, prompt, opts, r, note));
  if (r.timedOut) throw new Error(`kimi -p timed out: ${r.stderr}`);
  return r;
}

function printStep(ctx: Ctx, prompt: string, opts: PrintOptions, r: PrintResult, note?: string): Step {
  return {
    kind: "print",
    command: cmdline(ctx.variant, prompt, opts),
    exitCode: r.code,
    signal: r.signal,
    stdout: r.stdout,
    stderr: r.stderr,
    ...(note ? { note } : {}),
  };
}

function expectOk(r: PrintResult, what: string): string {
  if (r.code !== 0 || !r.sessionId) {
    throw new Error(`${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
  return r.sessionId;
}

/** Counts hook records of an event so far. */
async function hookCount(ctx: Ctx, event: string): Promise<number> {
  try {
    return parseJsonl<{ event: string }>(await Deno.readTextFile(ctx.payloadsFile)).filter((r) =>
      r.event === event
    ).length;
  } catch {
    return 0;
  }
}

/** Waits for the n-th record of a hook event. */
async function waitHook(ctx: Ctx, event: string, n: number, timeoutMs = 30_000): Promise<void> {
  await waitUntil(async () => (await hookCount(ctx, event)) >= n, timeoutMs, `${n}× ${event} hook`);
}

async function tuiSubmit(ctx: Ctx, tui: KimiTui, text: string, note?: string): Promise<void> {
  ctx.steps.push({ kind: "tui", action: `type ${JSON.stringify(text)} + Enter`, ...(note ? { note } : {}) });
  await tui.submit(text);
}

/**
 * In the TUI: submit a prompt and wait for the turn to finish (reply on screen + Stop hook fired). A tool
 * approval dialog ("Approve once") is answered with "1".
 */
async function tuiTurn(ctx: Ctx, tui: KimiTui, text: string, expect: RegExp): Promise<void> {
  const stops = await hookCount(ctx, "Stop");
  await tuiSubmit(ctx, tui, text);
  const approval = /Approve once/;
  const screen = await tui.waitFor((s) => expect.test(s) || approval.test(s), 30_000);
  if (!expect.test(screen) && approval.test(screen)) {
    ctx.steps.push({ kind: "tui", action: `press "1"`, note: "the tool approval dialog: 1. Approve once" });
    await tui.keys("1");
    await tui.waitFor(expect, 30_000);
  }
  await waitHook(ctx, "Stop", stops + 1);
  await settle(800);
}

/** In the TUI: `/undo <count>`, then wait until the journal has one more `context.undo` record. */
async function tuiUndo(ctx: Ctx, tui: KimiTui, count: number): Promise<void> {
  const undos = async () => {
    const index = ctx.env.sessionIndex();
    const id = index.at(-1)?.sessionId;
    if (!id) return 0;
    const text = await Deno.readTextFile(ctx.env.journalPath(id)).catch(() => "");
    return text.split("\n").filter((l) => l.includes('"type":"context.undo"')).length;
  };
  const before = await undos();
  await tuiSubmit(ctx, tui, `/undo ${count}`, "wait for one more context.undo record in the journal");
  await waitUntil(async () => (await undos()) > before, 30_000, `/undo ${count} in the journal`);
  await settle(800);
}

async function tuiExit(ctx: Ctx, tui: KimiTui): Promise<void> {
  ctx.steps.push({ kind: "tui", action: `type "/exit" + Enter` });
  const code = await tui.exit(30_000);
  ctx.steps.push({ kind: "tui", action: `kimi exited with code ${code}` });
}

function settle(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const SCENARIOS: Scenario[] = [
  {
    name: "plain",
    description: "one print-mode turn, plain text answer",
    run: async (ctx) => {
      await expectOk(await print(ctx, "hello, remember that I prefer tabs over spaces"), "plain");
    },
  },
  {
    name: "tool",
    description: "one print-mode turn: the model calls Bash, then answers (with reasoning content: THINK)",
    run: async (ctx) => {
      await expectOk(await print(ctx, "please RUN_TOOL and THINK about it"), "tool");
    },
  },
  {
    name: "subagent",
    description:
      "one print-mode turn: the model calls the Agent tool, the subagent answers, then the model answers",
    run: async (ctx) => {
      await expectOk(await print(ctx, "please RUN_AGENT for me"), "subagent");
    },
  },
  {
    name: "failed",
    description: "one print-mode turn that fails: the provider answers HTTP 400",
    run: async (ctx) => {
      const r = await print(ctx, "this will FAIL at the provider");
      if (r.code === 0) throw new Error("failed: expected a non-zero exit");
    },
  },
  {
    name: "interrupted-print",
    description: "print mode, SIGINT while the model is streaming slowly",
    run: async (ctx) => {
      const prompt = "tell me a long SLOW story";
      const run = ctx.env.startPrint(prompt, { timeoutMs: 90_000 });
      await ctx.server.waitForChat((r) => r.turnUserTexts.some((t) => t.includes("SLOW")), 30_000);
      await settle(1500);
      run.kill("SIGINT");
      const r = await run.result;
      ctx.steps.push(printStep(ctx, prompt, {}, r, "SIGINT sent ~1.5 s after the model request arrived"));
      await settle(1000);
    },
  },
  {
    name: "closed-stdout",
    description: "print mode piped into `head -1`: Kimi writes the answer's next line into a closed pipe",
    run: async (ctx) => {
      const prompt = "The deploy window is Thursday 14:00 UTC.";
      ctx.server.enqueue({ kind: "text", text: "Noted: Thursday 14:00 UTC.\n\n- second line\n- third line" });
      const kimi = [ctx.env.install.node, ctx.env.install.main, "-p", prompt].map(shQuote).join(" ");
      const out = await new Deno.Command("bash", {
        args: ["-c", `${kimi} | head -1; exit "\${PIPESTATUS[0]}"`],
        cwd: ctx.env.workDir,
        env: ctx.env.env(),
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const dec = new TextDecoder();
      ctx.steps.push({
        kind: "print",
        command: `${cmdline(ctx.variant, prompt)} | head -1`,
        exitCode: out.code,
        signal: out.signal,
        stdout: dec.decode(out.stdout),
        stderr: dec.decode(out.stderr),
        note: "exitCode is Kimi's (PIPESTATUS[0]); stdout is what head printed",
      });
      if (out.code === 0 && !ctx.variant.legacy) throw new Error("closed-stdout: Kimi did not fail on EPIPE");
      await settle(1000);
    },
  },
  {
    name: "interrupted-tui",
    description: "TUI: a slow streamed answer interrupted with Esc, then one more turn, then /exit",
    run: async (ctx) => {
      const tui = await ctx.env.tui();
      ctx.steps.push({ kind: "tui", action: "start kimi (TUI), answer the trust dialog with Enter" });
      await tuiSubmit(ctx, tui, "tell me a long SLOW story");
      await tui.waitFor("slow token 10", 30_000);
      ctx.steps.push({ kind: "tui", action: "press Esc", note: "once 'slow token 10' is on screen" });
      await tui.interrupt();
      await tui.waitFor(/Interrupted/i, 15_000);
      await settle(1000);
      // The legacy engine merges the interrupted prompt and this one into one user message, so the
      // default script would see "SLOW" again: answer this turn explicitly.
      ctx.server.enqueue({ kind: "text", text: "ACK: hi after the interruption" });
      await tuiTurn(ctx, tui, "ok, just say hi then", /ACK: hi after the interruption/);
      await tuiExit(ctx, tui);
    },
  },
  {
    name: "compaction",
    description: "TUI: two turns (text, Bash tool), /compact, one more turn, /exit",
    run: async (ctx) => {
      const tui = await ctx.env.tui();
      ctx.steps.push({ kind: "tui", action: "start kimi (TUI), answer the trust dialog with Enter" });
      await tuiTurn(ctx, tui, "first: remember that I prefer tabs", /ACK \d+: first/);
      await tuiTurn(ctx, tui, "second: RUN_TOOL please", /FINAL after tool/);
      ctx.steps.push({
        kind: "tui",
        action: `type "/compact" + Enter`,
        note: "wait for 'Compaction complete'",
      });
      await tui.compact(60_000);
      await settle(1000);
      await tuiTurn(ctx, tui, "third: after the compaction", /ACK \d+: third/);
      await tuiExit(ctx, tui);
    },
  },
  {
    name: "undo",
    description:
      "TUI: two turns, /undo 1, two more turns, /undo 2, one more turn, /exit (three turns retracted)",
    run: async (ctx) => {
      const tui = await ctx.env.tui();
      ctx.steps.push({ kind: "tui", action: "start kimi (TUI), answer the trust dialog with Enter" });
      await tuiTurn(ctx, tui, "first: keep this one", /ACK \d+: first/);
      await tuiTurn(ctx, tui, "second: take this back", /ACK \d+: second/);
      await tuiUndo(ctx, tui, 1);
      await tuiTurn(ctx, tui, "third: after the undo", /ACK \d+: third/);
      await tuiTurn(ctx, tui, "fourth: RUN_TOOL then take it back", /FINAL after tool/);
      await tuiUndo(ctx, tui, 2);
      await tuiTurn(ctx, tui, "fifth: the last word", /ACK \d+: fifth/);
      await tuiExit(ctx, tui);
    },
  },
  {
    name: "resumed",
    description: "three print-mode runs on one session (-S): text, Bash tool, Agent tool",
    run: async (ctx) => {
      const id = await expectOk(
        await print(ctx, "first: remember that I prefer tabs over spaces"),
        "resumed 1",
      );
      await expectOk(await print(ctx, "second: RUN_TOOL please", { sessionId: id }), "resumed 2");
      await expectOk(await print(ctx, "third: RUN_AGENT now", { sessionId: id }), "resumed 3");
    },
  },
  {
    name: "hook-context",
    description:
      "a UserPromptSubmit hook prints an <openviking-context> block; two print-mode turns (-p, -S -p)",
    run: async (ctx) => {
      await addHooks(ctx.env, [{
        event: "UserPromptSubmit",
        command: `cat >/dev/null; printf '%b\\n' '${OV_CONTEXT}'`,
        timeout: 10,
      }]);
      ctx.steps.push({
        kind: "config",
        action: "config.toml: extra [[hooks]] UserPromptSubmit command = " +
          JSON.stringify(`cat >/dev/null; printf '%b\\n' '${OV_CONTEXT}'`),
      });
      const id = await expectOk(await print(ctx, "what do I prefer, tabs or spaces?"), "hook-context 1");
      await expectOk(await print(ctx, "and RUN_TOOL to check", { sessionId: id }), "hook-context 2");
    },
  },
];

// ---------------------------------------------------------------------------------------------------------
// Sanitizing: stable paths, oversized records elided.

const MAX_RECORD = 20_000;
const LONG_STRING = 2_000;

interface Placeholders {
  pairs: Array<[string, string]>;
}

function workDirKey(path: string): string {
  return createHash("sha256").update(path).digest("hex").slice(0, 12);
}

function placeholders(env: KimiEnv, install: KimiInstall): Placeholders {
  const pairs: Array<[string, string]> = [
    [env.workDir, "/home/user/project"],
    [env.kimiHome, "/home/user/.kimi-code"],
    [env.home, "/home/user"],
    [install.dir, "/opt/kimi-code"],
    [env.root, "/tmp/kimi-test"],
  ];
  // The workspace key embeds a hash of the real work dir: recompute it for the placeholder path.
  const realKey = workDirKey(env.workDir);
  pairs.push([realKey, workDirKey("/home/user/project")]);
  return { pairs };
}

function replacePaths(text: string, ph: Placeholders): string {
  let out = text;
  for (const [from, to] of ph.pairs) out = out.replaceAll(from, to);
  return out;
}

/** Replaces long strings inside an oversized record; returns the (possibly) elided record. */
function elide(value: unknown, key = ""): unknown {
  if (typeof value === "string") {
    if (value.length > LONG_STRING) return `<elided by record-journals: ${value.length} chars (${key})>`;
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => elide(v, key));
  if (value && typeof value === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) o[k] = elide(v, k);
    return o;
  }
  return value;
}

function shrinkTools(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shrinkTools);
  if (value && typeof value === "object") {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (
        (k === "description" || k === "parameters" || k === "inputSchema") && JSON.stringify(v).length > 200
      ) {
        o[k] = `<elided by record-journals: ${JSON.stringify(v).length} chars (${k})>`;
      } else o[k] = shrinkTools(v);
    }
    return o;
  }
  return value;
}

/** Sanitizes a JSONL text: paths replaced, lines over 20 KB elided (long strings, then tool schemas). */
function sanitizeJsonl(text: string, ph: Placeholders, stats: { elided: number }): string {
  const lines = replacePaths(text, ph).split("\n");
  return lines.map((line) => {
    if (line.length <= MAX_RECORD) return line;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      return line;
    }
    stats.elided++;
    let out = JSON.stringify(elide(v));
    if (out.length > MAX_RECORD) out = JSON.stringify(shrinkTools(elide(v)));
    return out;
  }).join("\n");
}

/** What the model received: one line per chat request; system prompt and tool schemas elided. */
function modelRequests(server: ModelServer): string {
  return server.chatRequests().map((r) => {
    const messages = r.body.messages.map((m: ChatMessage) =>
      m.role === "system" && typeof m.content === "string" && m.content.length > LONG_STRING
        ? { ...m, content: `<elided by record-journals: system prompt, ${m.content.length} chars>` }
        : m
    );
    const { tools: _tools, messages: _m, ...rest } = r.body;
    return JSON.stringify({ ...rest, messages, toolNames: r.toolNames });
  }).join("\n") + (server.chatRequests().length ? "\n" : "");
}

// ---------------------------------------------------------------------------------------------------------

async function recordScenario(
  variant: Variant,
  install: KimiInstall,
  sc: Scenario,
  outRoot: string,
  keep: boolean,
) {
  const outDir = join(outRoot, variant.name, sc.name);
  await using server = await ModelServer.start();
  const root = await Deno.makeTempDir({ prefix: "ovk-rec-" });
  const env = await KimiEnv.create(install, {
    baseUrl: server.baseUrl,
    root,
    env: variant.legacy ? { KIMI_CODE_LEGACY_FLAG: "1" } : {},
  });
  const payloadsFile = join(env.root, "hook-payloads.jsonl");
  const snapDir = join(env.root, "stop-snapshots");
  const ctx: Ctx = { variant, env, server, steps: [], payloadsFile, snapDir };
  try {
    await addRecordingHooks(env, variant.legacy, payloadsFile, snapDir);
    await sc.run(ctx);
    // Fire-and-forget hooks (PostToolUse, SubagentStop, …) may still be writing.
    await settle(1500);
    await env.dispose();

    const index = env.sessionIndex();
    const ids = [...new Set(index.filter((e) => !e.deleted).map((e) => e.sessionId))];
    if (ids.length !== 1) throw new Error(`expected one session, found ${ids.length}`);
    const ph = placeholders(env, install);
    const stats = { elided: 0 };
    await Deno.remove(outDir, { recursive: true }).catch(() => {});
    await Deno.mkdir(outDir, { recursive: true });
    const files: string[] = [];
    const write = async (name: string, text: string) => {
      await Deno.writeTextFile(join(outDir, name), text);
      files.push(name);
    };
    const jsonl = async (name: string, src: string) => {
      await write(name, sanitizeJsonl(await Deno.readTextFile(src), ph, stats));
    };
    for (const [agent, path] of Object.entries(await journals(env, ids[0])).sort()) {
      await jsonl(agent === "main" ? "wire.jsonl" : `${agent}.wire.jsonl`, path);
    }
    await jsonl("session_index.jsonl", join(env.kimiHome, "session_index.jsonl"));
    const sessionDir = env.sessionDir(ids[0]);
    try {
      await write("state.json", replacePaths(await Deno.readTextFile(join(sessionDir, "state.json")), ph));
    } catch { /* legacy sessions may have none */ }
    try {
      await jsonl("hook-payloads.jsonl", payloadsFile);
    } catch {
      await write("hook-payloads.jsonl", "");
    }
    const snapshots: Array<Record<string, unknown>> = [];
    try {
      const snaps = [...Deno.readDirSync(snapDir)].filter((e) => e.isFile).map((e) => e.name).sort(byStop);
      for (const name of snaps) {
        await jsonl(name, join(snapDir, name));
        const final = name.startsWith("wire-")
          ? "wire.jsonl"
          : `${name.split(".wire-at-stop-")[0]}.wire.jsonl`;
        const snapText = await Deno.readTextFile(join(outDir, name));
        const finalText = await Deno.readTextFile(join(outDir, final)).catch(() => "");
        snapshots.push({
          file: name,
          stop: Number(name.match(/at-stop-(\d+)/)?.[1]),
          lines: snapText.split("\n").filter((l) => l !== "").length,
          bytes: new TextEncoder().encode(snapText).length,
          prefixOf: final,
          isBytePrefix: finalText.startsWith(snapText),
        });
      }
    } catch { /* no Stop fired */ }
    await write("model-requests.jsonl", replacePaths(modelRequests(server), ph));
    const run = {
      kimi: variant.version,
      engine: variant.legacy ? "legacy (KIMI_CODE_LEGACY_FLAG=1)" : "v2",
      scenario: sc.name,
      description: sc.description,
      steps: JSON.parse(replacePaths(JSON.stringify(ctx.steps), ph)),
      elidedRecords: stats.elided,
      stopSnapshots: snapshots,
      files: [...files, "run.json"].sort(),
    };
    await write("run.json", JSON.stringify(run, null, 2) + "\n");
    console.log(`  ${variant.name}/${sc.name}: ${files.length + 1} files, ${stats.elided} records elided`);
  } finally {
    await env.dispose();
    if (keep) console.log(`  (kept ${root})`);
    else await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

function byStop(a: string, b: string): number {
  const n = (s: string) => Number(s.match(/at-stop-(\d+)/)?.[1] ?? 0);
  return n(a) - n(b) || a.localeCompare(b);
}

function argValues(name: string): string[] {
  const out: string[] = [];
  Deno.args.forEach((a, i) => {
    if (a === name && Deno.args[i + 1]) out.push(Deno.args[i + 1]);
  });
  return out;
}

if (import.meta.main) {
  if (Deno.args.includes("--list")) {
    for (const s of SCENARIOS) console.log(`${s.name.padEnd(20)} ${s.description}`);
    Deno.exit(0);
  }
  const wantVariants = argValues("--variant");
  const wantScenarios = argValues("--scenario");
  const outRoot = argValues("--out")[0] ??
    join(new URL("../tests/fixtures/journals", import.meta.url).pathname);
  const keep = Deno.args.includes("--keep");
  const variants = VARIANTS.filter((v) => wantVariants.length === 0 || wantVariants.includes(v.name));
  const scenarios = SCENARIOS.filter((s) => wantScenarios.length === 0 || wantScenarios.includes(s.name));
  const failures: string[] = [];
  const t0 = Date.now();
  for (const v of variants) {
    const t = Date.now();
    const install = await installKimi(v.version);
    console.log(
      `${v.name}: kimi ${install.version} ready in ${Date.now() - t} ms (${
        relative(Deno.cwd(), install.dir)
      })`,
    );
    for (const sc of scenarios) {
      const reason = sc.skip?.(v);
      if (reason) {
        console.log(`  ${v.name}/${sc.name}: skipped (${reason})`);
        continue;
      }
      const ts = Date.now();
      try {
        await recordScenario(v, install, sc, outRoot, keep);
        console.log(`    (${Date.now() - ts} ms)`);
      } catch (e) {
        failures.push(`${v.name}/${sc.name}: ${(e as Error).message}`);
        console.error(`  ${v.name}/${sc.name}: FAILED ${(e as Error).stack}`);
      }
    }
  }
  console.log(`done in ${Math.round((Date.now() - t0) / 1000)} s`);
  if (failures.length) {
    console.error(`failures:\n${failures.join("\n")}`);
    Deno.exit(1);
  }
}

/**
 * The recording hook (run with the install's node): `hook-recorder.mjs <event> <outFile> [stopSnapshotDir]`.
 * Reads the hook JSON on stdin; on Stop with a snapshot dir, copies the session's agent journals first.
 */
const HOOK_RECORDER_JS = `import fs from "node:fs";
import path from "node:path";
const [event, outFile, snapDir] = process.argv.slice(2);
let raw = "";
for await (const chunk of process.stdin) raw += chunk;
let stdin;
try { stdin = JSON.parse(raw); } catch { stdin = raw; }
const record = { event, stdin };
if (snapDir && event === "Stop" && stdin && typeof stdin === "object") {
  try {
    const home = process.env.KIMI_CODE_HOME;
    const lines = fs.readFileSync(path.join(home, "session_index.jsonl"), "utf8").split("\\n").filter(Boolean);
    let dir;
    for (const l of lines) { try { const e = JSON.parse(l); if (e.sessionId === stdin.session_id && !e.deleted) dir = e.sessionDir; } catch {} }
    fs.mkdirSync(snapDir, { recursive: true });
    let n = 1;
    while (true) {
      try { fs.mkdirSync(path.join(snapDir, ".stop-" + n)); break; } catch { n++; }
    }
    const agents = path.join(dir, "agents");
    for (const a of fs.readdirSync(agents)) {
      const src = path.join(agents, a, "wire.jsonl");
      if (!fs.existsSync(src)) continue;
      const name = (a === "main" ? "" : a + ".") + "wire-at-stop-" + n + ".jsonl";
      fs.writeFileSync(path.join(snapDir, name), fs.readFileSync(src));
    }
    record.snapshot = n;
  } catch (e) { record.snapshotError = String(e); }
}
fs.appendFileSync(outFile, JSON.stringify(record) + "\\n");
`;
