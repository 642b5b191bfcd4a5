/** A hook run: stdin → payload → config → gates → state check → the event's handler (loaded lazily) → log → ledger. */

import { loadConfig } from "../openviking/config.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import {
  type Env,
  homesFile,
  hookStateDir,
  integrationDir,
  kimiHome,
  noHomeReason,
  orNoHome,
  pendingDir,
  processEnv,
  safeId,
  sharedStateDir,
} from "../lib/paths.ts";
import { statePaths } from "./state.ts";
import { readTextIfExists, SMALL_FILE_MAX_BYTES, unwritableReason } from "../lib/fs.ts";
import { type Handler, type HookContext, SESSION_PREFIX } from "./context.ts";
import { gateReason } from "../kimi/gates.ts";
import { WORKER_ENV } from "../kimi/detach.ts";
import { hasTrait, type HookEvent, isHookEvent } from "../kimi/hooks.ts";
import { hostSessionId, parseHookInput } from "../kimi/payload.ts";
import { readAllStdin } from "../lib/bytes.ts";
import { copyDir, isCompiled } from "../lib/self.ts";

const capture = async () => (await import("./capture.ts")).captureHook;
const HANDLERS: Record<HookEvent, () => Promise<Handler>> = {
  "session-start": async () => (await import("./session-start.ts")).sessionStart,
  "user-prompt-submit": async () => (await import("./prompt.ts")).userPromptSubmit,
  "pre-tool-use": async () => (await import("./guard.ts")).preToolUse,
  "stop": capture,
  "stop-failure": capture,
  "pre-compact": capture,
  "session-end": capture,
  "interrupt": capture,
};

/** The context of one hook run; without a home its state paths are absent and its directories "". */
export async function createContext(
  parts: Omit<HookContext, "hostSessionId" | "ovSessionId" | "cwd" | "pendingDir" | "sharedStateDir">,
): Promise<HookContext> {
  const hostId = hostSessionId(parts.input);
  const at = (where: (env: Env) => string) => orNoHome(() => where(parts.env));
  const stateDir = hostId ? at(hookStateDir) : undefined;
  return {
    ...parts,
    hostSessionId: hostId,
    ovSessionId: hostId ? `${SESSION_PREFIX}${await safeId(hostId)}` : "",
    cwd: parts.input.cwd ?? "",
    capturePaths: stateDir ? await statePaths(stateDir, hostId) : undefined,
    promptPaths: stateDir ? await statePaths(stateDir, hostId, "prompt") : undefined,
    pendingDir: at(pendingDir) ?? "",
    sharedStateDir: at(sharedStateDir) ?? "",
  };
}

/** The outcome that stops this run before its handler (no home; a capture's state unwritable), or undefined. */
async function stateProblem(ctx: HookContext): Promise<string | undefined> {
  const stateDir = orNoHome(() => hookStateDir(ctx.env));
  const noHome = stateDir && ctx.pendingDir ? "" : noHomeReason(ctx.env);
  const stateful = hasTrait(ctx.event, "stateful");
  if (noHome) {
    if (ctx.event === "pre-tool-use") return undefined;
    const effect = stateful ? "nothing kept, nothing captured" : "recall without state";
    ctx.log.stage("no-home", { reason: noHome, effect });
    return stateful ? "no-home" : undefined;
  }
  if (!stateDir || !hasTrait(ctx.event, "captures") || !ctx.config.autoCapture) return undefined;
  const reason = await unwritableReason(stateDir);
  if (!reason) return undefined;
  const effect =
    "nothing sent (it could not be recorded); the journal keeps every turn until the state is writable";
  ctx.log.stage("state-unwritable", { reason, effect });
  return "state-unwritable";
}

const slashed = (path: string) => path.replaceAll("\\", "/").replace(/(.)\/+$/, "$1");

/**
 * Whether the record of homes installed into (`kimi-homes`, lib/paths.ts) lists the Kimi home `home` (spelled
 * otherwise too: a link on the way); a missing record lists none; undefined: it cannot be read.
 */
export async function homeListed(env: Env, home: string): Promise<boolean | undefined> {
  let text: string;
  try {
    text = await readTextIfExists(homesFile(env), SMALL_FILE_MAX_BYTES) ?? ""; // a FIFO is never opened
  } catch {
    return undefined;
  }
  const listed = text.split("\n").map((l) => slashed(l.trim())).filter((l) => l !== "");
  if (listed.includes(slashed(home))) return true;
  // Only on this path, which writes nothing.
  const real = (path: string) => Deno.realPath(path).then(slashed, () => slashed(path));
  const here = await real(home);
  for (const line of listed) if (await real(line) === here) return true;
  return false;
}

