/**
 * Reading and writing the files install / uninstall change, all or nothing. Reads are exact (a BOM kept,
 * text that is not UTF-8 refused rather than mangled). `checkChange` finds while planning everything a write
 * needs — where a symlink points, that the file and its backup are files, that its directory can be made —
 * so a refusal comes before the first write. `applyChange` re-checks that nobody changed the file since it was
 * read, keeps a backup of the previous content (a deleted file's too) unless the planner says all of it was ours
 * (install/backup.ts), writes temp + fsync + rename (old or new content,
 * never torn), mode 0600, and returns how to take it all back (the previous bytes and mode, the previous
 * backup, the directories it made). Parent directories that exist are left as they are; new ones are 0700. A symlinked
 * file is written through the link.
 */

import { writeFileAtomic } from "../lib/fs.ts";
import { dirName, isAbsolutePath, joinPath } from "../lib/paths.ts";

/** A planned change of one text file (`undefined` = absent). */
export interface FileChange {
  path: string;
  before: string | undefined;
  after: string | undefined;
  /**
   * `bak`: `<file>.bak`; `none`: no copy is kept — everything in the file was written by install, or it holds
   * a secret (ovcli.conf's key) that must not stay on disk once replaced.
   */
  backup: "bak" | "none";
  /** Only shown by a dry run (the file is written by another step, e.g. the plugin directory placement). */
  displayOnly?: boolean;
  /** How the file is shown in a dry run (secrets masked). */
  display?: (text: string) => string;
}

/** Something done that can be taken back until the run is over. */
export interface Undo {
  /** Puts back what was there before. */
  undo(): Promise<void>;
}

const NOTHING_CHANGED = "nothing was changed";

/** What went wrong in a file operation, in words (no Deno error text). */
export function describeFsError(error: unknown): string {
  const words: Record<string, string> = {
    ENOSPC: "the disk is full",
    EDQUOT: "the disk quota is used up",
    EROFS: "the file system is read-only",
    EACCES: "permission denied",
    EPERM: "the operation is not permitted",
    ENOENT: "a directory on its path does not exist",
    ENOTDIR: "a part of its path is a file, not a directory",
    EISDIR: "it is a directory",
    ENAMETOOLONG: "the file name is too long",
    ELOOP: "its symbolic links go round in a loop",
    EBUSY: "it is in use",
    ETXTBSY: "it is in use",
    EIO: "an input/output error",
    EXDEV: "it is on another file system",
    ENOTEMPTY: "the directory is not empty",
  };
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string" && words[code]) return words[code];
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\(os error \d+\)[^]*$/, "").replace(/^\w+:\s*/, "") || "it failed";
}

/** Whether an error came from the file system (it has an errno code) rather than from our own checks. */
export function isFsError(error: unknown): boolean {
  return typeof (error as { code?: unknown })?.code === "string";
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Reads a text file byte for byte (BOM kept); `undefined` when absent. A failure names the file and the fix. */
export async function readText(
  path: string,
): Promise<{ ok: true; text: string | undefined } | { ok: false; error: string; reason: string }> {
  const refuse = (reason: string, fix: string) => ({
    ok: false as const,
    reason,
    error: `${path} cannot be read (${reason}). ${fix} and run again; ${NOTHING_CHANGED}.`,
  });
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { ok: true, text: undefined };
    if (error instanceof Deno.errors.IsADirectory) {
      return refuse("it is a directory, not a file", "Move it away");
    }
    return refuse(describeFsError(error), "Fix that");
  }
  try {
    return { ok: true, text: utf8.decode(bytes) };
  } catch {
    return refuse("it is not UTF-8 text", `Save it as UTF-8 (or restore ${path}.bak)`);
  }
}

async function lstatOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Where a chain of symbolic links ends (the first path that is not a link, or does not exist). */
async function linkDestination(path: string): Promise<string> {
  let p = path;
  for (let hops = 0; hops < 40; hops++) {
    const info = await lstatOrUndefined(p).catch(() => undefined);
    if (!info?.isSymlink) return p;
    const link = await Deno.readLink(p);
    p = isAbsolutePath(link) ? link : joinPath(dirName(p), link);
  }
  return p;
}

