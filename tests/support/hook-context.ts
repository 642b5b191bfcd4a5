/** Builds hook contexts in-process for tests that call handlers directly (no subprocess). */

import { loadConfig } from "../../openviking/config.ts";
import { silentLogger } from "../../lib/log.ts";
import { createContext, runHook } from "../../memory/dispatch.ts";
import type { HookContext } from "../../memory/context.ts";
import type { HookEvent } from "../../kimi/hooks.ts";
import type { HookInput } from "../../kimi/payload.ts";

/**
 * A context for `event` with `input`, in a sandbox whose HOME is `home`: a detached worker's by default, but
 * for the prompt hook, whose worker is the breaker's probe of the server.
 */
export async function makeContext(
  event: HookEvent,
  input: HookInput,
  env: Record<string, string>,
  options: { isWorker?: boolean; startedAt?: number } = {},
): Promise<HookContext> {
  const { config } = await loadConfig(env, input.cwd);
  return await createContext({
    event,
    input,
    raw: new TextEncoder().encode(JSON.stringify(input)),
    env,
    config,
    log: silentLogger,
    startedAt: options.startedAt ?? Date.now(),
    isWorker: options.isWorker ?? event !== "user-prompt-submit",
  });
}

/** Environment of a sandbox. */
export function sandboxEnv(
  home: string,
  url: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    HOME: home,
    KIMI_CODE_HOME: `${home}/.kimi-code`,
    OPENVIKING_URL: url,
    OPENVIKING_TIMEOUT_MS: "1000",
    OPENVIKING_COMMIT_POLICY: "every-turn",
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    ...extra,
  };
}

/** Writes a session's journal where Kimi would (index row + sessions/<wd>/<id>/agents/main/wire.jsonl). */
export async function placeJournal(home: string, sessionId: string, text: string): Promise<string> {
  const kimi = `${home}/.kimi-code`;
  const dir = `${kimi}/sessions/wd_proj_000000000000/${sessionId}`;
  await Deno.mkdir(`${dir}/agents/main`, { recursive: true });
  const path = `${dir}/agents/main/wire.jsonl`;
  await Deno.writeTextFile(path, text);
  const index = `${kimi}/session_index.jsonl`;
  const existing = await Deno.readTextFile(index).catch(() => "");
  if (!existing.includes(sessionId)) {
    await Deno.writeTextFile(
      index,
      `${JSON.stringify({ sessionId, sessionDir: dir, workDir: "/home/user/proj" })}\n`,
      { append: true },
    );
  }
  return path;
}

/**
 * `hook <event>` run in-process with `env` (and nothing of this process's) on `stdin`, detaching switched off
 * so the work runs here: what the entry point would print.
 */
export async function hookIn(
  event: string,
  options: { env: Record<string, string>; stdin: string | Uint8Array },
): Promise<{ stdout: string }> {
  const raw = typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
  return { stdout: await runHook(event, raw, { OPENVIKING_WRITE_PATH_ASYNC: "0", ...options.env }) };
}
