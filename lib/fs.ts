/**
 * Private, atomic file operations: directories 0700, files 0600, writes by temp file + rename. The small ones
 * are Deno's synchronous calls behind a promise: each asynchronous call is a trip through Deno's thread pool
 * (the prompt hook makes a dozen), and an asynchronous file write loads Deno's streams module (see
 * docs/BENCHMARKS.md). Their errors are the same, and still arrive as rejections.
 */

import { dirName } from "./paths.ts";
import { isProcessGone } from "./process.ts";

const isWindows = Deno.build.os === "windows";

/** Runs a synchronous file operation as a promise: its result, or its error as a rejection. */
export function settled<T>(op: () => T): Promise<T> {
  try {
    return Promise.resolve(op());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Creates a directory (and parents) private to the user; tightens an existing one to 0700. */
export function ensurePrivateDir(path: string): Promise<void> {
  return settled(() => ensurePrivateDirSync(path));
}

/** {@link ensurePrivateDir}, synchronously. */
function ensurePrivateDirSync(path: string): void {
  Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  if (!isWindows) Deno.chmodSync(path, 0o700);
}

/** A unique sibling name for a temporary file. */
export function tempSibling(path: string): string {
  return `${path}.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/**
 * Writes a file so readers see the old or the new content, never a torn one (temp + rename; a killed
 * process cannot tear it). `durable` syncs the data before the rename and the directory after it, so a power
 * loss cannot leave an empty or torn file either (a rename can reach the disk before the data it names) nor
 * undo the write; the prompt state skips it because it sits on every prompt's path and is re-derivable.
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { mode?: number; privateDir?: boolean; durable?: boolean } = {},
): Promise<void> {
  return settled(() => writeFileAtomicSync(path, data, options));
}

/** {@link writeFileAtomic}, synchronously. */
export function writeFileAtomicSync(
  path: string,
  data: string | Uint8Array,
  options: { mode?: number; privateDir?: boolean; durable?: boolean },
): void {
  const mode = options.mode ?? 0o600;
  if (options.privateDir !== false) ensurePrivateDirSync(dirName(path));
  const tmp = tempSibling(path);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  try {
    const file = Deno.openSync(tmp, { write: true, createNew: true, mode });
    try {
      let written = 0;
      while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
      if (options.durable) file.syncSync();
    } finally {
      file.close();
    }
    if (!isWindows) Deno.chmodSync(tmp, mode);
    Deno.renameSync(tmp, path);
  } catch (error) {
    removeQuietly(tmp);
    throw error;
  }
  if (options.durable && !isWindows) syncDir(dirName(path));
}

/** Syncs a directory's entries to disk (a rename into it is durable once this returns). */
function syncDir(dir: string): void {
  const file = Deno.openSync(dir, { read: true });
  try {
    file.syncSync();
  } finally {
    file.close();
  }
}

/** Removes a file if it can ("not there" and every other failure alike are nothing to report). */
export function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch {
    // never created, or gone already
  }
}

/** Creates a file with complete content or not at all, never replacing one (temp + fsync + hard link). */
export async function createExclusive(path: string, text: string): Promise<void> {
  const tmp = tempSibling(path);
  try {
    const file = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
    try {
      const bytes = new TextEncoder().encode(text);
      for (let written = 0; written < bytes.length;) written += await file.write(bytes.subarray(written));
      await file.sync(); // what is queued must survive more than a killed process
    } finally {
      file.close();
    }
    await Deno.link(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/** Reads a text file; `undefined` when it does not exist. Other errors propagate. */
export function readTextIfExists(path: string): Promise<string | undefined> {
  return settled(() => readTextIfExistsSync(path));
}

/** {@link readTextIfExists}, synchronously. */
function readTextIfExistsSync(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Parses JSON, returning `undefined` instead of throwing. */
export function parseJsonOrUndefined(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether an error is "file exists". */
export function isAlreadyExists(error: unknown): boolean {
  return error instanceof Deno.errors.AlreadyExists;
}

/** Whether an error is "not found". */
export function isNotFound(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound;
}

/** A temp file this old was left by a write killed mid-way, whoever wrote it: an hour is far beyond any write. */
const TEMP_GRACE_MS = 3600_000;

/** {@link removeStaleTemps} with the usual grace, and at once what a process that is gone left. */
export function removeAbandonedTemps(dir: string): Promise<number> {
  return removeStaleTemps(dir, TEMP_GRACE_MS, { writerGone: isProcessGone });
}

/** The process a temp sibling's name says wrote it (`<name>.<pid>.<id>.tmp`, see {@link tempSibling}). */
function tempWriter(name: string): number | undefined {
  const m = /\.(\d+)\.[0-9a-f]{8}\.tmp$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * Deletes `*.tmp` files in `dir` that a write killed mid-way left behind: those older than `olderThanMs`, and
 * at once those whose writer is gone (`writerGone`, given the pid the name carries). Returns how many.
 */
export async function removeStaleTemps(
  dir: string,
  olderThanMs: number,
  options: { now?: number; writerGone?: (pid: number) => boolean } = {},
): Promise<number> {
  const now = options.now ?? Date.now();
  let removed = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".tmp")) continue;
      const path = `${dir}/${e.name}`;
      const writer = tempWriter(e.name);
      const gone = writer !== undefined && options.writerGone?.(writer) === true;
      const info = gone ? undefined : await Deno.stat(path).catch(() => undefined);
      if (gone || (info?.mtime && now - info.mtime.getTime() > olderThanMs)) {
        await Deno.remove(path).then(() => removed++, () => {});
      }
    }
  } catch {
    // no such directory
  }
  return removed;
}
