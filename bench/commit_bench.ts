/**
 * What commits cost (issue 22 §1): one scripted 30-turn coding session through the real Stop and SessionEnd
 * hooks (in-process, detaching off) against the real OpenViking, whose model is the loopback stub, once per
 * commit policy. Counts what extraction asks of the model (chat calls, prompt tokens estimated from their
 * text), the commits, and how many turns a fact taught in turn 5 waits for the commit that extracts it.
 *
 * `deno task bench` writes its section into docs/BENCHMARKS.md; alone, this file rewrites only that section:
 *   deno run -A --config tests/deno.json bench/commit_bench.ts
 */

import { startRealOpenViking } from "../tests/support/real-openviking.ts";
import type { EmbeddingStub } from "../tests/support/embedding-stub.ts";
import { hookIn, placeJournal, sandboxEnv } from "../tests/support/hook-context.ts";
import { JournalBuilder } from "../tests/support/journal.ts";
import { estimateTokens } from "../memory/digest.ts";
import { BALANCED_PENDING_TOKENS } from "../memory/capture.ts";
import { COMMIT_POLICIES, KNOBS } from "../openviking/config.ts";

/** Turns of the scripted session. */
const TURNS = 30;
/** The turn that teaches the fact (1-based). */
const FACT_TURN = 5;
/** The turn whose user asks to remember something (1-based). */
const REMEMBER_TURN = 29;

const TOPICS = [
  "the tile cache",
  "the upload queue",
  "the billing job",
  "the route planner",
  "the auth checks",
];

/** The user's prompt of turn `i` (1-based). */
function prompt(i: number): string {
  if (i === FACT_TURN) return "Note for later: our staging database listens on port 6543, not 5432.";
  if (i === REMEMBER_TURN) return "Remember that we review every migration in pairs.";
  return `Turn ${i}: look at ${
    TOPICS[i % TOPICS.length]
  } and make the failing test pass; keep the change small ` +
    "and explain what was wrong.";
}

/** The assistant's answer of turn `i`: a realistic length for a coding turn's final text. */
function answer(i: number): string {
  const topic = TOPICS[i % TOPICS.length];
  return [
    `I read ${topic} and the failing test. The test expected the retry counter to reset after a success, `,
    "but the code only reset it on a timeout, so the second failure in a row was reported as the third. ",
    "I changed the reset to happen on every successful request and added a test for two failures with a ",
    "success between them. The other callers do not depend on the old behaviour: I searched for the counter ",
    "and it is only read by the backoff and the metrics. ",
    `Step ${i}: the suite passes locally, formatting and lint are clean, and the diff is 14 lines. `,
  ].join("").repeat(2);
}

/** One policy's figures. */
interface Figures {
  policy: string;
  commits: number;
  calls: number;
  promptTokens: number;
  /** Turns after the fact's turn until a commit covered it (0: its own turn); undefined: only at the session end. */
  factWait?: number;
  /** The commit of the remember turn came at once. */
  rememberAtOnce: boolean;
  /** Median seconds from a commit to its extraction's end. */
  extractionSeconds: number;
  /** The model tokens the server reported for the session's extractions (what `status` shows). */
  serverTokens: number;
}

/** The chat requests of the stub after `from`, and their prompt tokens. */
function chats(stub: { requests: { path: string; body: unknown }[] }, from: number) {
  const calls = stub.requests.slice(from).filter((r) => r.path.endsWith("/chat/completions"));
  const text = (b: unknown) =>
    ((b as { messages?: { content?: unknown }[] }).messages ?? []).map((m) =>
      typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")
    ).join("\n");
  return { calls: calls.length, tokens: calls.reduce((n, r) => n + estimateTokens(text(r.body)), 0) };
}

/** Runs the session under `policy` against the server at `url`. */
async function runPolicy(
  policy: string,
  ov: { url: string; stub: EmbeddingStub },
): Promise<Figures> {
  const home = await Deno.makeTempDir({ prefix: "commit-bench-" });
  const sid = `session_bench-${policy}-${crypto.randomUUID().slice(0, 8)}`;
  const env = sandboxEnv(home, ov.url, {
    OPENVIKING_COMMIT_POLICY: policy,
    OPENVIKING_CAPTURE_WAIT_MS: "0",
    OPENVIKING_TIMEOUT_MS: "30000",
  });
  const stdin = (event: string) =>
    JSON.stringify({ hook_event_name: event, session_id: sid, cwd: "/home/user/proj" });
  const commitCount = async () => {
    const r = await fetch(`${ov.url}/api/v1/sessions/kc-${sid}`);
    const body = await r.json() as { result?: { commit_count?: number } };
    return body.result?.commit_count ?? 0;
  };
  const from = ov.stub.server.requests.length;
  const j = new JournalBuilder();
  let factWait: number | undefined;
  let rememberAtOnce = false;
  for (let i = 1; i <= TURNS; i++) {
    j.simpleTurn(prompt(i), answer(i));
    await placeJournal(home, sid, j.toString());
    const before = await commitCount().catch(() => 0);
    await hookIn("stop", { env, stdin: stdin("Stop") });
    const committed = await commitCount() > before;
    if (committed && i >= FACT_TURN && factWait === undefined) factWait = i - FACT_TURN;
    if (i === REMEMBER_TURN) rememberAtOnce = committed;
  }
  await hookIn("session-end", { env, stdin: stdin("SessionEnd") });
  const tasks = await waitForTasks(ov.url, `kc-${sid}`);
  const seconds = tasks.map((t) => t.updated_at - t.created_at).sort((a, b) => a - b);
  await Deno.remove(home, { recursive: true }).catch(() => {});
  const used = chats(ov.stub.server, from);
  return {
    policy,
    commits: tasks.length,
    calls: used.calls,
    promptTokens: used.tokens,
    factWait,
    rememberAtOnce,
    extractionSeconds: seconds[Math.floor(seconds.length / 2)] ?? 0,
    serverTokens: Math.max(0, ...tasks.map((t) => Number(t.result?.token_usage?.llm?.total_tokens ?? 0))),
  };
}

