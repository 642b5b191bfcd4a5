/**
 * The end-to-end rig: the REAL Kimi Code CLI (tests/support/kimi.ts) with openviking-kimi installed by our
 * own `install` command into a temporary HOME / KIMI_CODE_HOME, a scripted model server, and an OpenViking
 * server: the in-process fake (which the tests take down, hang and bring back on its port), or the real one.
 */

import { join } from "node:path";
import { walk } from "../chaos/audit.ts";
import { assertEquals, assertTrue } from "../support/assert.ts";
import {
  echoContext,
  FAKE_MEMORY_LINE,
  FakeOpenViking,
  queryMemoryLine,
} from "../support/fake-openviking.ts";
import {
  KimiEnv,
  type KimiInstall,
  type PrintOptions,
  type PrintResult,
  tryInstallKimi,
  waitUntil,
} from "../support/kimi.ts";
import {
  type ChatMessage,
  type ChatRequest,
  defaultScript,
  isCompaction,
  isSubagent,
  messageText,
  ModelServer,
  type Reply,
  type Script,
} from "../support/model-server.ts";
import { denoEnv, runCli } from "../support/run.ts";
import { OFFERED_TOOLS } from "../support/fake-mcp.ts";

/** Options every e2e `Deno.test` uses: Kimi's detached hook workers outlive single ops. */
export const E2E_TEST = { sanitizeOps: false, sanitizeResources: false } as const;

/** The prefix Kimi gives our plugin's MCP tools (observed in the tool list Kimi sends). */
export const MCP_PREFIX = "mcp__plugin-openviking-memory_openviking__";

/** The MCP tools a chat request offers the model (any server's), sorted. */
export const mcpTools = (req: ChatRequest): string[] =>
  req.toolNames.filter((n) => n.startsWith("mcp__")).sort();

/** The tools of our MCP server Kimi offers the model by default, sorted. */
export const OFFERED_MCP_TOOLS: string[] = OFFERED_TOOLS.map((n) => `${MCP_PREFIX}${n}`).sort();

/** The message Kimi adds to the model context for a UserPromptSubmit hook that printed `stdout`. */
export function hookResult(stdout: string): string {
  return `<hook_result hook_event="UserPromptSubmit">\n${stdout.trim()}\n</hook_result>`;
}

/**
 * What the prompt hook prints for `prompt` against a rig's fake (which answers every query with the default
 * memory and one of that query's, {@link echoContext}): the first prompt of a session the default memory and
 * the prompt's (the profile is in the plugin's system prompt); a later prompt only its own memory — the
 * default one is never printed twice in a session.
 */
export function expectedDigest(prompt: string, first: boolean): string {
  const lines = first ? [FAKE_MEMORY_LINE, queryMemoryLine(prompt)] : [queryMemoryLine(prompt)];
  return `<openviking-context>\n${lines.join("\n")}\n</openviking-context>`;
}

/** The first line of the plugin's system prompt (system-prompt.md). */
export const SYSTEM_PROMPT_TITLE = "# OpenViking memory (openviking-kimi)";

/** Whether a chat message is a UserPromptSubmit hook result. */
export function isHookResult(m: ChatMessage): boolean {
  return m.role === "user" && messageText(m).startsWith('<hook_result hook_event="UserPromptSubmit">');
}

/** Prints why something is skipped, in one recognisable line. */
export function skip(what: string, why: string): void {
  console.log(`SKIP ${what}: ${why}`);
}

const installs = new Map<string, Promise<KimiInstall | string>>();

/**
 * The Kimi install of `version` (npm, cached in .cache/kimi), or undefined after printing why the tests that
 * need it are skipped (`OPENVIKING_KIMI_SKIP=1`, no registry, or npm could not install it).
 */
