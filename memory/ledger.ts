/**
 * The local ledger: one JSON line per hook run that did something — a prompt's recall, a capture, a queue
 * replay — per Kimi session, under `<openviking home>/ledger/kimicode/<session>.jsonl` (0600 files in 0700
 * directories). Lines are appended with one write each (O_APPEND: lines of concurrent writers never mix),
 * under a shared lock that a compaction takes exclusively (a line is never written into a file being replaced);
 * a reader skips a line it cannot parse. Bounded: a session's file is cut to its newest half when it passes
 * its share of the total, and `pruneLedger` drops files past the age limit and the oldest ones past the total.
 * Entries hold URIs, counts, outcomes and a short redacted snippet of the prompt — never a key, never text from
 * inside `<private>` (the snippet is made by the caller from the redacted query).
 */

import * as z from "zod/mini";
import { ensurePrivateDir, isNotFound, writeFileAtomicSync } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";

/** Longest prompt snippet kept. */
const SNIPPET_CHARS = 80;
/** Most memories listed per prompt entry (the rest are counted). */
export const MAX_LISTED = 20;
/** A session's file may hold this share of the total budget (at least `MIN_SESSION_BYTES`). */
const SESSION_SHARE = 1 / 32;
const MIN_SESSION_BYTES = 64 * 1024;

const Memory = z.object({ uri: z.string(), score: z.optional(z.number()), chars: z.number() });
const Failure = z.object({
  kind: z.string(),
  status: z.number(),
  message: z.string(),
  location: z.optional(z.string()),
});
/** When a run started and how long it took: every entry has them. */
const Run = { at: z.number(), ms: z.number() };
/** What a write to OpenViking did, in messages. */
const Counts = { rejected: z.number(), cause: z.optional(Failure) };

/** What one prompt hook run did. */
const PromptEntrySchema = z.object({
  kind: z.literal("prompt"),
  ...Run,
  /** The start of the redacted query. */
  prompt: z.string(),
  /** Which recall stage answered: context, recall, find; reused (the same prompt again), none, or skipped. */
  path: z.string(),
  injected: z.array(Memory),
  /** Memories left out because this session already had them. */
  suppressed: z.array(z.string()),
  /** More injected/suppressed than listed. */
  more: z.optional(z.number()),
  profile: z.optional(z.string()),
  printedChars: z.number(),
  failure: z.optional(Failure),
});
export type PromptEntry = z.infer<typeof PromptEntrySchema>;

/** What one capture did. */
const CaptureEntrySchema = z.object({
  kind: z.literal("capture"),
  ...Run,
  ...Counts,
  event: z.string(),
  turns: z.number(),
  sent: z.number(),
  queued: z.number(),
  commit: z.string(),
  taskId: z.optional(z.string()),
});
export type CaptureEntry = z.infer<typeof CaptureEntrySchema>;

/** What one queue replay did for this session (or, in the `_replay` file, for every session). */
const ReplayEntrySchema = z.object({
  kind: z.literal("replay"),
  ...Run,
  ...Counts,
  replayed: z.number(),
  messages: z.number(),
  deferred: z.number(),
  commitTasks: z.array(z.object({ sessionId: z.string(), taskId: z.string() })),
  /** Messages sent per session (absent in lines of older versions). */
  delivered: z.optional(z.array(z.object({ sessionId: z.string(), messages: z.number() }))),
});
export type ReplayEntry = z.infer<typeof ReplayEntrySchema>;

/** One ledger line. */
export const LedgerEntrySchema = z.discriminatedUnion("kind", [
  PromptEntrySchema,
  CaptureEntrySchema,
  ReplayEntrySchema,
]);
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

/** Where replays that span sessions are recorded (a name no session id can have). */
export const REPLAY_FILE = "_replay";

/** Ledger settings (from the config). */
export interface LedgerLimits {
  /** All files together stay under this. */
  maxTotalBytes: number;
  /** Files untouched this long are dropped. */
  maxAgeDays: number;
}

/** The share of the total one session's file may hold. */
export function sessionBudget(limits: LedgerLimits): number {
  return Math.max(MIN_SESSION_BYTES, Math.floor(limits.maxTotalBytes * SESSION_SHARE));
}

/** The path of a session's ledger (`name` must already be file-name safe). */
export function ledgerFile(dir: string, name: string): string {
  return joinPath(dir, `${name}.jsonl`);
}

