/**
 * Where things live: OpenViking's home, Kimi Code's home, and `~` expansion. No I/O beyond env reads.
 * Never a relative path: a location that would need the home directory when there is none (HOME unset or
 * relative) throws {@link NoHomeError}, and overrides that are not absolute are ignored — a relative path
 * would resolve against the hook's cwd, the user's project, which must never hold our state or choose our
 * server.
 */

import { sha256Hex } from "./hash.ts";

/** The environment as a plain lookup, so pure code never touches `Deno.env`. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Snapshot of the process environment. */
export function processEnv(): Env {
  return Deno.env.toObject();
}

/** Thrown for a location that needs the home directory when there is none. */
export class NoHomeError extends Error {
  override name = "NoHomeError";
  constructor(what: string) {
    super(
      `HOME is not set (or not an absolute path), so there is no place for ${what}: ` +
        "set HOME, or OPENVIKING_HOME (and KIMI_CODE_HOME) to absolute directories",
    );
  }
}

/** Whether a path is absolute on POSIX or Windows. */
export function isAbsolutePath(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");
}

/** The user's home directory from `HOME` (or `USERPROFILE` on Windows); "" when unset or not absolute. */
function homeDir(env: Env): string {
  const home = env.HOME || env.USERPROFILE || "";
  return isAbsolutePath(home) ? home : "";
}

/** Joins path segments with "/" and collapses duplicate separators (Windows accepts "/" too). */
export function joinPath(...parts: string[]): string {
  return parts.filter((p) => p !== "").join("/").replace(/(?<!^)\/{2,}/g, "/");
}

/** Expands a leading `~` or `~/` against the home directory; throws {@link NoHomeError} when there is none. */
export function expandHome(path: string, env: Env): string {
  if (path !== "~" && !path.startsWith("~/") && !path.startsWith("~\\")) return path;
  const home = homeDir(env);
  if (!home) throw new NoHomeError(path);
  return path === "~" ? home : joinPath(home, path.slice(2));
}

/** An override variable's absolute path (`~` expanded), or undefined when unset, unexpandable or relative. */
export function absoluteOverride(value: string | undefined, env: Env): string | undefined {
  if (!value) return undefined;
  const path = orNoHome(() => expandHome(value, env));
  return path && isAbsolutePath(path) ? path : undefined;
}

/** `<home>/<name>`, or {@link NoHomeError} when there is no home. */
function underHome(env: Env, name: string, what: string): string {
  const home = homeDir(env);
  if (!home) throw new NoHomeError(what);
  return joinPath(home, name);
}

/** OpenViking's home: `$OPENVIKING_HOME`, else `~/.openviking`. */
export function openVikingHome(env: Env): string {
  return absoluteOverride(env.OPENVIKING_HOME, env) ??
    underHome(env, ".openviking", "OpenViking's files (~/.openviking)");
}

/** Kimi Code's home: an explicit directory, else `$KIMI_CODE_HOME`, else `~/.kimi-code`. */
export function kimiHome(env: Env, explicit?: string): string {
  if (explicit) return expandHome(explicit, env);
  return absoluteOverride(env.KIMI_CODE_HOME, env) ??
    underHome(env, ".kimi-code", "Kimi Code's home (~/.kimi-code)");
}

/** Directory holding per-session hook state: `$OPENVIKING_HOOK_STATE_DIR/kimicode` or `~/.openviking/hook-state/kimicode`. */
export function hookStateDir(env: Env): string {
  const base = absoluteOverride(env.OPENVIKING_HOOK_STATE_DIR, env) ??
    joinPath(openVikingHome(env), "hook-state");
  return joinPath(base, "kimicode");
}

/** The offline write queue shared with OpenViking's other plugins. */
export function pendingDir(env: Env): string {
  return absoluteOverride(env.OPENVIKING_PENDING_DIR, env) ?? joinPath(openVikingHome(env), "pending");
}

/** Shared plugin state (e.g. the legacy context-face memo). */
export function sharedStateDir(env: Env): string {
  return absoluteOverride(env.OPENVIKING_STATE_DIR, env) ?? joinPath(openVikingHome(env), "state");
}

/** The MCP server's last tool list (mcp/tool-cache.ts), in the shared state directory. */
export function mcpToolCachePath(env: Env): string {
  return joinPath(sharedStateDir(env), "kimicode-mcp-tools.json");
}

/** The hook log when no other path is configured: `<openviking home>/logs/kimicode-hooks.log`. */
export function defaultLogPath(env: Env): string {
  return joinPath(openVikingHome(env), "logs", "kimicode-hooks.log");
}

/** Our directory under OpenViking's home: `~/.openviking/agent-integrations/kimicode`. */
export function integrationDir(env: Env): string {
  return joinPath(openVikingHome(env), "agent-integrations", "kimicode");
}

/**
 * Where install puts the `openviking-kimi` command the user's shell finds: `$OPENVIKING_KIMI_BIN_DIR`, else
 * `~/.local/bin` (where pipx and uv put their commands).
 */
export function commandDir(env: Env): string {
  return absoluteOverride(env.OPENVIKING_KIMI_BIN_DIR, env) ?? underHome(env, ".local/bin", "the command");
}

/** The local ledger of what hook runs did (`status`): `<openviking home>/ledger/kimicode`. */
export function ledgerDir(env: Env): string {
  return joinPath(openVikingHome(env), "ledger", "kimicode");
}

/** `location(env)`, or undefined when it needs a home there is none of (other errors propagate). */
export function orNoHome<T>(location: () => T): T | undefined {
  try {
    return location();
  } catch (error) {
    if (error instanceof NoHomeError) return undefined;
    throw error;
  }
}

/** Why OpenViking's home cannot be resolved ("" when it can): the one test for "no home". */
export function noHomeReason(env: Env): string {
  try {
    openVikingHome(env);
    return "";
  } catch (error) {
    if (error instanceof NoHomeError) return error.message;
    throw error;
  }
}

/** Override variables set to something that is not an absolute path (they are ignored). */
export function ignoredOverrides(env: Env): string[] {
  const names = [
    "OPENVIKING_HOME",
    "OPENVIKING_HOOK_STATE_DIR",
    "OPENVIKING_PENDING_DIR",
    "OPENVIKING_STATE_DIR",
    "OPENVIKING_CLI_CONFIG_FILE",
    "OPENVIKING_CONFIG_FILE",
    "KIMI_CODE_HOME",
    "OPENVIKING_KIMI_BIN_DIR",
  ];
  return names.filter((n) => env[n] && !absoluteOverride(env[n], env)).map((n) => `${n}=${env[n]}`);
}

/** Parent directory of a path ("" for a bare name). */
export function dirName(path: string): string {
  const i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return i <= 0 ? (i === 0 ? "/" : "") : path.slice(0, i);
}

/**
 * Maps any id to a file-name-safe one: `[A-Za-z0-9._-]` only, never empty, never dot-only, ≤ 100 chars.
 * Ids that had to change get a hash suffix so different ids never share a file.
 */
export async function safeId(id: string): Promise<string> {
  const cleaned = id.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[.-]+/, "");
  if (cleaned === id && cleaned.length > 0 && cleaned.length <= 100) return cleaned;
  const suffix = (await sha256Hex(id)).slice(0, 16);
  return `${cleaned.slice(0, 80) || "id"}-${suffix}`;
}