export async function kimiOrSkip(version: string, what: string): Promise<KimiInstall | undefined> {
  if (Deno.env.get("OPENVIKING_KIMI_SKIP") === "1") {
    skip(what, "OPENVIKING_KIMI_SKIP=1");
    return undefined;
  }
  if (!installs.has(version)) installs.set(version, tryInstallKimi(version));
  const r = await installs.get(version)!;
  if (typeof r === "string") {
    skip(what, `cannot install @moonshot-ai/kimi-code@${version} from npm: ${r.trim().slice(0, 400)}`);
    return undefined;
  }
  return r;
}

function e2eScript(): Script {
  return (req: ChatRequest): Reply => {
    if (isCompaction(req) || isSubagent(req)) return defaultScript(req) as Reply;
    const p = req.prompt;
    if (p.includes("RUN_TOOL")) {
      return req.hasToolResult ? { kind: "text", text: "The tool has finished.", reasoning: THINK_TEXT } : {
        kind: "tool",
        text: "Let me check with a tool.",
        calls: [{ name: "Bash", args: { command: TOOL_COMMAND } }],
      };
    }
    if (p.includes("RUN_AGENT")) {
      return req.hasToolResult ? { kind: "text", text: "The subagent has finished." } : {
        kind: "tool",
        calls: [{
          name: "Agent",
          args: { description: "sub task", prompt: "SUBAGENT_TASK: reply with SUBAGENT-DONE" },
        }],
      };
    }
    if (p.includes("CALL_MCP")) {
      if (!req.hasToolResult) {
        return { kind: "tool", calls: [{ name: `${MCP_PREFIX}search`, args: MCP_ARGS }] };
      }
      const read = p.includes("READ_VIKING");
      if (read && !(req.lastToolOutput ?? "").includes("viking:// URIs are")) {
        return { kind: "tool", calls: [{ name: "Read", args: { path: VIKING_URI } }] };
      }
      return { kind: "text", text: read ? "The read was refused." : "The memory search is done." };
    }
    if (p.includes("READ_VIKING")) {
      return req.hasToolResult
        ? { kind: "text", text: "The read was refused." }
        : { kind: "tool", calls: [{ name: "Read", args: { path: VIKING_URI } }] };
    }
    const command = commandCall(p);
    if (command) {
      return req.hasToolResult ? { kind: "text", text: COMMAND_DONE } : { kind: "tool", calls: [command] };
    }
    if (p.includes("SLOW")) return { kind: "text", text: SLOW_TEXT, chunkSize: 13, intervalMs: 100 };
    if (p.includes("FAIL_TURN")) return { kind: "error", status: 400, message: "mock request rejected" };
    return { kind: "text", text: `ACK: ${p}` };
  };
}

/** The answer of a memory command's turn once its tool answered. */
export const COMMAND_DONE = "The memory tool answered.";

/**
 * The tool call a model makes for one of the plugin's commands (their bodies, commands/*.md, name the
 * tool and end with the user's arguments), or undefined when the prompt is not one.
 */
function commandCall(prompt: string): { name: string; args: Record<string, unknown> } | undefined {
  const args = prompt.split("\n\n").at(-1)?.trim() ?? "";
  const tool = (name: string) => `${MCP_PREFIX}${name}`;
  if (prompt.startsWith("Store this in OpenViking") && prompt.includes(tool("remember"))) {
    return { name: tool("remember"), args: { messages: [{ role: "user", content: args }] } };
  }
  if (prompt.startsWith("The user wants OpenViking to forget") && prompt.includes(tool("forget"))) {
    return { name: tool("forget"), args: { uri: args } };
  }
  if (prompt.startsWith("Search OpenViking long-term memory") && prompt.includes(tool("search"))) {
    return { name: tool("search"), args: { query: args } };
  }
  return undefined;
}

/** The answer of a RUN_TOOL turn as OpenViking gets it: the text of both steps, a blank line between. */
export const TOOL_TURN_ANSWER = "Let me check with a tool.\n\nThe tool has finished.";

