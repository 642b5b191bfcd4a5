/** Finds a session's main journal: `sessions/<workspace>/<id>/agents/main/wire.jsonl`, only inside that home. */

import { listDir } from "../../lib/fs.ts";
import { joinPath } from "../../lib/paths.ts";

/** Whether `path` is a file inside the directory `sessions`, links resolved (never opened: a FIFO blocks). */
async function isJournal(sessions: string, path: string): Promise<boolean> {
  try {
    const [real, root] = await Promise.all([Deno.realPath(path), Deno.realPath(sessions)]);
    return real.startsWith(root) && /[\\/]/.test(real[root.length]) && (await Deno.stat(real)).isFile;
  } catch {
    return false;
  }
}

/** Locates the main journal of `sessionId` under Kimi's home (Kimi's `sessionDirOf`): its path, or why not. */
export async function locateJournal(
  kimiHome: string,
  sessionId: string,
): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  if (!sessionId || /[\\/\0]/.test(sessionId) || sessionId === "." || sessionId === "..") {
    return { ok: false, reason: `invalid session id ${JSON.stringify(sessionId)}` };
  }
  const sessions = joinPath(kimiHome, "sessions");
  for (const wd of await listDir(sessions).catch(() => [])) { // none: no (readable) sessions directory
    const path = joinPath(sessions, wd.name, sessionId, "agents", "main", "wire.jsonl");
    if (wd.isDirectory && await isJournal(sessions, path)) return { ok: true, path };
  }
  return { ok: false, reason: `no journal for ${sessionId} under ${kimiHome}` };
}
