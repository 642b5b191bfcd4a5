/**
 * `openviking-kimi hook <event>`: reads all of stdin, parses the payload, resolves the config for the
 * payload's cwd, applies the gates and runs the event's handler. Always exits 0; only user-prompt-submit
 * (plain text) and pre-tool-use (deny JSON) ever write to stdout. Handlers are imported lazily so each event
 * loads only what it needs.
 *
 * Without a home (HOME unset or relative, no absolute override) nothing is kept and nothing captured: the
 * events that need state end with outcome "no-home", the prompt hook recalls without state. A capture whose
 * state directory cannot be written stops before sending anything ("state-unwritable"): what it sent could
 * not be recorded, so the next capture would send it again; the journal keeps every turn meanwhile.
 */

import { type Config, loadConfig } from "../openviking/config.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { type Env, hookStateDir, NoHomeError, pendingDir, processEnv, sharedStateDir } from "../lib/paths.ts";
import { statePaths } from "./state.ts";
import { safeId } from "../lib/paths.ts";
import { unwritableReason } from "../lib/fs.ts";
import { type Handler, type HookContext, SESSION_PREFIX } from "./context.ts";
import { gateReason } from "../kimi/gates.ts";
import { WORKER_ENV } from "../kimi/detach.ts";
import { readAllStdin } from "../kimi/stdin.ts";
import {
  CAPTURING_EVENTS,
  type HookEvent,
  isHookEvent,
  LEDGER_EVENTS,
  STATEFUL_EVENTS,
} from "../kimi/hooks.ts";
import { type HookInput, hostSessionId, parseHookInput } from "../kimi/payload.ts";

const HANDLERS: Record<HookEvent, () => Promise<Handler>> = {
  "session-start": async () => (await import("./session-start.ts")).sessionStart,
  "user-prompt-submit": async () => (await import("./prompt.ts")).userPromptSubmit,
  "pre-tool-use": async () => (await import("./guard.ts")).preToolUse,
  "stop": async () => (await import("./capture.ts")).captureHook,
  "stop-failure": async () => (await import("./capture.ts")).captureHook,
  "pre-compact": async () => (await import("./capture.ts")).captureHook,
  "session-end": async () => (await import("./capture.ts")).captureHook,
  "interrupt": async () => (await import("./capture.ts")).captureHook,
};

/** Where a hook run keeps things; a field is absent when it needs a home there is none of. */
export interface HookDirs {
  stateDir?: string;
  pendingDir?: string;
  sharedStateDir?: string;
  /** Why state or queue have no place ("" when both have one). */
  noHome: string;
}

/** The hook run's directories, never relative: see {@link HookDirs}. */
function hookDirs(env: Env): HookDirs {
  const reasons: string[] = [];
  const locate = (where: (env: Env) => string, required: boolean): string | undefined => {
    try {
      return where(env);
    } catch (error) {
      if (!(error instanceof NoHomeError)) throw error;
      if (required) reasons.push(error.message);
      return undefined;
    }
  };
  return {
    stateDir: locate(hookStateDir, true),
    pendingDir: locate(pendingDir, true),
    sharedStateDir: locate(sharedStateDir, false),
    noHome: reasons[0] ?? "",
  };
}

/** Builds the context of one hook run from its parsed parts. */
export async function createContext(parts: {
  event: HookEvent;
  input: HookInput;
  raw: Uint8Array;
  env: Env;
  config: Config;
  log: Logger;
  startedAt: number;
  isWorker: boolean;
}): Promise<HookContext> {
  const hostId = hostSessionId(parts.input);
  const dirs = hookDirs(parts.env);
  const stateDir = dirs.stateDir;
  const safe = hostId ? await safeId(hostId) : "";
  return {
    ...parts,
    hostSessionId: hostId,
    ovSessionId: safe ? `${SESSION_PREFIX}${safe}` : "",
    cwd: parts.input.cwd ?? "",
    capturePaths: hostId && stateDir ? await statePaths(stateDir, hostId) : undefined,
    promptPaths: hostId && stateDir ? await statePaths(stateDir, `${hostId}.prompt`) : undefined,
    // "" only without a home, when no handler that uses them runs (see STATEFUL_EVENTS).
    pendingDir: dirs.pendingDir ?? "",
    sharedStateDir: dirs.sharedStateDir ?? "",
  };
}