/** The Bash command of the RUN_TOOL turn; its output must never be captured. */
export const TOOL_COMMAND = "echo TOOL-OUTPUT-4242";
/** The reasoning of the RUN_TOOL turn's answer; never captured. */
const THINK_TEXT = "THINKING-7777 about the request";
/** The arguments of the scripted MCP search. */
export const MCP_ARGS = { query: "indentation preference" };
/** The URI of the scripted Read. */
export const VIKING_URI = "viking://user/default/memories/preferences/indent.md";
/** The whole SLOW answer (about 20 s at 13 characters per 100 ms). */
export const SLOW_TEXT = Array.from({ length: 200 }, (_, i) => `slow token ${i + 1}`).join(" ");

/**
 * Options of {@link Rig.create}: an OpenViking server to use instead of a new fake (the real one), extra
 * environment for every Kimi process (and so for our hooks), extra `install` arguments, `noInstall` (the test
 * runs `install`, passing it {@link Rig.credentialArgs}), the parent directory of HOME and the work dir
 * (default: a new temp dir), the work dir's name (default "project").
 */
interface RigOptions {
  serverUrl?: string;
  env?: Record<string, string>;
  installArgs?: string[];
  noInstall?: boolean;
  root?: string;
  workDirName?: string;
}

/** One Kimi home with our plugin installed, its model server and OpenViking (fake or real). */
export class Rig {
  /** The API key the fake demands on every request (install passes it with `--api-key`). */
  readonly apiKey: string | undefined;

  /** `fake`: absent when a real server is used; `ownsRoot`: the rig made its temp dir, so it removes it. */
  private constructor(
    readonly env: KimiEnv,
    readonly model: ModelServer,
    readonly url: string,
    readonly fake: FakeOpenViking | undefined,
    private readonly ownsRoot: boolean,
  ) {
    this.apiKey = fake?.options.apiKey;
  }

  /** The connection arguments of `install`: the server's URL (and the fake's API key). */
  get credentialArgs(): string[] {
    return ["--url", this.url, ...(this.apiKey ? ["--api-key", this.apiKey] : [])];
  }

  /** Starts the servers, creates the Kimi home and runs `openviking-kimi install --url <server>`. */
  static async create(install: KimiInstall, opts: RigOptions = {}): Promise<Rig> {
    const fake = opts.serverUrl
      ? undefined
      : await FakeOpenViking.start({ mcp: { sse: true }, apiKey: `ovk-e2e-${crypto.randomUUID()}` });
    if (fake) fake.contextFor = echoContext;
    const model = await ModelServer.start(e2eScript());
    const env = await KimiEnv.create(install, {
      baseUrl: model.baseUrl,
      root: opts.root,
      workDirName: opts.workDirName,
      // A temporary HOME would give deno an empty module cache: the hooks share the test's.
      env: { ...denoEnv(), OPENVIKING_DEBUG: "1", ...opts.env },
    });
    const rig = new Rig(env, model, opts.serverUrl ?? fake!.url, fake, opts.root === undefined);
    if (!opts.noInstall) {
      const r = await rig.cli(["install", ...rig.credentialArgs, ...opts.installArgs ?? []]);
      assertEquals(r.code, 0, `install failed:\n${r.stdout}\n${r.stderr}`);
    }
    return rig;
  }

  /** Runs `openviking-kimi <args>` with this rig's HOME / KIMI_CODE_HOME. */
  cli(args: string[]): ReturnType<typeof runCli> {
    return runCli(args, { env: this.env.env(), clearEnv: true, cwd: this.env.workDir });
  }

  /** `~/.openviking` of this rig. */
  get ovHome(): string {
    return join(this.env.home, ".openviking");
  }

  /** The pending queue directory. */
  get pendingDir(): string {
    return join(this.ovHome, "pending");
  }

  /** The capture state of a Kimi session. */
  captureState(sessionId: string): Promise<Record<string, unknown>> {
    const file = join(this.ovHome, "hook-state", "kimicode", `${sessionId}.json`);
    return Deno.readTextFile(file).then(JSON.parse).catch(() => ({}));
  }

