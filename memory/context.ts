/** What a hook handler gets (the run's payload, config, ids, paths, log) and what it reports. */

import type { Config } from "../openviking/config.ts";
import { dirName, type Env } from "../lib/paths.ts";
import type { Logger } from "../lib/log.ts";
import {
  AnyResult,
  type Budget,
  createClient,
  type OpenVikingClient,
  type OvFailure,
} from "../openviking/client.ts";
import { isOpen, readBreaker } from "../openviking/breaker.ts";
import type { StatePaths } from "./state.ts";
import type { HookEvent } from "../kimi/hooks.ts";
import type { HookInput } from "../kimi/payload.ts";
import { sha256Hex } from "../lib/hash.ts";
import { destinationOf } from "../openviking/queue.ts";

/** One hook run, as its handler sees it. */
export interface HookContext {
  event: HookEvent;
  input: HookInput;
  /** The stdin as read (for a detached worker). */
  raw: Uint8Array;
  env: Env;
  config: Config;
  /** Kimi's session id, "" when the payload has none. */
  hostSessionId: string;
  /** The OpenViking session: `kc-<safe host id>`. */
  ovSessionId: string;
  /** The workspace: the payload's cwd, never this process's. */
  cwd: string;
  /** Capture's and (apart, so a prompt never waits for a capture) the prompt's state; absent without id or home. */
  capturePaths?: StatePaths;
  promptPaths?: StatePaths;
  /** The queue's and the shared state's directories ("" without a home). */
  pendingDir: string;
  sharedStateDir: string;
  log: Logger;
  startedAt: number;
  /** This process is the detached worker of a parent hook. */
  isWorker: boolean;
}

/** What a handler reports: its stdout (if any), a short outcome and the data the log and ledger get. */
export interface HookResult {
  stdout?: string;
  outcome: string;
  data?: Record<string, unknown>;
  /** The prompt's redacted query (the ledger's snippet; never in the log). */
  query?: string;
  /** Work done once the run's output is written and recorded (a detached worker's idle watch). */
  after?: () => Promise<void>;
}

export type Handler = (ctx: HookContext) => Promise<HookResult>;

export const SESSION_PREFIX = "kc-";

/** `ctx` turned to another session of its home: the one whose capture state is `file` (`<name>.json`). */
export function otherSession(ctx: HookContext, file: string, ovSessionId: string): HookContext {
  const prompt = file.replace(/\.json$/, ".prompt.json");
  const hostSessionId = file.slice(dirName(file).length + 1, -".json".length);
  const [capturePaths, promptPaths] = [file, prompt].map((f) => ({ file: f, lock: `${f}.lock` }));
  return { ...ctx, hostSessionId, ovSessionId, capturePaths, promptPaths };
}

/** The run's OpenViking client; `peerId` is the workspace's actor peer ("" for none). */
export function clientFor(ctx: HookContext, peerId = ""): OpenVikingClient {
  return createClient(ctx.config, peerId);
}

/** How long a write asks `/health` of a server the recall breaker holds silent before it queues unasked. */
const SILENT_HEALTH_MS = 2000;

/** Per server, why this process found it silent (undefined: it answered) and when it asked: good for 30 s. */
const silence = new Map<string, { at: number; why: Promise<OvFailure | undefined> }>();
const SILENCE_KEPT_MS = 30_000;

/**
 * The client of a write: while the breaker holds the server silent and `/health` goes unanswered too, one that
 * sends nothing, so writes queue (none `unsure`) without waiting a timeout each (ARCHITECTURE's data flow).
 */
export async function clientUnlessSilent(ctx: HookContext, budget: Budget): Promise<OpenVikingClient> {
  const client = clientFor(ctx);
  const b = await readBreaker(ctx.sharedStateDir, ctx.config.baseUrl);
  if (!b || !isOpen(b)) return client;
  let asked = silence.get(ctx.config.baseUrl);
  if (!asked || Date.now() - asked.at > SILENCE_KEPT_MS) {
    const health = client.request("GET", "/health", AnyResult, { timeoutMs: SILENT_HEALTH_MS, budget });
    const paused = `memory is paused for it since ${new Date(b.since).toISOString()}: not asked, queued`;
    const why = health.then((h) =>
      h.ok || h.kind !== "unreachable"
        ? undefined
        : { ...h, error: { ...h.error, message: `${h.error.message}; ${paused}` } }
    );
    asked = { at: Date.now(), why };
    silence.set(ctx.config.baseUrl, asked);
  }
  const down = await asked.why;
  if (down === undefined) return client;
  ctx.log.stage("server-silent", { since: b.since });
  return createClient(ctx.config, "", { down });
}

/** Where a session's captures went, as a digest of the queue's destination and the key (the key never kept). */
export async function sessionDestination(
  config: Pick<Config, "baseUrl" | "account" | "user" | "apiKey">,
): Promise<string> {
  const to = destinationOf(config);
  return (await sha256Hex([to.url, to.account, to.user, config.apiKey].join("\n"))).slice(0, 32);
}
