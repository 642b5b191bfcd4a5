/** Where things live: OpenViking's home, Kimi Code's home, `~` expansion. */

import { sha256Hex } from "./hash.ts";

/** The environment as a plain lookup, so pure code never touches `Deno.env`. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Snapshot of the process environment. */
export const processEnv = (): Env => Deno.env.toObject();

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
export const isAbsolutePath = (path: string): boolean =>
  path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");

/** Joins path segments with "/" and collapses duplicate separators (Windows accepts "/" too). */
export const joinPath = (...parts: string[]): string =>
  parts.filter((p) => p !== "").join("/").replace(/(?<!^)\/{2,}/g, "/");

const lastSeparator = (path: string) => Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));

/** Parent directory of a path ("" for a bare name). */
export function dirName(path: string): string {
  const i = lastSeparator(path);
  return i <= 0 ? (i === 0 ? "/" : "") : path.slice(0, i);
}

/** A path's last part, its file name. */
export const baseName = (path: string): string => path.slice(lastSeparator(path) + 1);

/** Expands a leading `~` against `HOME` (or `USERPROFILE`); {@link NoHomeError} (no place for `what`) without one. */
export function expandHome(path: string, env: Env, what = path): string {
  if (path !== "~" && !path.startsWith("~/") && !path.startsWith("~\\")) return path;
  const home = env.HOME || env.USERPROFILE || "";
  if (!isAbsolutePath(home)) throw new NoHomeError(what);
  return path === "~" ? home : joinPath(home, path.slice(2));
}

/** An override's absolute path (`~` expanded); undefined when unset, unexpandable or relative. */
export function absoluteOverride(value: string | undefined, env: Env): string | undefined {
  const path = value ? orNoHome(() => expandHome(value, env)) : undefined;
  return path && isAbsolutePath(path) ? path : undefined;
}

/** `$NAME` when absolute, else `~/<fallback>` (no place for `what` without a home). */
const place = (env: Env, name: string, fallback: string, what = `~/${fallback}`) =>
  absoluteOverride(env[name], env) ?? expandHome(`~/${fallback}`, env, what);

const OV_FILES = "OpenViking's files (~/.openviking)";

/** OpenViking's home: `$OPENVIKING_HOME`, else `~/.openviking`. */
export const openVikingHome = (env: Env): string => place(env, "OPENVIKING_HOME", ".openviking", OV_FILES);

/** Kimi Code's home: `explicit`, else `$KIMI_CODE_HOME`, else `~/.kimi-code`. */
export const kimiHome = (env: Env, explicit?: string): string =>
  explicit
    ? expandHome(explicit, env)
    : place(env, "KIMI_CODE_HOME", ".kimi-code", "Kimi Code's home (~/.kimi-code)");

/** `$NAME`, else `<OpenViking's home>/<sub>`. */
const underHome = (env: Env, name: string, sub: string) =>
  absoluteOverride(env[name], env) ?? joinPath(openVikingHome(env), sub);

/** Per-session hook state: `$OPENVIKING_HOOK_STATE_DIR/kimicode`, else `~/.openviking/hook-state/kimicode`. */
export const hookStateDir = (env: Env): string =>
  joinPath(underHome(env, "OPENVIKING_HOOK_STATE_DIR", "hook-state"), "kimicode");

/** The offline write queues: `$OPENVIKING_PENDING_DIR`, else `~/.openviking/pending`. */
export const pendingDir = (env: Env): string => underHome(env, "OPENVIKING_PENDING_DIR", "pending");

/** Shared plugin state: `$OPENVIKING_STATE_DIR`, else `~/.openviking/state`. */
export const sharedStateDir = (env: Env): string => underHome(env, "OPENVIKING_STATE_DIR", "state");

/** The MCP server's last tool list, in the shared state directory. */
export const mcpToolCachePath = (env: Env): string =>
  joinPath(sharedStateDir(env), "kimicode-mcp-tools.json");

/** The hook log when no other path is configured. */
export const defaultLogPath = (env: Env): string =>
  joinPath(openVikingHome(env), "logs", "kimicode-hooks.log");

/** Our directory under OpenViking's home: `~/.openviking/agent-integrations/kimicode`. */
export const integrationDir = (env: Env): string =>
  joinPath(openVikingHome(env), "agent-integrations", "kimicode");

/** The record of the Kimi homes installed into (one absolute path a line): removals, and a hook's own check. */
export const homesFile = (env: Env): string => joinPath(integrationDir(env), "kimi-homes");

/** Where install puts the `openviking-kimi` command: `$OPENVIKING_KIMI_BIN_DIR`, else `~/.local/bin`. */
export const commandDir = (env: Env): string =>
  place(env, "OPENVIKING_KIMI_BIN_DIR", ".local/bin", "the command");

/** The local ledger of what hook runs did (`status`). */
export const ledgerDir = (env: Env): string => joinPath(openVikingHome(env), "ledger", "kimicode");

/** `location()`, or undefined when it needs a home there is none of (other errors propagate). */
export function orNoHome<T>(location: () => T): T | undefined {
  try {
    return location();
  } catch (error) {
    if (error instanceof NoHomeError) return undefined;
    throw error;
  }
}

/** Why OpenViking's home cannot be resolved ("" when it can). */
export const noHomeReason = (env: Env): string =>
  orNoHome(() => openVikingHome(env) && "") ?? new NoHomeError(OV_FILES).message;

const OVERRIDES = (
  "OPENVIKING_HOME OPENVIKING_HOOK_STATE_DIR OPENVIKING_PENDING_DIR OPENVIKING_STATE_DIR " +
  "OPENVIKING_CLI_CONFIG_FILE OPENVIKING_CONFIG_FILE KIMI_CODE_HOME OPENVIKING_KIMI_BIN_DIR"
).split(" ");

/** The override variables set to something that is not an absolute path (they are ignored), as `NAME=value`. */
export const ignoredOverrides = (env: Env): string[] =>
  OVERRIDES.filter((n) => env[n] && !absoluteOverride(env[n], env)).map((n) => `${n}=${env[n]}`);

/**
 * Any id as a file name (`[A-Za-z0-9._-]`, ≤ 100 characters, never ending `.prompt`, the prompt state's
 * suffix, never starting `_`, which our own names do: the ledger's `_replay`); a changed id gets a hash suffix.
 */
export async function safeId(id: string): Promise<string> {
  const cleaned = id.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[._-]+/, "");
  if (cleaned === id && cleaned.length > 0 && cleaned.length <= 100 && !/\.prompt$/i.test(id)) return cleaned;
  return `${cleaned.slice(0, 80) || "id"}-${(await sha256Hex(id)).slice(0, 16)}`;
}

/** Why `given` is no server address to save ("" removes the saved one). */
export function urlProblem(given: string): string | undefined {
  const url = URL.parse(given.trim().replace(/\/+$/, ""));
  return given.trim() && !["http:", "https:"].includes(url?.protocol ?? "")
    ? `--url "${given.replace(/\/\/[^/@]*@/, "//…@")}" is not an http(s) URL, e.g. http://127.0.0.1:1933`
    : url?.username || url?.password
    ? "--url carries a user name or password, which would be saved and shown as part of the address: " +
      "give the address alone and the key with --api-key-stdin (or OPENVIKING_API_KEY)"
    : undefined;
}
