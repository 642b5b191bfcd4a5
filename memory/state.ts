/** Per-session hook state: one private JSON file per Kimi session, read-modify-written under its lock. */

import * as z from "zod/mini";
import { CauseSchema } from "../openviking/advice.ts";
import {
  isNotFound,
  parseJsonOrUndefined,
  readTextIfExists,
  removeAged,
  settled,
  writeFileAtomic,
} from "../lib/fs.ts";
import { baseName, dirName, joinPath, safeId } from "../lib/paths.ts";
import { type LockOptions, type LockResult, withLock } from "../lib/lock.ts";
import { RecallSchema } from "./recall.ts";
import { MAX_PRINTS } from "../lib/redact.ts";
import { ReadCursorSchema } from "../kimi/journal/turns.ts";
import { isRecord, tolerant } from "../lib/parsed.ts";
import type { Budget, OpenVikingClient } from "../openviking/client.ts";
import {
  commitSession,
  type Destination,
  DestinationSchema,
  hasUnsent,
  type SessionQueue,
} from "../openviking/queue.ts";

/** A field read as `fallback` when missing or of another shape (`tolerant`: as absent). */
const or = <T extends z.ZodMiniType>(schema: T, fallback: z.output<T>) => z.catch(schema, fallback);

/** Where the journal reader stopped in the journal at `path`, and the index of the next turn after it. */
const CursorSchema = z.extend(ReadCursorSchema, {
  path: z.string(),
  nextIndex: z.int().check(z.nonnegative()),
});
export type Cursor = z.infer<typeof CursorSchema>;

/** Everything remembered of one session between hook runs (the prompt's and capture's files share it). */
export const SessionStateSchema = z.object({
  version: or(z.literal(1), 1),
  lastSessionStartAt: tolerant(z.number()),
  promptHash: tolerant(z.string()),
  promptAt: tolerant(z.number()),
  /** The last prompt's recall (null while it runs). */
  recall: tolerant(z.nullable(RecallSchema)),
  /** URIs (and `text:` keys) printed into the session: never printed again. */
  injectedUris: or(z.array(z.string()), []),
  pausedNotice: tolerant(z.number()),
  /** The key refusal the session was told of: its status and `sessionDestination`. */
  refusedNotice: tolerant(z.string()),
  /** The prompts the prompt hook saw, for a capture without a journal. */
  fallbackPrompts: or(z.array(z.object({ text: z.string(), at: z.number() })), []),
  /** Kept prompts seen before this are settled (a state's last capture when it first met the settling keys). */
  promptsFrom: tolerant(z.number()),
  capturedKeys: or(z.array(z.string()), []),
  /** The prints of the secrets captures found (lib/redact.ts `secretPrint`, never a secret), the newest last. */
  secretPrints: or(z.array(z.string()), []),
  capturedSinceCommit: or(z.int().check(z.nonnegative()), 0),
  cursor: tolerant(CursorSchema),
  /** Every turn below this index is acknowledged (survives a journal rewrite). */
  ackedBelow: or(z.int().check(z.nonnegative()), 0),
  /** Keys whose request's outcome was not recorded; `askFrom`: from when the server's answer counts. */
  inflight: tolerant(
    z.object({ keys: z.array(z.string()), at: z.number(), askFrom: z.optional(z.number()) }),
  ),
  /** Damaged (set aside at `aside`) or its cursor named another journal: ask the server before sending. */
  recover: tolerant(z.object({ aside: z.optional(z.string()), at: z.number() })),
  ovSession: tolerant(z.string()),
  /** Where its captures went: a digest of server, identity and key (`sessionDestination`); idle commits use it. */
  destination: tolerant(z.string()),
  /** That destination (server, identity, key digest and owner; never the key): where a purge queues its commit. */
  to: tolerant(DestinationSchema),
  /** Captures left uncommitted at destinations the session's captures went to before: each one's to commit. */
  owed: or(
    z.array(z.object({
      destination: z.string(),
      to: z.optional(DestinationSchema),
      captured: z.int().check(z.positive()),
      lastAckedKey: z.optional(z.string()),
      at: z.number(),
    })),
    [],
  ),
  lastAckedKey: tolerant(z.string()),
  lastCapture: tolerant(z.object({
    at: z.number(),
    event: z.string(),
    sent: z.number(),
    queued: z.number(),
    rejected: z.number(),
    cause: z.optional(CauseSchema),
    commit: z.optional(z.string()),
    taskId: z.optional(z.string()),
  })),
  lastCaptureAt: tolerant(z.number()),
  protocolVersion: tolerant(z.string()),
});
export type SessionState = z.infer<typeof SessionStateSchema>;

export const emptyState = (): SessionState => SessionStateSchema.parse({});