/** A commit task as the server lists it (the fields used here). */
interface Task {
  status: string;
  created_at: number;
  updated_at: number;
  result?: { token_usage?: { llm?: { total_tokens?: number } } };
}

/** The session's commit tasks once none is still running (bounded). */
async function waitForTasks(url: string, sid: string): Promise<Task[]> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const r = await fetch(`${url}/api/v1/tasks?resource_id=${encodeURIComponent(sid)}&limit=200`);
    const tasks = ((await r.json()) as { result?: Task[] }).result ?? [];
    if (tasks.every((t) => t.status === "completed" || t.status === "failed") || Date.now() > deadline) {
      return tasks;
    }
    await new Promise((res) => setTimeout(res, 1000));
  }
}

/** The markdown section: what each policy costs, measured now. */
export async function commitSection(): Promise<string> {
  const ov = await startRealOpenViking();
  try {
    const rows: Figures[] = [];
    for (const policy of COMMIT_POLICIES) {
      rows.push(await runPolicy(policy, { url: ov.url, stub: ov.stub }));
      console.error(`commit bench: ${JSON.stringify(rows.at(-1))}`);
    }
    const every = rows.find((r) => r.policy === "every-turn")!;
    const own = Array.from({ length: TURNS }, (_, i) => estimateTokens(prompt(i + 1) + answer(i + 1)))
      .reduce((a, b) => a + b, 0);
    const overhead = Math.round((every.promptTokens - own) / every.calls);
    const share = (r: Figures) => `${Math.round((100 * r.promptTokens) / every.promptTokens)} %`;
    const wait = (r: Figures) =>
      r.factWait === undefined
        ? "at the session's end"
        : r.factWait === 0
        ? "at once"
        : `${r.factWait} turns later`;
    return [
      "## What commits cost (issue 22 §1)",
      "",
      `One scripted ${TURNS}-turn coding session, about ${
        estimateTokens(prompt(2) + answer(2))
      } tokens a turn,`,
      "through the real Stop and SessionEnd hooks (turns back to back, no model time between them) against the",
      "real OpenViking 0.5.2 whose model is the loopback stub, per commit policy (`OPENVIKING_COMMIT_POLICY`):",
      "what extraction asked of the model (prompt tokens estimated from the text the stub received; the server's",
      "own count, as `status` shows it, beside them). A fact taught in turn",
      `${FACT_TURN} can be recalled once a commit covering it is extracted (until then the model has it in its`,
      `context); the user of turn ${REMEMBER_TURN} asks to remember something. \`balanced\` commits at ${BALANCED_PENDING_TOKENS}`,
      "uncommitted tokens (the server's count): every extraction call carries about",
      `${overhead} tokens of OpenViking's instructions besides the conversation (\`every-turn\`'s prompt tokens less`,
      "the session's own, per call), so `balanced` waits for about as much conversation as that.",
      "",
      "| policy | commits | model calls | prompt tokens | vs every turn | server-reported tokens | " +
      `fact of turn ${FACT_TURN} committed | remember turn committed at once | commit to extracted, median |`,
      "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
      ...rows.map((r) =>
        `| \`${r.policy}\` | ${r.commits} | ${r.calls} | ${r.promptTokens} | ${
          share(r)
        } | ${r.serverTokens} | ${wait(r)} | ${r.rememberAtOnce ? "yes" : "no"} | ${
          r.extractionSeconds.toFixed(0)
        } s |`
      ),
      "",
      "Commits made every turn queue on the server: their extractions finish long after the turn. In the next",
      "session a fact is there once the session's last commit is extracted: SessionEnd commits under every",
      "policy; a session that ends without it (`kimi -p`, `kimi acp`, `kimi web`) is committed under `balanced`",
      `and \`session-end\` by the home's idle watch once idle ${KNOBS.idleCommitSeconds.default} s`,
      "(`OPENVIKING_IDLE_COMMIT_SECONDS`), under `every-turn` by its last Stop; a killed watch's sessions by the",
      "next session start.",
      "",
    ].join("\n");
  } finally {
    await ov.stop();
  }
}

const HEAD = "## What commits cost";

/** Where this section is in `doc`: its start and end offsets (pure). */
function bounds(doc: string): [number, number] | undefined {
  const start = doc.indexOf(HEAD);
  if (start < 0) return undefined;
  const next = doc.slice(start + HEAD.length).search(/\n#{2,3} /);
  return [start, next < 0 ? doc.length : start + HEAD.length + next + 1];
}

/** This section as `doc` has it ("" when it has none). Pure. */
export function sectionOf(doc: string): string {
  const at = bounds(doc);
  return at ? doc.slice(at[0], at[1]) : "";
}

/** `doc` with this section replaced by `section` (added before the analysis when it has none). Pure. */
export function withSection(doc: string, section: string): string {
  const at = bounds(doc);
  if (at) return doc.slice(0, at[0]) + section + doc.slice(at[1]);
  const analysis = doc.indexOf("\n## Analysis");
  return analysis < 0
    ? `${doc}\n${section}`
    : `${doc.slice(0, analysis + 1)}${section}${doc.slice(analysis + 1)}`;
}

if (import.meta.main) {
  const path = new URL("../docs/BENCHMARKS.md", import.meta.url);
  const doc = await Deno.readTextFile(path);
  await Deno.writeTextFile(path, withSection(doc, await commitSection()));
  await new Deno.Command(Deno.execPath(), { args: ["fmt", path.pathname] }).output();
}
