/** Private, atomic files: directories 0700, files 0600, writes by temp file + rename. */

import { dirName, joinPath } from "./paths.ts";

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
function ensurePrivateDirSync(path: string): void {
  Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  if (!isWindows) Deno.chmodSync(path, 0o700);
}
export const ensurePrivateDir = (path: string): Promise<void> => settled(() => ensurePrivateDirSync(path));

/** A unique sibling name for a temporary file: `<path>.<pid>.<id>.tmp`. */
const tempSibling = (path: string) => `${path}.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;

type WriteOptions = { mode?: number; privateDir?: boolean; durable?: boolean };
type Data = string | Uint8Array;

/**
 * Writes a file so readers see the old or the new content, never a torn one (temp + rename); mode 0600 by
 * default, the parent made 0700 unless `privateDir: false`; `durable` syncs the data and then the directory.
 */
export function writeFileAtomicSync(path: string, data: Data, options: WriteOptions = {}): void {
  if (options.privateDir !== false) ensurePrivateDirSync(dirName(path));
  const tmp = tempSibling(path);
  try {
    writeNew(tmp, data, options.mode ?? 0o600, options.durable);
    Deno.renameSync(tmp, path);
  } catch (error) {
    removeQuietly(tmp);
    throw error;
  }
  if (options.durable && !isWindows) {
    using dir = Deno.openSync(dirName(path), { read: true });
    dir.syncSync();
  }
}

export const writeFileAtomic = (path: string, data: Data, options?: WriteOptions): Promise<void> =>
  settled(() => writeFileAtomicSync(path, data, options));

/** Creates `path` (never over a file) with `data` whole and `mode`; synced to disk when `durable`. */
function writeNew(path: string, data: Data, mode: number, durable = false): void {
  {
    using file = Deno.openSync(path, { write: true, createNew: true, mode });
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    for (let written = 0; written < bytes.length;) written += file.writeSync(bytes.subarray(written));
    if (durable) file.syncSync();
  }
  if (!isWindows) Deno.chmodSync(path, mode);
}

/**
 * Opens `path` to append (created `mode`); refuses anything but a regular file of ours (never follows a link).
 * Undefined when the path was replaced while it was opened: open it again.
 */
export function openAppendSync(path: string, mode = 0o600): Deno.FsFile | undefined {
  const notOurs = (i?: Deno.FileInfo) => i && !(i.isFile && i.uid === Deno.statSync(dirName(path)).uid);
  const refuse = () => new Error(`${path} is not a regular file of ours; not writing to it`);
  if (notOurs(ifExists(() => Deno.lstatSync(path)))) throw refuse();
  const file = Deno.openSync(path, { append: true, create: true, mode });
  const [held, now] = [file.statSync(), ifExists(() => Deno.lstatSync(path))];
  if (now && !notOurs(now) && held.ino === now.ino && held.dev === now.dev) return file;
  file.close(); // the path was swapped while it was opened
  if (notOurs(now)) throw refuse();
  return undefined;
}

/** A synchronous call's result; `undefined` when it throws "not found" (other errors propagate). */
function ifExists<T>(op: () => T): T | undefined {
  try {
    return op();
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** Removes a file if it can (never created, or gone already: nothing to report). */
export function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch { /* nothing to report */ }
}

/** Creates a file with complete, synced content or not at all, never replacing one (temp + fsync + link). */
export async function createExclusive(path: string, text: string): Promise<void> {
  const tmp = tempSibling(path);
  try {
    writeNew(tmp, text, 0o600, true);
    await Deno.link(tmp, path);
  } finally {
    removeQuietly(tmp);
  }
}

/** The most a config, credential or state file may hold: a bigger one is refused unread. */
export const SMALL_FILE_MAX_BYTES = 1 << 20;

/**
 * The text of the regular file at `path` (a link followed); `undefined` when it does not exist. Throws for a
 * non-regular file (never opened: it can block) or one over `maxBytes`.
 */
export function readRegularTextSync(path: string, maxBytes = Infinity): string | undefined {
  const info = ifExists(() => Deno.statSync(path));
  if (!info) return undefined;
  if (!info.isFile) throw new Error("not a regular file (a FIFO, device or directory is never read)");
  if (info.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes; not read`);
  return Deno.readTextFileSync(path);
}