export const MAX_CAPTURED_KEYS = 1000;
const MAX_INJECTED_URIS = 1000;

export type StatePaths = { file: string; lock: string };

/** The paths of `sessionId`'s capture or prompt state in `dir` (the id made safe first). */
export async function statePaths(
  dir: string,
  sessionId: string,
  kind: "capture" | "prompt" = "capture",
): Promise<StatePaths> {
  const file = joinPath(dir, `${await safeId(sessionId)}${kind === "prompt" ? ".prompt" : ""}.json`);
  return { file, lock: `${file}.lock` };
}

/** A state file larger than this is damaged (never read whole): a state holds bounded lists. */
const STATE_MAX_BYTES = 4 << 20;

/** A session's state without the lock: fresh when missing, unreadable, too large or not a regular file. */
export async function readState(file: string): Promise<SessionState> {
  const regular = await Deno.lstat(file).then((i) => i.isFile, () => false);
  const text = regular ? await readTextIfExists(file, STATE_MAX_BYTES).catch(() => undefined) : undefined;
  const parsed = SessionStateSchema.safeParse(parseJsonOrUndefined(text));
  return parsed.success ? bounded(parsed.data) : emptyState();
}

const bounded = (state: SessionState): SessionState =>
  state.secretPrints.length > MAX_PRINTS
    ? { ...state, secretPrints: state.secretPrints.slice(-MAX_PRINTS) }
    : state;

/** The most capture states whose secret prints {@link machinePrints} takes: the newest by modification time. */
export const PRINT_STATES = 32;
/** A directory stamp younger than this may hide a change made in the same clock tick: read again. */
const STAMP_SETTLE_MS = 2000;

/** What {@link machinePrints} last found: the directory's stamp, each state file's stamp and prints, their union. */
const printed = {
  stamp: "",
  settled: false,
  files: new Map<string, { stamp: string; prints: readonly string[] }>(),
  union: new Set<string>() as ReadonlySet<string>,
};

function orUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

const stampOf = (info: Deno.FileInfo) => `${info.ino}:${info.size}:${info.mtime?.getTime()}`;

/**
 * The secret prints of the {@link PRINT_STATES} newest capture states in `dir` (a session as new as the newer of
 * its two states); read again only when the directory changed, and then only the files that changed.
 */
export async function machinePrints(dir: string): Promise<ReadonlySet<string>> {
  const info = dir ? await Deno.stat(dir).catch(() => undefined) : undefined;
  if (!info?.isDirectory) return new Set();
  const stamp = `${dir}:${stampOf(info)}`;
  if (printed.stamp === stamp && printed.settled) return printed.union;
  const listedAt = Date.now();
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const listed = new Set(names);
  // Sync: a promise apiece costs more than the call.
  const lstat = (file: string) => orUndefined(() => Deno.lstatSync(file));
  const newest = names.filter((n) => n.endsWith(".json") && !n.endsWith(".prompt.json")).flatMap((name) => {
    const [file, prompt] = [joinPath(dir, name), `${name.slice(0, -5)}.prompt.json`];
    const at = lstat(file);
    // A resumed session is as new as its prompt state: its capture state is written at its first capture only.
    const asked = listed.has(prompt) ? lstat(joinPath(dir, prompt))?.mtime?.getTime() ?? 0 : 0;
    return at?.isFile ? [{ file, stamp: stampOf(at), mtime: Math.max(at.mtime?.getTime() ?? 0, asked) }] : [];
  }).sort((a, b) => b.mtime - a.mtime);
  const files = new Map<string, { stamp: string; prints: readonly string[] }>();
  for (const s of newest.slice(0, PRINT_STATES)) {
    const known = printed.files.get(s.file);
    files.set(
      s.file,
      known?.stamp === s.stamp ? known : { stamp: s.stamp, prints: (await readState(s.file)).secretPrints },
    );
  }
  const union = new Set([...files.values()].flatMap((f) => f.prints));
  const same = union.size === printed.union.size && [...union].every((p) => printed.union.has(p));
  Object.assign(printed, {
    stamp,
    settled: listedAt - (info.mtime?.getTime() ?? listedAt) >= STAMP_SETTLE_MS,
    files,
    union: same ? printed.union : union, // the same set while nothing changed: what redaction parsed of it stays
  });
  return printed.union;
}

