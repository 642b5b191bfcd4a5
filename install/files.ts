/**
 * Writing planned file changes: re-check that nobody changed the file since it was read, keep a backup of
 * the previous content, write temp + fsync + rename (old or new content, never torn), mode 0600. Parent
 * directories that exist are left as they are (the user's Kimi home keeps its mode); new ones are 0700. A
 * symlinked file is written through the link.
 */

import { readTextIfExists, writeFileAtomic } from "../runtime/fs.ts";
import { dirName } from "../runtime/paths.ts";

/** A planned change of one text file (`undefined` = absent). */
export interface FileChange {
  path: string;
  before: string | undefined;
  after: string | undefined;
  /** `bak`: `<file>.bak`; `timestamped`: `<file>.bak.<epoch seconds>` (OpenViking's installers do so for ovcli.conf). */
  backup: "bak" | "timestamped";
  /** Only shown by a dry run (the file is written by another step, e.g. the plugin directory placement). */
  displayOnly?: boolean;
  /** How the file is shown in a dry run (secrets masked). */
  display?: (text: string) => string;
}

/** The backup path of a change. */
export function backupPath(change: FileChange, now: Date): string {
  return change.backup === "bak"
    ? `${change.path}.bak`
    : `${change.path}.bak.${Math.floor(now.getTime() / 1000)}`;
}

/** Applies one change; throws when the file changed since it was planned. Returns the backup path written. */
export async function applyChange(change: FileChange, now = new Date()): Promise<string | undefined> {
  if (change.before === change.after || change.displayOnly) return undefined;
  const current = await readTextIfExists(change.path);
  if (current !== change.before) {
    throw new Error(`${change.path} changed while openviking-kimi was working on it; run the command again.`);
  }
  let backup: string | undefined;
  if (current !== undefined) {
    backup = backupPath(change, now);
    await writeFileAtomic(backup, current, { mode: 0o600, privateDir: false, durable: true });
  }
  if (change.after === undefined) {
    await Deno.remove(change.path);
    return backup;
  }
  // A symlinked file (dotfiles) is written where it points, so the link itself stays the user's.
  const target = await Deno.lstat(change.path).then(
    async (info) => (info.isSymlink ? await Deno.realPath(change.path) : change.path),
    () => change.path,
  );
  await Deno.mkdir(dirName(target), { recursive: true, mode: 0o700 });
  await writeFileAtomic(target, change.after, { mode: 0o600, privateDir: false, durable: true });
  return backup;
}
