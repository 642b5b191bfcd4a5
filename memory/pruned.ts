/** The names of the session states pruned (memory/prune.ts): one a line, the newest last, bounded. */

import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { dirName, joinPath } from "../lib/paths.ts";

const baseName = (file: string) => file.slice(Math.max(file.lastIndexOf("/"), file.lastIndexOf("\\")) + 1);

/** The list's file in a state directory, and the most names it keeps (a name is some 60 bytes). */
export const [PRUNED_FILE, MAX_PRUNED] = ["pruned.txt", 2048];

/** The names listed in state directory `dir`'s pruned list; none when it is missing or unreadable. */
export async function prunedNames(dir: string): Promise<string[]> {
  const text = await readTextIfExists(joinPath(dir, PRUNED_FILE), MAX_PRUNED * 256).catch(() => undefined);
  return (text ?? "").split("\n").filter((l) => l !== "");
}

/** Whether the capture state `file` was pruned: a session resumed after that asks the server what it holds. */
export async function wasPruned(file: string): Promise<boolean> {
  return (await prunedNames(dirName(file))).includes(baseName(file));
}

/** Adds `names` to `dir`'s pruned list (the newest {@link MAX_PRUNED} kept), written atomically. */
export async function recordPruned(dir: string, names: readonly string[]): Promise<void> {
  if (!names.length) return;
  const kept = [...(await prunedNames(dir)).filter((n) => !names.includes(n)), ...names].slice(-MAX_PRUNED);
  await writeFileAtomic(joinPath(dir, PRUNED_FILE), `${kept.join("\n")}\n`);
}