export const readTextIfExists = (path: string, maxBytes = Infinity): Promise<string | undefined> =>
  settled(() => readRegularTextSync(path, maxBytes));

/** Parses JSON, returning `undefined` instead of throwing. */
export function parseJsonOrUndefined(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The JSON value of the small file at `path`; undefined when it is missing, unreadable, too big or not JSON. */
export const readJson = (path: string): Promise<unknown> =>
  readTextIfExists(path, SMALL_FILE_MAX_BYTES).then(parseJsonOrUndefined, () => undefined);

/** The entries of directory `dir`; none when it does not exist (other errors are thrown). */
export function listDir(dir: string): Promise<Deno.DirEntry[]> {
  return Array.fromAsync(Deno.readDir(dir)).catch((error) => isNotFound(error) ? [] : Promise.reject(error));
}

export const isAlreadyExists = (error: unknown): boolean => error instanceof Deno.errors.AlreadyExists;
export const isNotFound = (error: unknown): boolean => error instanceof Deno.errors.NotFound;

/** Whether process `pid` is certainly gone (a harmless SIGCONT answers "no such process"). */
function isProcessGone(pid: number): boolean {
  if (pid <= 0 || pid === Deno.pid || isWindows) return false;
  try {
    Deno.kill(pid, "SIGCONT");
    return false;
  } catch (error) {
    return isNotFound(error);
  }
}

/** A kind of file a sweep removes: its names, the age past which one goes (0: at once), how it goes. */
type Aged = { name: RegExp; ageMs: (name: string) => number; remove?: (path: string) => Promise<unknown> };

/** Removes the files of kind `k` in `dir` untouched for its age at `now`; how many went. */
export async function removeAged(dir: string, k: Aged, now = Date.now()): Promise<number> {
  let removed = 0;
  for (const e of await listDir(dir).catch(() => [])) {
    const [age, path] = [e.isFile && k.name.test(e.name) ? k.ageMs(e.name) : Infinity, joinPath(dir, e.name)];
    const mtime = age > 0 ? (await Deno.lstat(path).catch(() => undefined))?.mtime?.getTime() : -Infinity;
    if (age === Infinity || mtime === undefined || now - mtime < age) continue;
    await (k.remove ?? Deno.remove)(path).then(() => removed++, () => {});
  }
  return removed;
}

/** The `*.tmp` files of killed writes: over an hour old, or at once when their writer is gone. */
const TEMPS: Aged = {
  name: /\.tmp$/,
  ageMs: (n) => isProcessGone(Number(/\.(\d+)\.[0-9a-f]{8}\.tmp$/.exec(n)?.[1] ?? 0)) ? 0 : 3600_000,
};

/** Deletes the temp files of killed writes in `dir`; how many. */
export const removeAbandonedTemps = (dir: string): Promise<number> => removeAged(dir, TEMPS);

/** Why `dir` cannot hold our files (found by writing a probe), or ""; `removeCreated` leaves no new directory. */
export async function unwritableReason(
  dir: string,
  options: { removeCreated?: boolean } = {},
): Promise<string> {
  const created: string[] = [];
  for (let d = dir; options.removeCreated && d && d !== dirName(d); d = dirName(d)) {
    if (await Deno.lstat(d).then(() => true, (error) => !isNotFound(error))) break;
    created.push(d);
  }
  const probe = tempSibling(joinPath(dir, ".write-probe"));
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await Deno.writeFile(probe, new Uint8Array([10]), { createNew: true, mode: 0o600 });
    return "";
  } catch (error) {
    return `cannot write ${dir}: ${(error as Error).message}`;
  } finally {
    removeQuietly(probe);
    for (const d of created) await Deno.remove(d).catch(() => {});
  }
}
