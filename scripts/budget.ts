/**
 * `deno task bench:budget`: what memory costs the user's screen and the model's context. Starts the real
 * OpenViking server (tests/support/real-openviking.ts), writes a store of 80 memories and a profile into it
 * (bench/budget_session.ts), then drives a scripted 20-prompt session through the hooks of one or more
 * checkouts — SessionStart, then UserPromptSubmit per prompt, as real processes with the production flags —
 * in config mode and in plugin mode (installed by that checkout's own `install --mode plugin`), and reports
 * per prompt the characters printed, the estimated tokens, the terminal rows at 160 columns, and repeats (a
 * memory URI printed again after an earlier prompt of the same session printed it).
 *
 *   deno task bench:budget [--root LABEL=DIR]... [--write FILE]
 *
 * Without `--root` it measures this checkout (`after`). `--root before=/tmp/old` measures another checkout
 * (e.g. `git archive <commit> | tar -x -C /tmp/old`) against the same store and session; `--write` puts the
 * report into FILE (docs/BUDGET.md).
 */

import { denoEnv, runProcess } from "../tests/support/run.ts";
import { startRealOpenViking } from "../tests/support/real-openviking.ts";
import { terminalRows } from "../tests/support/rows.ts";
import { productionFlags } from "../lib/self.ts";
import { estimateTokens } from "../memory/digest.ts";
import { SEED_MEMORIES, SEED_PROFILE, SESSION_PROMPTS } from "../bench/budget_session.ts";

/** One measured prompt. */
interface PromptFigure {
  chars: number;
  tokens: number;
  rows: number;
  uris: string[];
  repeats: number;
  ms: number;
}

/** One checkout in one mode over the whole session. */
interface Run {
  label: string;
  mode: "config" | "plugin";
  prompts: PromptFigure[];
  /** Size of the plugin's system-prompt file after install (plugin mode), in characters; 0 when none. */
  systemPromptChars: number;
}

const args = Deno.args;
const roots: [string, string][] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--root") {
    const [label, dir] = args[++i].split("=");
    roots.push([label, dir]);
  }
}
if (!roots.length) roots.push(["after", new URL("../", import.meta.url).pathname.replace(/\/$/, "")]);
const writeTo = args.includes("--write") ? args[args.indexOf("--write") + 1] : undefined;

const URI = /viking:\/\/[^\s"'`<>)\]]+/g;

/** Memory URIs a printed text names (a directory's overview counts as one; the profile itself does not). */
function memoryUris(text: string): string[] {
  return [...new Set(text.match(URI) ?? [])].filter((u) => !u.endsWith("/profile.md"));
}

async function run(
  cmd: string[],
  env: Record<string, string>,
  stdin = "",
): Promise<{ stdout: string; ms: number; code: number }> {
  const t0 = performance.now();
  const out = await runProcess(Deno.execPath(), cmd, { env, clearEnv: true, stdin });
  return { stdout: out.stdout, ms: performance.now() - t0, code: out.code };
}

/** Writes the store through the server's content API and waits until recall finds it. */
async function seed(url: string): Promise<void> {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json() as { result?: Record<string, unknown> };
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.result ?? {};
  };
  const user = String((await call("GET", "/api/v1/system/status")).user ?? "default");
  const base = `viking://user/${user}/memories`;
  const write = (uri: string, content: string) =>
    call("POST", "/api/v1/content/write", { uri, content, mode: "create", wait: true });
  await write(`${base}/profile.md`, SEED_PROFILE);
  for (const m of SEED_MEMORIES) await write(`${base}/${m.path}`, m.text);
  for (let i = 0; i < 100; i++) {
    const r = await call("POST", "/api/v1/search/search", { query: SESSION_PROMPTS[2], mode: "context" });
    if (Array.isArray(r.entries) && r.entries.length > 0) return;
    await new Promise((res) => setTimeout(res, 300));
  }
  throw new Error("the store never became searchable");
}

