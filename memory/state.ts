/** Per-session hook state: one private JSON file per Kimi session, read-modify-written under a lock. */

import * as z from "zod/mini";
import { FAILURE_KINDS } from "../openviking/client.ts";
import { isNotFound, parseJsonOrUndefined, readTextIfExists, settled, writeFileAtomic } from "../lib/fs.ts";
import { joinPath, safeId } from "../lib/paths.ts";
import { type LockOptions, type LockResult, withLock } from "../lib/lock.ts";
import { RecallSchema } from "./recall.ts";
import { isRecord } from "../lib/parsed.ts";

/** Where the journal reader stopped: a byte offset plus what identifies the file it belongs to. */
const CursorSchema = z.object({
  path: z.string(),
  offset: z.int().check(z.nonnegative()),
  /** Device/inode (or "" where unknown) of the file when the offset was taken. */
  fileId: z.string(),
  /** Hash of the bytes just before `offset`, to notice a rewritten file of the same length. */
  tailHash: z.string(),
  /** Position the next turn after `offset` has among the journal's prompts. */
  nextIndex: z.int().check(z.nonnegative()),
});
export type Cursor = z.infer<typeof CursorSchema>;

/** Everything remembered about one session between hook runs. */
export const SessionStateSchema = z.object({
  version: z.catch(z.literal(1), 1),
  lastSessionStartAt: z.catch(z.optional(z.number()), undefined),
  profileInjected: z.catch(z.boolean(), false),
  promptHash: z.catch(z.optional(z.string()), undefined),
  promptEventId: z.catch(z.optional(z.string()), undefined),
  promptAt: z.catch(z.optional(z.number()), undefined),
  /**
   * What recall found for the last prompt (`promptHash`), kept so the same prompt again asks the server
   * nothing; null while that prompt's recall is still running.
   */
  recall: z.catch(z.optional(z.nullable(RecallSchema)), undefined),
  /**
   * URIs already printed into this session's context, and `text:` keys of printed lines without one
   * (hooks/inject.ts): never printed again; the URIs are sent as `exclude_uris`.
   */
  injectedUris: z.catch(z.array(z.string()), []),
  /** A compaction dropped the session's injections: the profile printed next says it comes again. */
  compacted: z.catch(z.boolean(), false),
  /** The outage (its start, runtime/breaker.ts) this session was told of: "memory paused" once per outage. */
  pausedNotice: z.catch(z.optional(z.number()), undefined),
  /**
   * Prompt state: the prompts the prompt hook saw, prepared like captured text (redacted, bounded), for a
   * capture that cannot find the journal (hooks/prompt-fallback.ts).
   */
  fallbackPrompts: z.catch(z.array(z.object({ text: z.string(), at: z.number() })), []),
  capturedKeys: z.catch(z.array(z.string()), []),
  capturedSinceCommit: z.catch(z.int().check(z.nonnegative()), 0),
  cursor: z.catch(z.optional(CursorSchema), undefined),
  /** Every turn whose index is below this is fully acknowledged (survives a journal rewrite). */
  ackedBelow: z.catch(z.int().check(z.nonnegative()), 0),
  /** Capture keys whose request was about to go out when the last run stopped without recording its outcome. */
  inflight: z.catch(z.optional(z.object({ keys: z.array(z.string()), at: z.number() })), undefined),
  /**
   * The file was found damaged and set aside at `aside`: what the session already holds must be asked before
   * anything is sent (the capture recovers its cursor from the server, hooks/capture.ts).
   */
  recover: z.catch(z.optional(z.object({ aside: z.string(), at: z.number() })), undefined),
  /** The last capture key acknowledged: names the commit that covers everything up to it. */
  lastAckedKey: z.catch(z.optional(z.string()), undefined),
  /** What the last finished capture did (for doctor and status). */
  lastCapture: z.catch(
    z.optional(z.object({
      at: z.number(),
      event: z.string(),
      sent: z.number(),
      queued: z.number(),
      rejected: z.number(),
      /**
       * Why messages were queued or refused (a failure kind, or "local": our own state or queue), its words and
       * where a redirect pointed (advice.ts `Cause`).
       */
      cause: z.optional(
        z.object({
          kind: z.enum([...FAILURE_KINDS, "local"]),
          status: z.number(),
          message: z.string(),
          location: z.optional(z.string()),
        }),
      ),
      commit: z.optional(z.string()),
      taskId: z.optional(z.string()),
    })),
    undefined,
  ),
  lastCaptureAt: z.catch(z.optional(z.number()), undefined),
  lastCaptureEvent: z.catch(z.optional(z.string()), undefined),
  protocolVersion: z.catch(z.optional(z.string()), undefined),
});
export type SessionState = z.infer<typeof SessionStateSchema>;

