/** The pruning of session states no reader needs: old, owing nothing, not among the newest the MCP proxy reads. */

import { joinPath } from "../lib/paths.ts";
import { withLock } from "../lib/lock.ts";
import { PRINT_STATES, readState, uncommitted } from "./state.ts";
import { recordPruned } from "./pruned.ts";

/** A session's states untouched this long (its capture's and its prompt's) are pruned when they owe nothing. */
export const STATE_RETENTION_MS = 30 * 86_400_000;

/** A session's files in a state directory, and when it was last touched (the newer of its two states). */
type Session = { name: string; files: string[]; mtime: number };

/** The sessions of state directory `dir` by name (`X.json`, `X.prompt.json`), the newest first. */
function sessionsIn(dir: string, names: readonly string[]): Session[] {
  const by = new Map<string, Session>();
  for (const n of names) {
    const base = n.endsWith(".prompt.json") ? n.slice(0, -12) : n.endsWith(".json") ? n.slice(0, -5) : "";
    if (!base) continue;
    const mtime = (() => {
      try {
        const i = Deno.lstatSync(joinPath(dir, n));
        return i.isFile ? i.mtime?.getTime() ?? 0 : undefined;
      } catch {
        return undefined;
      }
    })();
    if (mtime === undefined) continue;
    const s = by.get(base) ?? { name: `${base}.json`, files: [], mtime: 0 };
    by.set(base, { ...s, files: [...s.files, n], mtime: Math.max(s.mtime, mtime) });
  }
  return [...by.values()].sort((a, b) => b.mtime - a.mtime);
}

/** Removes what killed runs left in `dir` untouched for {@link STATE_RETENTION_MS}: a lock no one holds, a damaged state set aside. */
async function pruneStrays(dir: string, names: readonly string[], now: number): Promise<void> {
  for (const n of names.filter((n) => n.endsWith(".lock") || /\.damaged-\d+$/.test(n))) {
    const path = joinPath(dir, n);
    const info = await Deno.lstat(path).catch(() => undefined);
    if (!info?.isFile || now - (info.mtime?.getTime() ?? now) < STATE_RETENTION_MS) continue;
    if (!n.endsWith(".lock")) await Deno.remove(path).catch(() => undefined);
    else await withLock(path, () => Promise.resolve(), { waitMs: 0, makeDir: false }).catch(() => undefined); // gone on release
  }
}

/**
 * Removes the states of sessions in `dir` untouched for {@link STATE_RETENTION_MS} that owe nothing (no capture
 * uncommitted, no intent unsettled, no kept prompt unsent), never the {@link PRINT_STATES} newest nor one whose lock is held; each name
 * goes on the pruned list first, so a session resumed later asks the server what it holds; and the strays of killed runs. How many sessions went.
 */
export async function pruneStates(dir: string, now = Date.now()): Promise<number> {
  const names = await Array.fromAsync(Deno.readDir(dir), (e) => e.name).catch(() => [] as string[]);
  const old = sessionsIn(dir, names).slice(PRINT_STATES).filter((s) => now - s.mtime >= STATE_RETENTION_MS);
  const owing = async (s: Session) => {
    const state = await readState(joinPath(dir, s.name));
    const kept = (await readState(joinPath(dir, s.name.replace(/\.json$/, ".prompt.json")))).fallbackPrompts;
    return uncommitted(state).length > 0 || (state.inflight?.keys.length ?? 0) > 0 || kept.length > 0;
  };
  await pruneStrays(dir, names, now);
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
