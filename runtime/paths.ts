/** Where things live: OpenViking's home, Kimi Code's home, and `~` expansion. No I/O beyond env reads. */

/** The environment as a plain lookup, so pure code never touches `Deno.env`. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Snapshot of the process environment. */
export function processEnv(): Env {
  return Deno.env.toObject();
}

/** The user's home directory from `HOME` (or `USERPROFILE` on Windows); "" when unknown. */
export function homeDir(env: Env): string {
  return env.HOME || env.USERPROFILE || "";
}

/** Joins path segments with "/" and collapses duplicate separators (Windows accepts "/" too). */
export function joinPath(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("/").replace(/(?<!^)\/{2,}/g, "/");
}

/** Expands a leading `~` or `~/` against the home directory. */
export function expandHome(path: string, env: Env): string {
  if (path === "~") return homeDir(env);
  if (path.startsWith("~/") || path.startsWith("~\\")) return joinPath(homeDir(env), path.slice(2));
  return path;
}

/** OpenViking's home: `$OPENVIKING_HOME`, else `~/.openviking`. */
export function openVikingHome(env: Env): string {
  return env.OPENVIKING_HOME ? expandHome(env.OPENVIKING_HOME, env) : joinPath(homeDir(env), ".openviking");
}

/** Kimi Code's home: an explicit directory, else `$KIMI_CODE_HOME`, else `~/.kimi-code`. */
export function kimiHome(env: Env, explicit?: string): string {
  if (explicit) return expandHome(explicit, env);
  return env.KIMI_CODE_HOME ? expandHome(env.KIMI_CODE_HOME, env) : joinPath(homeDir(env), ".kimi-code");
}

/** Directory holding per-session hook state: `$OPENVIKING_HOOK_STATE_DIR/kimicode` or `~/.openviking/hook-state/kimicode`. */
export function hookStateDir(env: Env): string {
  const base = env.OPENVIKING_HOOK_STATE_DIR
    ? expandHome(env.OPENVIKING_HOOK_STATE_DIR, env)
    : joinPath(openVikingHome(env), "hook-state");
  return joinPath(base, "kimicode");
}

/** The offline write queue shared with OpenViking's other plugins. */
export function pendingDir(env: Env): string {
  return env.OPENVIKING_PENDING_DIR
    ? expandHome(env.OPENVIKING_PENDING_DIR, env)
    : joinPath(openVikingHome(env), "pending");
}

/** Shared plugin state (e.g. the legacy context-face memo). */
export function sharedStateDir(env: Env): string {
  return env.OPENVIKING_STATE_DIR
    ? expandHome(env.OPENVIKING_STATE_DIR, env)
    : joinPath(openVikingHome(env), "state");
}

/** Parent directory of a path ("" for a bare name). */
export function dirName(path: string): string {
  const i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return i <= 0 ? (i === 0 ? "/" : "") : path.slice(0, i);
}

/** Whether a path is absolute on POSIX or Windows. */
export function isAbsolutePath(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");
}