/** Where writing `path` puts the bytes: `path`, or the file its symlink points at. */
export async function writeTarget(path: string): Promise<string> {
  const info = await lstatOrUndefined(path);
  return info?.isSymlink ? await Deno.realPath(path) : path;
}

/** Why a file cannot be created at `path` (its nearest existing ancestor is not a directory), or undefined. */
export async function checkCreatable(path: string): Promise<string | undefined> {
  for (let dir = dirName(path); dir !== ""; dir = dirName(dir)) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(dir);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound && dirName(dir) !== dir) continue;
      return `cannot create ${path}: ${dir} cannot be used (${describeFsError(error)}); ${NOTHING_CHANGED}.`;
    }
    if (!info.isDirectory) {
      return `cannot create ${path}: ${dir} is a file, not a directory. Move it away and run again; ${NOTHING_CHANGED}.`;
    }
    return undefined;
  }
  return undefined;
}

/** Why `change` cannot be written (a dangling symlink, a directory in the way, …), or undefined. */
export async function checkChange(change: FileChange): Promise<string | undefined> {
  if (change.displayOnly || change.before === change.after) return undefined;
  const { path } = change;
  let info: Deno.FileInfo | undefined;
  try {
    info = await lstatOrUndefined(path);
  } catch (error) {
    return `${path} cannot be used (${describeFsError(error)}). Fix that and run again; ${NOTHING_CHANGED}.`;
  }
  let target = path;
  if (info?.isSymlink) {
    try {
      target = await Deno.realPath(path);
      info = await Deno.stat(target);
    } catch (error) {
      const dest = await linkDestination(path);
      return error instanceof Deno.errors.NotFound
        ? `${path} is a symbolic link to ${dest}, which does not exist. Create ${dest}, point the link at an ` +
          `existing file, or remove the link, then run again; ${NOTHING_CHANGED}.`
        : `${path} is a symbolic link to ${dest}, which cannot be reached (${
          describeFsError(error)
        }). Fix or ` +
          `remove the link and run again; ${NOTHING_CHANGED}.`;
    }
  }
  const via = target === path ? "" : ` (${path} links there)`;
  if (info?.isDirectory) {
    return `${target}${via} is a directory, not a file. Move it away and run again; ${NOTHING_CHANGED}.`;
  }
  if (info && !info.isFile) {
    return `${target}${via} is not a regular file. Move it away and run again; ${NOTHING_CHANGED}.`;
  }
  if (!info) {
    const problem = await checkCreatable(target);
    if (problem) return problem;
  }
  if (change.before !== undefined && change.backup !== "none") {
    const backup = `${change.path}.bak`;
    const b = await lstatOrUndefined(backup).catch(() => undefined);
    if (b?.isDirectory) {
      return `${backup} is a directory, so the previous ${path} cannot be kept there. Move it away and run ` +
        `again; ${NOTHING_CHANGED}.`;
    }
  }
  return undefined;
}