/** Whether this run is an installed program's for a Kimi home `kimi-homes` no longer lists (an unreadable record: no). */
async function homeUninstalled(env: Env): Promise<boolean> {
  const program = copyDir() ?? (isCompiled() ? Deno.execPath() : undefined);
  const [integration, home] = [orNoHome(() => integrationDir(env)), orNoHome(() => kimiHome(env))];
  const dirs = [integration, env.KIMI_PLUGIN_ROOT?.trim()].filter(Boolean).map((d) => `${slashed(d!)}/`);
  if (!program || !home || !dirs.some((d) => slashed(program).startsWith(d))) return false;
  return await homeListed(env, home) === false;
}

type HookRun = { stdout: string; record: () => Promise<void>; after?: () => Promise<void> };

/** Runs one hook event on `raw` stdin; the ledger is written by the returned `record`. Never throws. */
async function startHook(name: string | undefined, raw: Uint8Array, env: Env, startedAt: number) {
  const run: HookRun = { stdout: "", record: () => Promise.resolve() };
  const isWorker = env[WORKER_ENV] === "1";
  let [log, session, outcome, data]: [Logger?, string?, string?, Record<string, unknown>?] = [];
  try {
    // Before the config and the log: such a run writes nothing and prints nothing.
    if (await homeUninstalled(env)) {
      outcome = "not-installed";
      return run;
    }
    const parsed = parseHookInput(raw);
    const cwd = parsed.ok ? (parsed.input.cwd ?? "") : "";
    const { config, warnings } = await loadConfig(env, cwd || undefined);
    log = createLogger({
      enabled: config.debug && config.debugLogPath !== "",
      path: config.debugLogPath,
      source: `kimicode:${name ?? ""}${isWorker ? ":worker" : ""}`,
      secrets: [config.apiKey],
    });
    if (warnings.length) log.stage("config-warnings", { warnings });
    const stopped = (why: string): HookRun => {
      outcome = why;
      return run;
    };
    if (!isHookEvent(name)) return stopped("unknown-event");
    if (!parsed.ok) return stopped(`bad-input: ${parsed.reason}`);
    session = hostSessionId(parsed.input);
    const gate = gateReason(config, session, cwd);
    if (gate) return stopped(`skipped: ${gate}`);
    const ctx = await createContext({
      event: name,
      input: parsed.input,
      raw,
      env,
      config,
      log,
      startedAt,
      isWorker,
    });
    const problem = await stateProblem(ctx);
    if (problem) return stopped(problem);
    const result = await (await HANDLERS[name]())(ctx);
    [outcome, data, run.stdout, run.after] = [result.outcome, result.data, result.stdout ?? "", result.after];
    if (hasTrait(name, "ledger")) {
      run.record = () => import("./ledger.ts").then((m) => m.recordRun(ctx, result, startedAt));
    }
    return run;
  } catch (error) {
    outcome = `error: ${(error as Error)?.message ?? String(error)}`;
    return run;
  } finally {
    const done = { event: name ?? "", session: session ?? "", durationMs: Date.now() - startedAt };
    log?.stage("done", { ...done, outcome: outcome ?? "error", ...data });
    await log?.flush();
  }
}

/** Runs one hook event on `raw` stdin, `print`s its stdout, then records it in the ledger; its stdout. Never throws. */
export async function runHook(
  name: string | undefined,
  raw: Uint8Array,
  env = processEnv(),
  startedAt = Date.now(),
  print = async (_: string) => {},
) {
  const run = await startHook(name, raw, env, startedAt);
  await print(run.stdout);
  await run.record();
  await run.after?.().catch(() => {});
  return run.stdout;
}

/** The `hook` command: prints the run's stdout, then records it (Kimi waits for the exit). Always 0. */
export async function hookCommand(args: string[], raw?: Uint8Array): Promise<number> {
  const startedAt = Date.now();
  await runHook(args[0], raw ?? await readAllStdin(), processEnv(), startedAt, async (stdout) => {
    const bytes = new TextEncoder().encode(stdout);
    for (let written = 0; written < bytes.length;) {
      written += await Deno.stdout.write(bytes.subarray(written));
    }
  });
  return 0;
}