/** The state under the lock; a damaged one is kept at `<file>.damaged-<time>` and a fresh `recover` state written. */
async function loadState(file: string, durable: boolean): Promise<SessionState> {
  const info = await settled(() => Deno.lstatSync(file)).catch((error) => {
    if (isNotFound(error)) return undefined;
    throw error;
  });
  // A pruned session resumed (pruneStates): the server is asked what it holds before anything is sent.
  if (!info) {
    return !file.endsWith(".prompt.json") && await wasPruned(file)
      ? { ...emptyState(), recover: { at: Date.now() } }
      : emptyState();
  }
  const bytes = info.isFile && info.size <= STATE_MAX_BYTES
    ? await settled(() => Deno.readFileSync(file))
    : undefined;
  const raw = parseJsonOrUndefined(bytes && new TextDecoder().decode(bytes));
  if (isRecord(raw)) return bounded(SessionStateSchema.parse(raw));
  const at = Date.now();
  const aside = `${file}.damaged-${at}`;
  const state = { ...emptyState(), recover: { aside, at } };
  if (bytes === undefined) await Deno.rename(file, aside);
  else await writeFileAtomic(aside, bytes, { durable });
  await writeState(file, state, durable);
  return state;
}

/** Writes a session's state atomically, 0600 in a 0700 directory; `durable` syncs it before the rename. */
export async function writeState(file: string, state: SessionState, durable = false): Promise<void> {
  const capturedKeys = state.capturedKeys.slice(-MAX_CAPTURED_KEYS);
  const trimmed = { ...state, capturedKeys, injectedUris: state.injectedUris.slice(-MAX_INJECTED_URIS) };
  await writeFileAtomic(file, `${JSON.stringify(trimmed)}\n`, { durable });
}

export type SaveState = (state: SessionState) => Promise<void>;

/**
 * Read-modify-write under the session's lock: `update` gets the state and a `save`, returns the new state and a
 * value. A save after the state's directory went (a purge meanwhile) throws instead of making it again.
 */
export async function updateState<T>(
  paths: StatePaths,
  update: (state: SessionState, save: SaveState) => Promise<{ state?: SessionState; value: T }>,
  options: LockOptions & { durable?: boolean } = {},
): Promise<LockResult<T>> {
  const durable = options.durable ?? false;
  return await withLock(paths.lock, async () => {
    const save: SaveState = async (state) => {
      if (!await Deno.stat(dirName(paths.file)).then(() => true, () => false)) {
        throw new Error(`${dirName(paths.file)} was deleted (uninstall --purge): nothing more is kept`);
      }
      await writeState(paths.file, state, durable);
    };
    const { state, value } = await update(await loadState(paths.file, durable), save);
    if (state) await save(state);
    return value;
  }, options);
}

/** Below this much budget no request is sent: a commit is queued. */
export const MIN_COMMIT_MS = 250;

/** One destination's captures a session has not committed: its own (`destination` none: before they were kept). */
export type Uncommitted = Omit<SessionState["owed"][number], "destination" | "at"> & {
  destination?: string;
  at?: number;
};

/** `s`'s uncommitted captures per destination: its own destination's first, then those it owes others. */
export const uncommitted = (s: SessionState): Uncommitted[] => [
  ...(s.capturedSinceCommit > 0 ? [{ ...s, captured: s.capturedSinceCommit, at: s.lastCaptureAt }] : []),
  ...s.owed,
];

/** Whether captures `u` are `here`'s to commit (none kept: whoever's they are). */
export const isFor = (u: Uncommitted, here: string) => u.destination === undefined || u.destination === here;

/** `s` turned to destination `here` (`to`): others' uncommitted captures owed to them, what it owed `here` its own. */
export function capturingFor(s: SessionState, here: string, to: Destination): SessionState {
  const all = uncommitted(s);
  const owed = all.filter((u) => !isFor(u, here)).map((u) => ({
    ...{ captured: u.captured, to: u.to, lastAckedKey: u.lastAckedKey },
    ...{ destination: u.destination!, at: u.at ?? Date.now() },
  }));
  const captured = all.filter((u) => isFor(u, here)).reduce((n, u) => n + u.captured, 0);
  return { ...s, destination: here, to, capturedSinceCommit: captured, owed };
}

/**
 * Commits what session `sid` (state `s`, its lock held) captured for destination `here` since its last commit
 * there: queued behind its unsent writes or short of budget; failed (or nothing `here`'s), the state is kept.
 */
export async function commitCaptured(
  client: OpenVikingClient,
  sid: string,
  s: SessionState,
  here: string,
  options: { budget: Budget; pendingDir: string; queue?: SessionQueue },
): Promise<{ state: SessionState; outcome: Awaited<ReturnType<typeof commitSession>> }> {
  const part = uncommitted(s).find((u) => isFor(u, here));
  if (!part) return { state: s, outcome: { kind: "failed", message: "nothing here waits for a commit" } };
  const queueOnly = options.budget.remaining() < MIN_COMMIT_MS || await hasUnsent(options.pendingDir, sid);
  const outcome = await commitSession(client, sid, { ...options, key: commitKey(sid, part), queueOnly });
  return { state: outcome.kind === "failed" ? s : committed(s, part), outcome };
}