/** The bytes and mode of a file, to put it back; undefined when it does not exist. */
async function keep(path: string): Promise<{ bytes: Uint8Array; mode: number } | undefined> {
  try {
    const bytes = await Deno.readFile(path);
    return { bytes, mode: ((await Deno.stat(path)).mode ?? 0o600) & 0o7777 };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

async function restore(path: string, kept: { bytes: Uint8Array; mode: number } | undefined): Promise<void> {
  if (kept !== undefined) {
    await writeFileAtomic(path, kept.bytes, { mode: kept.mode, privateDir: false, durable: true });
    return;
  }
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Makes `dir` and its missing parents (new ones 0700); the undo removes the ones it made, if still empty. */
export async function makeDirs(dir: string, options: { private?: boolean } = {}): Promise<Undo> {
  const made: string[] = [];
  for (let d = dir; d !== "" && !(await lstatOrUndefined(d).catch(() => undefined)); d = dirName(d)) {
    made.push(d);
    if (dirName(d) === d) break;
  }
  let previousMode: number | undefined;
  if (options.private && made.length === 0 && Deno.build.os !== "windows") {
    previousMode = ((await Deno.stat(dir)).mode ?? 0o700) & 0o7777;
  }
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  if (options.private && Deno.build.os !== "windows") await Deno.chmod(dir, 0o700);
  return {
    async undo() {
      if (previousMode !== undefined && previousMode !== 0o700) await Deno.chmod(dir, previousMode);
      for (const d of made) await Deno.remove(d).catch(() => {});
    },
  };
}

/** Runs `undos` last first; returns what could not be put back. */
export async function undoAll(undos: readonly Undo[]): Promise<string[]> {
  const failed: string[] = [];
  for (const u of [...undos].reverse()) {
    try {
      await u.undo();
    } catch (error) {
      failed.push(error instanceof Error && !isFsError(error) ? error.message : describeFsError(error));
    }
  }
  return failed;
}

/**
 * Applies one change; throws when the file changed since it was planned or a write fails (with whatever it
 * had written already taken back). Returns the backup path written and how to undo the change.
 */
export async function applyChange(
  change: FileChange,
): Promise<{ backup?: string; undo: Undo }> {
  const undos: Undo[] = [];
  const undo: Undo = {
    async undo() {
      const failed = await undoAll(undos);
      if (failed.length) {
        throw new Error(`${change.path} could not be put back (${failed.join("; ")})`);
      }
    },
  };
  if (change.before === change.after || change.displayOnly) return { undo };
  const current = await readText(change.path);
  if (!current.ok || current.text !== change.before) {
    throw new Error(`${change.path} changed while openviking-kimi was working on it; run the command again.`);
  }
  try {
    let backup: string | undefined;
    if (current.text !== undefined && change.backup !== "none") {
      const path = `${change.path}.bak`;
      const previous = await keep(path);
      await writeFileAtomic(path, current.text, { mode: 0o600, privateDir: false, durable: true });
      undos.push({ undo: () => restore(path, previous) });
      backup = path;
    }
    if (change.after === undefined) {
      const link = (await Deno.lstat(change.path)).isSymlink ? await Deno.readLink(change.path) : undefined;
      const previous = link === undefined ? await keep(change.path) : undefined;
      await Deno.remove(change.path);
      undos.push({
        undo: () => (link === undefined ? restore(change.path, previous) : Deno.symlink(link, change.path)),
      });
      return { backup, undo };
    }
    // A symlinked file (dotfiles) is written where it points, so the link itself stays the user's.
    const target = await writeTarget(change.path);
    const previous = await keep(target);
    undos.push(await makeDirs(dirName(target)));
    const written = change.after;
    await writeFileAtomic(target, written, { mode: 0o600, privateDir: false, durable: true });
    undos.push({
      async undo() {
        const now = await readText(target);
        if (!now.ok || now.text !== written) {
          throw new Error(`${target} was changed by someone else meanwhile; left as it is`);
        }
        await restore(target, previous);
      },
    });
    return { backup, undo };
  } catch (error) {
    await undoAll(undos);
    throw error;
  }
}

function baseName(path: string): string {
  return path.slice(dirName(path).length + 1);
}

/** Renames `path` to a hidden sibling (a removal that can be taken back); returns where it went. */
export async function moveAside(path: string): Promise<string> {
  const aside = joinPath(dirName(path), `.${baseName(path)}.${crypto.randomUUID().slice(0, 8)}.removing`);
  await Deno.rename(path, aside);
  return aside;
}

/** Keeps the current `path` as a sibling (a hard link, else a copy) before it is replaced; undefined if absent. */
export async function keepCopy(path: string): Promise<string | undefined> {
  if (!(await lstatOrUndefined(path))) return undefined;
  const aside = `${path}.${crypto.randomUUID().slice(0, 8)}.previous`;
  await Deno.link(path, aside).catch(() => Deno.copyFile(path, aside));
  return aside;
}