/** Drives the session through the hooks of the checkout at `root` in `mode`. */
async function session(label: string, root: string, mode: Run["mode"], url: string): Promise<Run> {
  const home = await Deno.makeTempDir({ prefix: "ovk-budget-" });
  const project = `${home}/project`;
  await Deno.mkdir(project);
  const env: Record<string, string> = {
    ...Object.fromEntries(
      Object.entries(Deno.env.toObject()).filter(([k]) => k.startsWith("BUDGET_OV_"))
        .map(([k, v]) => [k.replace("BUDGET_OV_", "OPENVIKING_"), v]),
    ),
    HOME: home,
    KIMI_CODE_HOME: `${home}/.kimi-code`,
    OPENVIKING_URL: url,
    ...denoEnv(),
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  };
  const main = [
    "run",
    ...(await productionFlags(root)),
    "--config",
    `${root}/deno.json`,
    `${root}/main.ts`,
  ];
  let systemPromptChars = 0;
  if (mode === "plugin") {
    const inst = await run([...main, "install", "--mode", "plugin"], env);
    if (inst.code !== 0) throw new Error(`${label}: install --mode plugin failed:\n${inst.stdout}`);
    const pluginRoot = `${home}/.kimi-code/plugins/managed/openviking-memory`;
    env.KIMI_PLUGIN_ROOT = pluginRoot;
    const manifest = JSON.parse(await Deno.readTextFile(`${pluginRoot}/kimi.plugin.json`));
    if (typeof manifest.systemPromptPath === "string") {
      systemPromptChars = (await Deno.readTextFile(`${pluginRoot}/${manifest.systemPromptPath}`)).length;
    }
  }
  const sessionId = `session_${crypto.randomUUID()}`;
  await run(
    [...main, "hook", "session-start"],
    env,
    JSON.stringify({
      hook_event_name: "SessionStart",
      session_id: sessionId,
      cwd: project,
      source: "startup",
    }),
  );
  const prompts: PromptFigure[] = [];
  const seen = new Set<string>();
  for (const [i, text] of SESSION_PROMPTS.entries()) {
    const r = await run(
      [...main, "hook", "user-prompt-submit"],
      env,
      JSON.stringify({
        hook_event_name: "UserPromptSubmit",
        session_id: sessionId,
        cwd: project,
        prompt_id: `p${i}`,
        prompt: [{ type: "text", text }],
      }),
    );
    if (Deno.env.get("BUDGET_DUMP")) console.error(`--- ${label} ${mode} #${i + 1}: ${text}\n${r.stdout}`);
    const uris = memoryUris(r.stdout);
    prompts.push({
      chars: r.stdout.length,
      tokens: estimateTokens(r.stdout),
      rows: terminalRows(r.stdout),
      uris,
      repeats: uris.filter((u) => seen.has(u)).length,
      ms: r.ms,
    });
    for (const u of uris) seen.add(u);
  }
  await Deno.remove(home, { recursive: true }).catch(() => {});
  return { label, mode, prompts, systemPromptChars };
}

const p50 = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
};

/** One report row: the first prompt; p50 and max of the later ones that printed; the session's totals. */
function summary(r: Run): string {
  const [first, ...later] = r.prompts;
  const printed = later.filter((p) => p.chars > 0);
  const f = (pick: (p: PromptFigure) => number) =>
    `${pick(first)} / ${p50(printed.map(pick))} / ${Math.max(0, ...printed.map(pick))}`;
  const sum = (pick: (p: PromptFigure) => number) => r.prompts.reduce((n, p) => n + pick(p), 0);
  const sp = r.systemPromptChars
    ? `${r.systemPromptChars} (~${Math.ceil(r.systemPromptChars / 4)} tok)`
    : "—";
  return `| ${r.label} | ${r.mode} | ${f((p) => p.chars)} | ${f((p) => p.tokens)} | ${f((p) => p.rows)} | ${
    later.length - printed.length
  } | ${sum((p) => p.chars)} | ${sum((p) => p.uris.length)} | ${sum((p) => p.repeats)} | ${sp} |`;
}

/** The per-prompt figures of a run: characters (rows) for each of the 20 prompts. */
function detail(r: Run): string {
  return `- ${r.label}, ${r.mode}: ` +
    r.prompts.map((p) => `${p.chars}(${p.uris.length})${p.repeats ? "*" : ""}`).join(" ");
}

const server = await startRealOpenViking();
const runs: Run[] = [];
try {
  await seed(server.url);
  for (const [label, root] of roots) {
    for (const mode of ["config", "plugin"] as const) {
      console.error(`${label} ${mode}…`);
      runs.push(await session(label, root, mode, server.url));
    }
  }
} finally {
  await server.stop();
}

const report = [
  "# Recall budget",
  "",
  `Written by \`deno task bench:budget\` on ${new Date().toISOString().slice(0, 10)}: the real OpenViking ` +
  `server (the e2e harness, stub embeddings) with ${SEED_MEMORIES.length} memories and a profile ` +
  "(bench/budget_session.ts), one scripted session of " +
  `${SESSION_PROMPTS.length} prompts (one asked again right away, one again later, one too short for recall) through the hooks as real ` +
  "processes. Tokens are estimated (a quarter per character, 1.5 per CJK character); rows are terminal rows " +
  "of the hook's text in Kimi's TUI at 160 columns (3 columns of indent, wrapped), without Kimi's own " +
  '"● UserPromptSubmit hook" line and the blank line under it. A repeat is a memory URI printed again after ' +
  "an earlier prompt of the session printed it.",
  "",
  "Each figure cell: the first prompt / p50 of the later prompts that printed anything / their max. Later " +
  "prompts printing nothing are counted apart (the server excludes what the session already got, so a small " +
  "store runs dry).",
  "",
  "| code | mode | characters | est. tokens | rows at 160 cols | later prompts printing nothing | session chars | memories printed | repeats | plugin system prompt chars |",
  "| ---- | ---- | ---------- | ----------- | ---------------- | -----------------------------: | ------------: | ---------------: | ------: | -------------------------- |",
  ...runs.map(summary),
  "",
  "Characters per prompt, with the number of memories printed (`*`: the prompt repeated a memory):",
  "",
  ...runs.map(detail),
  "",
].join("\n");
console.log(report);
if (writeTo) {
  await Deno.writeTextFile(writeTo, report);
  // As `deno fmt --check` wants it (the repository's line width).
  await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", writeTo],
    stdout: "null",
    stderr: "null",
  })
    .output();
}
