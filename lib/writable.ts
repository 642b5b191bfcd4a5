/**
 * Whether a directory can hold our files, found out the only reliable way — by doing it: create the directory
 * (as a write would), create a file in it, remove the file. Permission bits say nothing for root, a read-only
 * mount or a file in the way; this probe fails exactly when a real write would.
 */

import { isNotFound, tempSibling } from "./fs.ts";
import { dirName, joinPath } from "./paths.ts";

/** Why `dir` cannot hold our files, or "" when it can. `removeCreated` leaves no directory it created behind. */
export async function unwritableReason(
  dir: string,
  options: { removeCreated?: boolean } = {},
): Promise<string> {
  const created = options.removeCreated ? await missingAncestors(dir) : [];
  const probe = tempSibling(joinPath(dir, ".write-probe"));
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const file = await Deno.open(probe, { write: true, createNew: true, mode: 0o600 });
    try {
      await file.write(new Uint8Array([10]));
    } finally {
      file.close();
    }
    return "";
  } catch (error) {
    return `cannot write ${dir}: ${(error as Error).message}`;
  } finally {
    await Deno.remove(probe).catch(() => {});
    for (const d of created) await Deno.remove(d).catch(() => {});
  }
}

/** The directories from `dir` upwards that do not exist yet, deepest first. */
async function missingAncestors(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (let d = dir; d && d !== dirName(d); d = dirName(d)) {
    try {
      await Deno.lstat(d);
      break;
    } catch (error) {
      if (!isNotFound(error)) break;
      out.push(d);
    }
  }
  return out;
}
