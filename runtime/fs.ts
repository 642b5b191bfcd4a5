/** Private, atomic file operations: directories 0700, files 0600, writes by temp file + rename. */

import { dirName } from "./paths.ts";

const isWindows = Deno.build.os === "windows";

/** Creates a directory (and parents) private to the user; tightens an existing one to 0700. */
export async function ensurePrivateDir(path: string): Promise<void> {
  await Deno.mkdir(path, { recursive: true, mode: 0o700 });
  if (!isWindows) await Deno.chmod(path, 0o700);
}

/** A unique sibling name for a temporary file. */
export function tempSibling(path: string): string {
  return `${path}.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
}

/**
 * Writes a file so readers see the old or the new content, never a torn one (temp + rename; a killed
 * process cannot tear it). `durable` adds an fsync before the rename, for data that must survive a power
 * loss too; hook state skips it because it sits on every prompt's path and is re-derivable.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { mode?: number; privateDir?: boolean; durable?: boolean } = {},
): Promise<void> {
  const mode = options.mode ?? 0o600;
  if (options.privateDir !== false) await ensurePrivateDir(dirName(path));
  const tmp = tempSibling(path);
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  try {
    const file = await Deno.open(tmp, { write: true, createNew: true, mode });
    try {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      if (options.durable) await file.sync();
    } finally {
      file.close();
    }
    if (!isWindows) await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (error) {
    await Deno.remove(tmp).catch(() => {});
    throw error;
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
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
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

/** Deletes `*.tmp` files in `dir` older than `olderThanMs`: what a write killed mid-way leaves behind. */
export async function removeStaleTemps(dir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let removed = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile || !e.name.endsWith(".tmp")) continue;
      const path = `${dir}/${e.name}`;
      const info = await Deno.stat(path).catch(() => undefined);
      if (info?.mtime && now - info.mtime.getTime() > olderThanMs) {
        await Deno.remove(path).then(() => removed++, () => {});
      }
    }
  } catch {
    // no such directory
  }
  return removed;
}
