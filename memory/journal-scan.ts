/**
 * A session's journal read after the capture cursor and scanned into turns, and the bounded wait (outside the
 * lock) for the newest turn's end. No lock, no writes.
 */

import type { Cursor } from "./state.ts";
import { type JournalRead, readJournal } from "../kimi/journal/read.ts";
import { scanTurns, turnLineFilter, type TurnScan } from "../kimi/journal/turns.ts";

/** A journal read after a cursor and its turns. */
export interface Scan {
  turns: TurnScan;
  read: JournalRead;
}

/** Reads the journal after `cursor` and scans its turns. */
export async function scanJournal(path: string, cursor: Cursor | undefined): Promise<Scan> {
  const usable = cursor && cursor.path === path ? cursor : undefined;
  const read = await readJournal(path, usable, turnLineFilter);
  const first = usable && !read.rewritten ? usable.nextIndex : 0;
  return { turns: scanTurns(read.lines, first), read };
}

/** How often the wait looks at the journal's size and time. */
const POLL_MS = 100;

/**
 * Waits (bounded) until the newest main-agent turn after the cursor is closed. With `expectTurn` (Stop: a turn
 * just ended) it also waits for that turn to show up at all: Kimi may not have written it to the journal yet
 * when the hook fires (seen under load with 0.41.0 over ACP), and a capture that read the journal too early
 * would leave the turn until the session's next hook — which `kimi -p` never has. The journal is scanned again
 * only when its size or time changed: a long unsent tail is not re-read ten times a second.
 */
export async function waitForTurnEnd(
  path: string,
  cursor: Cursor | undefined,
  waitMs: number,
  expectTurn: boolean,
  scan: (path: string, cursor: Cursor | undefined) => Promise<Scan> = scanJournal,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let scanned: string | undefined;
  for (;;) {
    const info = await Deno.stat(path).catch(() => undefined);
    const stamp = info ? `${info.size}:${info.mtime?.getTime()}` : "gone";
    if (stamp !== scanned) {
      scanned = stamp;
      const { turns } = await scan(path, cursor).catch(() => ({ turns: undefined }));
      const newest = turns?.turns.at(-1);
      if (newest ? newest.closed : !expectTurn) return true;
    }
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, deadline - Date.now()))));
  }
}