/** Why this run must stop before its handler for lack of usable state ("" to go ahead), logged as a stage. */
async function stateProblem(ctx: HookContext): Promise<{ outcome: string; reason: string } | undefined> {
  const dirs = hookDirs(ctx.env);
  if (dirs.noHome) {
    if (ctx.event === "pre-tool-use") return undefined; // keeps nothing anyway
    ctx.log.stage("no-home", {
      reason: dirs.noHome,
      effect: STATEFUL_EVENTS.has(ctx.event) ? "nothing kept, nothing captured" : "recall without state",
    });
    if (STATEFUL_EVENTS.has(ctx.event)) return { outcome: "no-home", reason: dirs.noHome };
    return undefined;
  }
  // SessionStart's state is best effort and its queue replay needs none: only capture must stop here.
  if (!CAPTURING_EVENTS.has(ctx.event) || !dirs.stateDir || !ctx.config.autoCapture) return undefined;
  const reason = await unwritableReason(dirs.stateDir);
  if (!reason) return undefined;
  ctx.log.stage("state-unwritable", {
    reason,
    effect:
      "nothing sent (it could not be recorded); the journal keeps every turn until the state is writable",
  });
  return { outcome: "state-unwritable", reason };
}

/** What a hook run prints, and what it records once that is printed (the ledger; never throws). */
export interface HookRun {
  stdout: string;
  record: () => Promise<void>;
}

/** Runs one hook event with the given stdin and records it in the ledger; never throws. Returns its stdout. */
export async function runHook(
  eventName: string | undefined,
  raw: Uint8Array,
  env = processEnv(),
  startedAt = Date.now(),
): Promise<string> {
  const run = await startHook(eventName, raw, env, startedAt);
  await run.record();
  return run.stdout;
}

/** Runs one hook event with the given stdin; never throws. The ledger is written by `record`, later. */
async function startHook(
  eventName: string | undefined,
  raw: Uint8Array,
  env: Env,
  startedAt: number,
): Promise<HookRun> {
  let record = () => Promise.resolve();
  const done = (stdout = ""): HookRun => ({ stdout, record });
  const isWorker = env[WORKER_ENV] === "1";
  let log: Logger | undefined;
  let event = eventName ?? "";
  let session = "";
  let outcome = "error";
  let data: Record<string, unknown> | undefined;
  try {
    const parsed = parseHookInput(raw);
    const cwd = parsed.ok ? (parsed.input.cwd ?? "") : "";
    const { config, warnings } = await loadConfig(env, cwd || undefined);
    log = createLogger({
      enabled: config.debug && config.debugLogPath !== "",
      path: config.debugLogPath,
      source: `kimicode:${event}${isWorker ? ":worker" : ""}`,
      secrets: [config.apiKey],
    });
    if (warnings.length) log.stage("config-warnings", { warnings });
    if (!isHookEvent(eventName)) {
      outcome = "unknown-event";
      return done();
    }
    event = eventName;
    if (!parsed.ok) {
      outcome = `bad-input: ${parsed.reason}`;
      return done();
    }
    const input = parsed.input;
    const hostId = hostSessionId(input);
    session = hostId;
    const gate = gateReason(config, hostId, cwd);
    if (gate) {
      outcome = `skipped: ${gate}`;
      return done();
    }
    const ctx = await createContext({ event: eventName, input, raw, env, config, log, startedAt, isWorker });
    const problem = await stateProblem(ctx);
    if (problem) {
      outcome = problem.outcome;
      return done();
    }
    const handler = await HANDLERS[eventName]();
    const result = await handler(ctx);
    outcome = result.outcome;
    data = result.data;
    // Recorded once the output is written, before the process exits (Kimi waits for the exit: a few sync file
    // calls, within noise). The viking:// guard (every Read, Glob and Grep) records nothing, loads no ledger code.
    if (LEDGER_EVENTS.has(eventName)) {
      record = () => import("./ledger-entry.ts").then((m) => m.recordRun(ctx, result, startedAt));
    }
    return done(result.stdout ?? "");
  } catch (error) {
    outcome = `error: ${(error as Error)?.message ?? String(error)}`;
    return done();
  } finally {
    log?.stage("done", { event, session, durationMs: Date.now() - startedAt, outcome, ...data });
    await log?.flush();
  }
}

/** The `hook` command: exit code is always 0. */
export async function hookCommand(args: string[], raw?: Uint8Array): Promise<number> {
  const startedAt = Date.now();
  raw ??= await readAllStdin();
  const run = await startHook(args[0], raw, processEnv(), startedAt);
  if (run.stdout) {
    const bytes = new TextEncoder().encode(run.stdout);
    let written = 0;
    while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written));
  }
  await run.record();
  return 0;
}