/** A fresh state. */
export function emptyState(): SessionState {
  return {
    version: 1,
    profileInjected: false,
    injectedUris: [],
    compacted: false,
    fallbackPrompts: [],
    capturedKeys: [],
    capturedSinceCommit: 0,
    ackedBelow: 0,
  };
}

/** Largest number of acknowledged capture keys kept per session. */
export const MAX_CAPTURED_KEYS = 1000;

/** Largest number of injected URIs remembered per session (the newest 200 are sent as `exclude_uris`). */
const MAX_INJECTED_URIS = 1000;

/** The state file and lock directory of one session. */
export interface StatePaths {
  file: string;
  lock: string;
}

/** Paths of a session's state inside `dir` (the id is made safe first). */
export async function statePaths(dir: string, sessionId: string): Promise<StatePaths> {
  const file = joinPath(dir, `${await safeId(sessionId)}.json`);
  return { file, lock: `${file}.lock` };
}

/** Reads a session's state; a missing or unreadable file gives a fresh state. */
export async function readState(file: string): Promise<SessionState> {
  const raw = parseJsonOrUndefined(await readTextIfExists(file).catch(() => undefined));
  const parsed = SessionStateSchema.safeParse(raw);
  return parsed.success ? parsed.data : emptyState();
}

/**
 * Reads a session's state under its lock. A path that holds no JSON object (an empty, torn or garbage file)
 * or is no file at all (a directory in the way) is damaged: it is set aside as `<file>.damaged-<time>`, kept
 * for the user, and replaced by a fresh state that says so (`recover`) — written before the damaged one goes,
 * so a crash in between finds the damaged file again.
 */
async function loadState(file: string, durable: boolean): Promise<SessionState> {
  const info = await settled(() => Deno.lstatSync(file)).catch((error) => {
    if (isNotFound(error)) return undefined;
    throw error;
  });
  if (!info) return emptyState();
  const bytes = info.isFile ? await settled(() => Deno.readFileSync(file)) : undefined;
  const raw = parseJsonOrUndefined(bytes && new TextDecoder().decode(bytes));
  if (isRecord(raw)) return SessionStateSchema.parse(raw);
  const at = Date.now();
  const aside = `${file}.damaged-${at}`;
  const state: SessionState = { ...emptyState(), recover: { aside, at } };
  if (bytes === undefined) await Deno.rename(file, aside); // not a file: nothing to copy, it moves
  else await writeFileAtomic(aside, bytes, { durable });
  await writeState(file, state, durable);
  return state;
}

/**
 * Writes a session's state atomically (0600 in a 0700 directory); `durable` (the capture state) syncs it to
 * disk before it replaces the old one, so a crash leaves the old state or the new one, never a torn file.
 */
export async function writeState(file: string, state: SessionState, durable = false): Promise<void> {
  const trimmed = {
    ...state,
    capturedKeys: state.capturedKeys.slice(-MAX_CAPTURED_KEYS),
    injectedUris: state.injectedUris.slice(-MAX_INJECTED_URIS),
  };
  await writeFileAtomic(file, `${JSON.stringify(trimmed)}\n`, { durable });
}

/** Writes the state under the lock `updateState` holds. */
export type SaveState = (state: SessionState) => Promise<void>;

/**
 * Read-modify-write of a session's state under its lock. `update` gets the state and a `save` for progress
 * written before it returns; it returns the new state (or undefined to keep it). `durable`: see `writeState`.
 */
export async function updateState<T>(
  paths: StatePaths,
  update: (state: SessionState, save: SaveState) => Promise<{ state?: SessionState; value: T }>,
  options: LockOptions & { durable?: boolean } = {},
): Promise<LockResult<T>> {
  const durable = options.durable ?? false;
  return await withLock(paths.lock, async () => {
    const save: SaveState = (state) => writeState(paths.file, state, durable);
    const { state, value } = await update(await loadState(paths.file, durable), save);
    if (state) await save(state);
    return value;
  }, options);
}
