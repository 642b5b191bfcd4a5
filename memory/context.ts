/** What every hook handler gets: the parsed payload, the config for its cwd, ids, paths and a logger. */

import type { Config } from "../openviking/config.ts";
import type { Env } from "../lib/paths.ts";
import type { Logger } from "../lib/log.ts";
import { clientOptions, createClient, type OpenVikingClient } from "../openviking/client.ts";
import type { StatePaths } from "./state.ts";
import type { HookEvent } from "../kimi/hooks.ts";
import type { HookInput } from "../kimi/payload.ts";

/** Everything a handler needs about one hook run. */
export interface HookContext {
  event: HookEvent;
  input: HookInput;
  /** The raw stdin, handed to a detached worker as-is. */
  raw: Uint8Array;
  env: Env;
  config: Config;
  /** Kimi's session id (`session_…`), "" when the payload has none. */
  hostSessionId: string;
  /** OpenViking session id: `kc-<safe host id>`. */
  ovSessionId: string;
  /** The workspace: the payload's cwd (never this process's cwd). */
  cwd: string;
  /** Capture state (cursor, acknowledged keys, commit counter); absent without a session id. */
  capturePaths?: StatePaths;
  /** Prompt state (dedupe, profile flag, last recall, URIs shown), kept apart so a prompt never waits on a capture. */
  promptPaths?: StatePaths;
  pendingDir: string;
  /** Shared plugin state directory (legacy memo). */
  sharedStateDir: string;
  log: Logger;
  /** When the hook process started (ms epoch). */
  startedAt: number;
  /** This process is the detached worker of a parent hook. */
  isWorker: boolean;
}

/** What a handler reports: the stdout text (if any) and a short outcome for the log. */
export interface HookResult {
  stdout?: string;
  outcome: string;
  data?: Record<string, unknown>;
}

/** A hook handler. */
export type Handler = (ctx: HookContext) => Promise<HookResult>;

/** Prefix of OpenViking session ids made from Kimi session ids. */
export const SESSION_PREFIX = "kc-";

/** An OpenViking client for this run; `peerId` is the workspace peer ("" for none). */
export function clientFor(ctx: HookContext, peerId = ""): OpenVikingClient {
  return createClient(clientOptions(ctx.config, peerId));
}