  /** Waits until the session's capture state names `event` as the last capture; returns that state. */
  capturedBy(sessionId: string, event: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const state = async () => {
      const s = await this.captureState(sessionId);
      return (s.lastCapture as { event?: string } | undefined)?.event === event ? s : undefined;
    };
    return waitUntil(
      state,
      timeoutMs,
      `the ${event} capture's state`,
      100,
      () => this.captureState(sessionId),
    );
  }

  /** The `done` records of the hooks' debug log (one per hook run: event, outcome, durationMs, …). */
  async hookRuns(): Promise<Record<string, unknown>[]> {
    const text = await Deno.readTextFile(join(this.ovHome, "logs", "kimicode-hooks.log")).catch(() => "");
    return text.split("\n").filter((l) => l.includes('"stage":"done"')).map((l) => JSON.parse(l));
  }

  /** Runs `kimi [-S id] -p <prompt>` and checks it succeeded. */
  async print(prompt: string, opts: PrintOptions = {}): Promise<PrintResult> {
    const r = await this.env.print(prompt, { timeoutMs: 90_000, ...opts });
    const failed = `kimi -p ${JSON.stringify(prompt)} failed (${r.durationMs} ms):\n${r.stdout}\n${r.stderr}`;
    assertEquals(r.code, 0, failed);
    assertTrue(r.sessionId, `no session id from kimi:\n${r.stderr}`);
    return r;
  }

  /** Chat requests of the main agent (subagent and compaction requests left out). */
  mainRequests(): ChatRequest[] {
    return this.model.chatRequests().filter((r) => !isSubagent(r) && !isCompaction(r));
  }

  /** Stops everything and removes the Kimi home. */
  async dispose(): Promise<void> {
    await this.env.dispose();
    await this.model.close();
    await this.fake?.close();
    // Detached hook workers may still write under the root: removed again while it is there (3 s at most).
    const root = this.env.root;
    const gone = async () => {
      if (!await Deno.stat(root).then(() => true, () => false)) return true;
      await Deno.remove(root, { recursive: true }).catch(() => {});
    };
    if (this.ownsRoot) await waitUntil(gone, 3000, "the rig's root removed", 300).catch(() => {});
  }

