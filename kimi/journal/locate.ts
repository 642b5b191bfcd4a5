/** Finds a session's main journal: Kimi's session index, else a scan of `sessions/<dir>/<id>/`; only inside that home. */

import { listDir, parseJsonOrUndefined, readTextIfExists } from "../../lib/fs.ts";
import { joinPath } from "../../lib/paths.ts";
import { isRecord } from "../../lib/parsed.ts";

/** Path of the main agent's journal inside a session directory. */
const mainJournalPath = (sessionDir: string) => joinPath(sessionDir, "agents", "main", "wire.jsonl");

/** The session directory recorded for `sessionId` in an index file's text; `null` when deleted or absent. */
export function sessionDirFromIndex(text: string, sessionId: string): string | null {
  let dir: string | null = null;
  for (const line of text.split("\n")) {
    const row = line.includes(sessionId) ? parseJsonOrUndefined(line) : undefined;
    if (!isRecord(row) || row.sessionId !== sessionId) continue;
    if (row.deleted === true) dir = null;
    else if (typeof row.sessionDir === "string" && row.sessionDir) dir = row.sessionDir;
  }
  return dir;
}

/** Whether `path` is a file inside the directory `sessions`, links resolved. */
async function isJournal(sessions: string, path: string): Promise<boolean> {
  try {
    const [real, root] = await Promise.all([Deno.realPath(path), Deno.realPath(sessions)]);
    return real.startsWith(root) && /[\\/]/.test(real[root.length]) && (await Deno.stat(real)).isFile;
  } catch {
    return false;
  }
}

/** Locates the main journal of `sessionId` under Kimi's home: where it was found, or why not. */
export async function locateJournal(
  kimiHome: string,
  sessionId: string,
): Promise<{ ok: true; path: string; via: "index" | "scan" } | { ok: false; reason: string }> {
  if (!sessionId || /[\\/\0]/.test(sessionId) || sessionId === "." || sessionId === "..") {
    return { ok: false, reason: `invalid session id ${JSON.stringify(sessionId)}` };
  }
  const sessions = joinPath(kimiHome, "sessions");
  // A regular file only: a FIFO would block the worker until someone wrote to it.
  const indexText = await readTextIfExists(joinPath(kimiHome, "session_index.jsonl")).catch(() => "") ?? "";
  const fromIndex = sessionDirFromIndex(indexText, sessionId);
  const indexed = fromIndex && mainJournalPath(fromIndex);
  if (indexed && await isJournal(sessions, indexed)) return { ok: true, path: indexed, via: "index" };
  for (const wd of await listDir(sessions).catch(() => [])) { // none: no (readable) sessions directory
    const path = mainJournalPath(joinPath(sessions, wd.name, sessionId));
    if (wd.isDirectory && await isJournal(sessions, path)) return { ok: true, path, via: "scan" };
  }
  return { ok: false, reason: `no journal for ${sessionId} under ${kimiHome}` };
}
