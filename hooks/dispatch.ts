/**
 * `openviking-kimi hook <event>`: reads all of stdin, parses the payload, resolves the config for the
 * payload's cwd, applies the gates and runs the event's handler. Always exits 0; only user-prompt-submit
 * (plain text) and pre-tool-use (deny JSON) ever write to stdout. Handlers are imported lazily so each event
 * loads only what it needs.
 */

import { type Config, loadConfig } from "../runtime/config.ts";
import { createLogger, type Logger } from "../runtime/log.ts";
import { type Env, hookStateDir, pendingDir, processEnv, sharedStateDir } from "../runtime/paths.ts";
import { safeId, statePaths } from "../runtime/state.ts";
import type { HookContext } from "./context.ts";
import { SESSION_PREFIX } from "./context.ts";
import { gateReason } from "./gates.ts";
import { WORKER_ENV } from "./detach.ts";
import { readAllStdin } from "./stdin.ts";
import { type HookEvent, type HookInput, hostSessionId, isHookEvent, parseHookInput } from "./input.ts";

/** What a handler reports: the stdout text (if any) and a short outcome for the log. */
export interface HookResult {
  stdout?: string;
  outcome: string;
  data?: Record<string, unknown>;
}

/** A hook handler. */
export type Handler = (ctx: HookContext) => Promise<HookResult>;

const HANDLERS: Record<HookEvent, () => Promise<Handler>> = {
  "session-start": async () => (await import("./session-start.ts")).sessionStart,
  "user-prompt-submit": async () => (await import("./user-prompt-submit.ts")).userPromptSubmit,
  "pre-tool-use": async () => (await import("./pre-tool-use.ts")).preToolUse,
  "stop": async () => (await import("./capture.ts")).captureHook,
  "stop-failure": async () => (await import("./capture.ts")).captureHook,
  "pre-compact": async () => (await import("./capture.ts")).captureHook,
  "session-end": async () => (await import("./capture.ts")).captureHook,
  "interrupt": async () => (await import("./capture.ts")).captureHook,
};

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
  const stateDir = hookStateDir(parts.env);
  const safe = hostId ? await safeId(hostId) : "";
  return {
    ...parts,
    hostSessionId: hostId,
    ovSessionId: safe ? `${SESSION_PREFIX}${safe}` : "",
    cwd: parts.input.cwd ?? "",
    capturePaths: hostId ? await statePaths(stateDir, hostId) : undefined,
    promptPaths: hostId ? await statePaths(stateDir, `${hostId}.prompt`) : undefined,
    pendingDir: pendingDir(parts.env),
    sharedStateDir: sharedStateDir(parts.env),
  };
}

/** Runs one hook event with the given stdin; never throws. Returns what to print on stdout. */
export async function runHook(
  eventName: string | undefined,
  raw: Uint8Array,
  env = processEnv(),
  startedAt = Date.now(),
): Promise<string> {
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
      enabled: config.debug,
      path: config.debugLogPath,
      source: `kimicode:${event}${isWorker ? ":worker" : ""}`,
      secrets: [config.apiKey],
    });
    if (warnings.length) log.stage("config-warnings", { warnings });
    if (!isHookEvent(eventName)) {
      outcome = "unknown-event";
      return "";
    }
    event = eventName;
    if (!parsed.ok) {
      outcome = `bad-input: ${parsed.reason}`;
      return "";
    }
    const input = parsed.input;
    const hostId = hostSessionId(input);
    session = hostId;
    const gate = gateReason(config, hostId, cwd);
    if (gate) {
      outcome = `skipped: ${gate}`;
      return "";
    }
    const ctx = await createContext({ event: eventName, input, raw, env, config, log, startedAt, isWorker });
    const handler = await HANDLERS[eventName]();
    const result = await handler(ctx);
    outcome = result.outcome;
    data = result.data;
    return result.stdout ?? "";
  } catch (error) {
    outcome = `error: ${(error as Error)?.message ?? String(error)}`;
    return "";
  } finally {
    log?.stage("done", { event, session, durationMs: Date.now() - startedAt, outcome, ...data });
    await log?.flush();
  }
}

/** The `hook` command: exit code is always 0. */
export async function hookCommand(args: string[], raw?: Uint8Array): Promise<number> {
  const startedAt = Date.now();
  raw ??= await readAllStdin();
  const stdout = await runHook(args[0], raw, processEnv(), startedAt);
  if (stdout) {
    const bytes = new TextEncoder().encode(stdout);
    let written = 0;
    while (written < bytes.length) written += await Deno.stdout.write(bytes.subarray(written));
  }
  return 0;
}