  /** Disposes at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

/**
 * The message Kimi adds the prompt hook's output as: right before the prompt (v2 engine), right after it
 * (legacy engine).
 */
export function besidePrompt(msgs: ChatMessage[], prompt: string, legacy = false): ChatMessage | undefined {
  const at = msgs.findIndex((m) => m.role === "user" && messageText(m) === prompt);
  return at < 0 ? undefined : msgs[legacy ? at + 1 : at - 1];
}

/**
 * Checks the model's view of a session: in the last main request, each prompt comes with one
 * UserPromptSubmit hook result ({@link besidePrompt}); the first carries the
 * default memory, every one its own memory, and no memory comes twice.
 */
export function assertRecallBeforeEachPrompt(rig: Rig, prompts: string[], legacy = false): void {
  const msgs = rig.mainRequests().at(-1)?.body.messages ?? [];
  assertEquals(
    msgs.filter(isHookResult).map(messageText),
    prompts.map((p, i) => hookResult(expectedDigest(p, i === 0))),
  );
  for (const prompt of prompts) {
    const beside = besidePrompt(msgs, prompt, legacy);
    assertTrue(beside && isHookResult(beside), `the recall comes with "${prompt}"`);
  }
}

/**
 * After a session `ov` of `prompts` (a RUN_TOOL one among them): the model saw the tool's output, recall
 * asked the context face once per prompt, and nothing injected reached OpenViking.
 */
export function assertTurnsClean(rig: Rig, ov: string, prompts: string[]): void {
  const fake = rig.fake!;
  assertTrue(
    rig.mainRequests().some((r) => (r.lastToolOutput ?? "").includes("TOOL-OUTPUT-4242")),
    `the model saw the output of ${TOOL_COMMAND}`,
  );
  const searches = fake.requestsTo("POST /api/v1/search/search").map((q) => q.body as Record<string, unknown>)
    .filter((b) => b.session_id === ov);
  assertEquals(searches.map((b) => [b.query, b.mode]), prompts.map((p) => [p, "context"]));
  for (const [, , text] of fakeMessages(fake, ov)) assertEquals(leaks(text), [], text);
}

/** A captured message as the tests compare them: `[turn_id, role, text]`. */
export type Msg = [string, string, string];

/** The fake's stored messages of a session as {@link Msg}s. */
export function fakeMessages(fake: FakeOpenViking, ovSessionId: string): Msg[] {
  return fake.messages(ovSessionId).map((m) => [String(m.turn_id), m.role, String(m.content)]);
}

/** The fake's messages of a session once it holds at least `n` (within 20 s). */
export function atFake(fake: FakeOpenViking, ovSessionId: string, n: number): Promise<Msg[]> {
  const held = () => fakeMessages(fake, ovSessionId);
  const enough = () => held().length >= n ? held() : undefined;
  return waitUntil(enough, 20_000, `${n} messages of ${ovSessionId} at the fake`, 100, held);
}

const fakeState = (fake: FakeOpenViking, ovSessionId: string) => ({
  messages: fakeMessages(fake, ovSessionId),
  commits: fake.sessions.get(ovSessionId)?.commits,
});

/** Waits until the fake holds exactly `expected` for the session and `commits` commits. */
export async function fakeHolds(
  fake: FakeOpenViking,
  ovSessionId: string,
  expected: Msg[],
  commits: number,
  timeoutMs = 30_000,
): Promise<void> {
  const state = () => fakeState(fake, ovSessionId);
  const matches = () =>
    JSON.stringify(state()) === JSON.stringify({ messages: expected, commits }) || undefined;
  const what = `the fake to hold ${expected.length} messages and ${commits} commits of ${ovSessionId}`;
  await waitUntil(matches, timeoutMs, what, 100, state);
}

/**
 * {@link fakeHolds}, then waits until the fake has been idle for half a second and checks again (so a late
 * duplicate would still be seen).
 */
export async function expectFakeSession(
  fake: FakeOpenViking,
  ovSessionId: string,
  expected: Msg[],
  commits: number,
  timeoutMs = 30_000,
): Promise<void> {
  await fakeHolds(fake, ovSessionId, expected, commits, timeoutMs);
  const idle = () => Date.now() - (fake.requests.at(-1)?.at ?? 0) >= 500;
  await waitUntil(idle, timeoutMs, "the fake to be idle for 500 ms");
  assertEquals(fakeState(fake, ovSessionId), { messages: expected, commits });
}

/** The markers of injected or foreign text (recall, reminders, thinking, tool output…) that `text` carries. */
export function leaks(text: string): string[] {
  const markers = [
    "<hook_result",
    "<system-reminder",
    "openviking-context",
    "user-profile",
    THINK_TEXT,
    "TOOL-OUTPUT-4242",
    "SUBAGENT",
    "viking:// URIs are OpenViking virtual paths",
    "fake search:",
    SYSTEM_PROMPT_TITLE,
    "Profile (viking://",
    "Name: Test User",
  ];
  return markers.filter((m) => text.includes(m));
}

/** Paths (relative to `root`) of the files under `root` whose bytes contain `needle`. */
export async function filesContaining(root: string, needle: string): Promise<string[]> {
  // A single-byte decoding, one character per byte: a byte search that any file, text or not, can take.
  const latin1 = (bytes: Uint8Array) => new TextDecoder("latin1").decode(bytes);
  const want = latin1(new TextEncoder().encode(needle));
  const holds = async (path: string) =>
    latin1(await Deno.readFile(path).catch(() => new Uint8Array())).includes(want);
  const files = (await walk(root)).filter((f) => !f.isDir).map((f) => f.path);
  const hits = await Promise.all(files.map(holds));
  return files.filter((_, i) => hits[i]).map((path) => path.slice(root.length + 1)).sort();
}

/** Permission bits of a path. */
export async function modeOf(path: string): Promise<number> {
  return (await Deno.stat(path)).mode! & 0o777;
}