/** A short, single-line snippet of an (already redacted) prompt. Pure. */
export function snippet(text: string): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= SNIPPET_CHARS ? one : `${one.slice(0, SNIPPET_CHARS - 1)}…`;
}

/**
 * Appends one entry to `name`'s ledger, then cuts the file to its newest half if it outgrew its budget. Never
 * throws (the ledger is a record, not a dependency): returns false when it could not write.
 */
export async function appendLedger(
  dir: string,
  name: string,
  entry: LedgerEntry,
  limits: LedgerLimits,
): Promise<boolean> {
  const path = ledgerFile(dir, name);
  const line = new TextEncoder().encode(`${JSON.stringify(entry)}\n`);
  try {
    await ensurePrivateDir(dir);
    // Synchronous calls: a hook run's last few file operations, each spared a trip through the thread pool.
    for (let attempt = 0; attempt < 5; attempt++) {
      const file = Deno.openSync(path, { append: true, create: true, mode: 0o600 });
      let size: number;
      try {
        // Shared with other writers, exclusive to a compaction: a line is never written to a file being
        // replaced. Taken after opening, so a file compacted meanwhile (no longer at `path`) is opened again.
        file.lockSync(false);
        if (!sameFile(file.statSync(), Deno.statSync(path))) continue;
        file.writeSync(line); // one write: an O_APPEND line never mixes with another writer's
        size = file.statSync().size;
      } finally {
        file.close(); // releases the lock
      }
      if (size > sessionBudget(limits)) compact(path, Math.floor(sessionBudget(limits) / 2));
      return true;
    }
    return false;
  } catch {
    return false;
  }
}

/** Whether two stats are of one file (no inode numbers, as on Windows: taken to be). */
function sameFile(a: Deno.FileInfo, b: Deno.FileInfo): boolean {
  return a.ino === null || b.ino === null || (a.ino === b.ino && a.dev === b.dev);
}

/**
 * Keeps the newest whole lines of `path` within `keepBytes`: under the file's exclusive lock (no writer
 * appends meanwhile), written beside it and renamed over it. A file another compaction replaced is left.
 */
function compact(path: string, keepBytes: number): void {
  const file = Deno.openSync(path, { read: true });
  try {
    file.lockSync(true);
    if (!sameFile(file.statSync(), Deno.statSync(path))) return;
    const size = file.statSync().size;
    if (size <= keepBytes * 2) return; // another compaction got here first
    const bytes = new Uint8Array(size);
    let read = 0;
    while (read < size) {
      const n = file.readSync(bytes.subarray(read));
      if (n === null) break;
      read += n;
    }
    const text = new TextDecoder().decode(bytes.subarray(0, read));
    let start = Math.max(0, text.length - keepBytes);
    if (start > 0) start = text.indexOf("\n", start - 1) + 1;
    writeFileAtomicSync(path, text.slice(start), { privateDir: false });
  } finally {
    file.close();
  }
}

/** The parseable entries of `name`'s ledger, oldest first (missing file: none). */
export async function readLedger(dir: string, name: string): Promise<LedgerEntry[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(ledgerFile(dir, name));
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  const out: LedgerEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    try {
      const parsed = LedgerEntrySchema.safeParse(JSON.parse(line));
      if (parsed.success) out.push(parsed.data);
    } catch {
      // a torn or foreign line
    }
  }
  return out;
}

/** The ledger files in `dir`, newest first: `{name, mtime, size}`. */
export async function ledgerFiles(dir: string): Promise<{ name: string; mtime: number; size: number }[]> {
  const out: { name: string; mtime: number; size: number }[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".jsonl")) continue;
      const info = await Deno.stat(joinPath(dir, e.name)).catch(() => undefined);
      if (info) out.push({ name: e.name.slice(0, -6), mtime: info.mtime?.getTime() ?? 0, size: info.size });
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return out.sort((a, b) => b.mtime - a.mtime);
}

/** Drops ledger files untouched for `maxAgeDays`, then the oldest ones past `maxTotalBytes`. Returns how many. */
export async function pruneLedger(dir: string, limits: LedgerLimits, now = Date.now()): Promise<number> {
  let removed = 0;
  let total = 0;
  for (const f of await ledgerFiles(dir)) {
    const old = now - f.mtime > limits.maxAgeDays * 86_400_000;
    if (old || total + f.size > limits.maxTotalBytes) {
      if (await Deno.remove(ledgerFile(dir, f.name)).then(() => true, () => false)) removed++;
    } else total += f.size;
  }
  return removed;
}