/** The name of the commit of captures `u` of session `sid`: the session and the last message it covers. */
export const commitKey = (sid: string, u: Uncommitted): string => `${sid}:${u.lastAckedKey ?? "none"}`;

/** `s` once captures `part` (one of `uncommitted(s)`) are committed, or their commit queued or kept. */
export function committed(s: SessionState, part: Uncommitted): SessionState {
  const owed = s.owed.filter((u) => u !== part);
  return owed.length === s.owed.length ? { ...s, capturedSinceCommit: 0 } : { ...s, owed };
}

/** The pruned list's file in a state directory, and the most names it keeps (a name is some 60 bytes). */
const [PRUNED_FILE, MAX_PRUNED] = ["pruned.txt", 2048];

async function prunedNames(dir: string): Promise<string[]> {
  const text = await readTextIfExists(joinPath(dir, PRUNED_FILE), MAX_PRUNED * 256).catch(() => undefined);
  return (text ?? "").split("\n").filter((l) => l !== "");
}

/** Whether the capture state `file` was pruned: a session resumed after that asks the server what it holds. */
async function wasPruned(file: string): Promise<boolean> {
  return (await prunedNames(dirName(file))).includes(baseName(file));
}

async function recordPruned(dir: string, names: readonly string[]): Promise<void> {
  if (!names.length) return;
  const kept = [...(await prunedNames(dir)).filter((n) => !names.includes(n)), ...names].slice(-MAX_PRUNED);
  await writeFileAtomic(joinPath(dir, PRUNED_FILE), `${kept.join("\n")}\n`);
}

/** A session's states untouched this long (its capture's and its prompt's) are pruned when they owe nothing. */
export const STATE_RETENTION_MS = 30 * 86_400_000;

type Session = { name: string; files: string[]; mtime: number };

function sessionsIn(dir: string, names: readonly string[]): Session[] {
  const by = new Map<string, Session>();
  for (const n of names) {
    const base = n.endsWith(".prompt.json") ? n.slice(0, -12) : n.endsWith(".json") ? n.slice(0, -5) : "";
    if (!base) continue;
    const info = orUndefined(() => Deno.lstatSync(joinPath(dir, n)));
    if (!info?.isFile) continue;
    const s = by.get(base) ?? { name: `${base}.json`, files: [], mtime: 0 };
    by.set(base, { ...s, files: [...s.files, n], mtime: Math.max(s.mtime, info.mtime?.getTime() ?? 0) });
  }
  return [...by.values()].sort((a, b) => b.mtime - a.mtime);
}

/** What killed runs left in a state directory: a lock no one holds (it goes on release), a damaged state set aside. */
const removeStray = (p: string) =>
  p.endsWith(".lock") ? withLock(p, async () => {}, { waitMs: 0, makeDir: false }) : Deno.remove(p);
const STRAYS = { name: /\.lock$|\.damaged-\d+$/, ageMs: () => STATE_RETENTION_MS, remove: removeStray };

/**
 * Removes the states of sessions untouched {@link STATE_RETENTION_MS} that owe nothing (never the {@link PRINT_STATES}
 * newest nor a locked one), listed as pruned first, and the strays of killed runs; how many sessions went.
 */
export async function pruneStates(dir: string, now = Date.now()): Promise<number> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const old = sessionsIn(dir, names).slice(PRINT_STATES).filter((s) => now - s.mtime >= STATE_RETENTION_MS);
  const owing = async (s: Session) => {
    const state = await readState(joinPath(dir, s.name));
    const kept = (await readState(joinPath(dir, s.name.replace(/\.json$/, ".prompt.json")))).fallbackPrompts;
    return uncommitted(state).length > 0 || (state.inflight?.keys.length ?? 0) > 0 || kept.length > 0;
  };
  await removeAged(dir, STRAYS, now);
  const candidates: Session[] = [];
  for (const s of old) if (!await owing(s)) candidates.push(s);
  await recordPruned(dir, candidates.map((s) => s.name)); // listed before any goes: a resume then asks
  let pruned = 0;
  for (const s of candidates) {
    const held = await withLock(`${joinPath(dir, s.name)}.lock`, async () => {
      if (await owing(s) || sessionsIn(dir, s.files)[0]?.mtime !== s.mtime) return false; // touched meanwhile
      for (const f of s.files) await Deno.remove(joinPath(dir, f)).catch(() => undefined);
      return true;
    }, { waitMs: 0, makeDir: false }).catch(() => ({ acquired: false as const }));
    if (held.acquired && held.value) pruned++;
  }
  return pruned;
}
