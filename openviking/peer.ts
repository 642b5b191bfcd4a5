/** The workspace actor peer: git `origin` remote, else git root, else cwd, read from files (never `git`). */

import { readTextIfExists, SMALL_FILE_MAX_BYTES } from "../lib/fs.ts";
import { sha256Hex } from "../lib/hash.ts";
import { dirName, isAbsolutePath, joinPath } from "../lib/paths.ts";
import type { Config } from "./config.ts";

/** Ids the server accepts as `X-OpenViking-Actor-Peer`. */
export const PEER_ID_PATTERN = /^[A-Za-z0-9_.@-]+$/;
/** A resolved peer id ("" = none) and its source. */
export type Peer = { peerId: string; source: "explicit" | "git-remote" | "git-root" | "cwd" | "none" };
/** Whether the server accepts an id: the pattern, at most one `@`, not `.` or `..`. */
export function isValidPeerId(id: string): boolean {
  return PEER_ID_PATTERN.test(id) && (id.match(/@/g) ?? []).length <= 1 && id !== "." && id !== "..";
}

/** `id`, at most 100 characters (a longer one cut, ending in a hash of `full`). */
const capLength = async (id: string, full: string): Promise<string> =>
  id.length <= 100 ? id : `${id.slice(0, 87)}-${(await sha256Hex(full)).slice(0, 12)}`;
/** A path as a peer id: every non-alphanumeric character becomes `-` (the other plugins' rule). */
const pathPeerId = async (path: string) =>
  path ? await capLength(path.replace(/[^A-Za-z0-9]/g, "-"), path) : "";
/**
 * `rest` (a remote past its scheme, if any) without userinfo. A broken one holds a raw `@`, `/` or `:` of a
 * password, so once it shows userinfo — an `@` before the first `/`; with a scheme a `:` there before no port;
 * without, an `@` before a `host:` — all up to the last `@` goes.
 */
function withoutUser(rest: string, scheme: boolean): string {
  const authority = rest.split("/", 1)[0];
  const user = authority.includes("@") || (scheme ? /:(?!\d*$)/.test(authority) : /@.*:/.test(rest));
  return user ? rest.slice(rest.lastIndexOf("@") + 1) : rest;
}

/** A git remote URL as lower-case `host/path` (no user, port or `.git`); "" if unusable. */
export function normalizeRemote(url: string): string {
  const scheme = /^[a-z][a-z\d+.-]*:\/\//i.exec(url.trim())?.[0] ?? "";
  const s = scheme + withoutUser(url.trim().slice(scheme.length), scheme !== "");
  const scp = /^([^:/\s]+):(?!\/\/)(.+)$/.exec(s);
  let hostPath = s;
  if (!s.includes("://") && scp && !/^[A-Za-z]:[\\/]/.test(s)) hostPath = `${scp[1]}/${scp[2]}`;
  else if (s.includes("://")) {
    try {
      const u = new URL(s);
      hostPath = `${u.hostname}${decodeURIComponent(u.pathname)}`;
    } catch {
      hostPath = s.slice(scheme.length);
    }
  }
  return hostPath.replace(/\\/g, "/").replace(/\/+$/, "").replace(/\.git$/i, "").replace(/\/+$/, "")
    .toLowerCase();
}

/** A normalised remote as a peer id. */
export async function remotePeerId(normalized: string): Promise<string> {
  let id = normalized.replace(/[^a-zA-Z0-9_.-]+/g, "-").replace(/-+/g, "-").replace(/^[-.]+|[-.]+$/g, "");
  if (id.startsWith("ext-")) id = `x-${id}`;
  return id ? await capLength(id, normalized) : "";
}

/** A git config value as git reads it: quoted parts joined, `\` escapes, a `#` or `;` outside quotes ends it. */
function gitValue(raw: string): string {
  let [out, quoted] = ["", false];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '"') quoted = !quoted;
    else if (c === "\\") {
      out += ({ n: "\n", t: "\t", b: "\b" } as Record<string, string>)[raw[++i]] ?? raw[i] ?? "";
    } else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return out.trim();
}

/** The URL of remote `origin` (else the first remote) in a git config. */
export function remoteUrlFromGitConfig(text: string): string {
  const urls = new Map<string, string>();
  let section: string | undefined;
  for (const line of text.split(/\r?\n/).map((l) => l.trim())) {
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line);
    if (header) section = header[1].toLowerCase() === "remote" ? header[2] : undefined;
    const url = section && /^url\s*=\s*(.*)$/i.exec(line);
    if (url && !urls.has(section!)) urls.set(section!, gitValue(url[1]));
  }
  return urls.get("origin") ?? urls.values().next().value ?? "";
}

/** A workspace file, when it is a regular one of sane size (a FIFO or device at .git/config would block). */
const readText = (path: string) => readTextIfExists(path, SMALL_FILE_MAX_BYTES).catch(() => undefined);
const resolved = (base: string, path: string) => isAbsolutePath(path) ? path : joinPath(base, path);

/** The git work-tree root at or above `cwd` and its config file (a worktree's `.git` file and `commondir` followed). */
async function findGitRepo(cwd: string): Promise<{ root: string; configPath: string } | undefined> {
  for (let [dir, depth] = [cwd.replace(/[\\/]+$/, "") || "/", 0]; depth < 64; depth++) {
    const dotGit = joinPath(dir, ".git");
    const info = await Deno.stat(dotGit).catch(() => undefined);
    if (info?.isFile) {
      const m = /^gitdir:\s*(.+)$/m.exec((await readText(dotGit)) ?? "");
      if (!m) return undefined;
      const gitDir = resolved(dir, m[1].trim());
      const common = (await readText(joinPath(gitDir, "commondir")))?.trim();
      return { root: dir, configPath: joinPath(common ? resolved(gitDir, common) : gitDir, "config") };
    }
    if (info) return { root: dir, configPath: joinPath(dotGit, "config") };
    const parent = dirName(dir);
    if (!parent || parent === dir) return undefined;
    dir = parent;
  }
}

/** The actor peer of a workspace: explicit, git remote, git root, cwd, or none. */
export async function resolvePeer(
  cwd: string | undefined,
  options: Pick<Config, "peerId" | "workspacePeer">,
): Promise<Peer> {
  if (options.peerId && isValidPeerId(options.peerId)) {
    return { peerId: options.peerId, source: "explicit" };
  }
  if (!options.workspacePeer || !cwd) return { peerId: "", source: "none" };
  const repo = await findGitRepo(cwd);
  if (repo) {
    const url = remoteUrlFromGitConfig((await readText(repo.configPath)) ?? "");
    const fromRemote = url ? await remotePeerId(normalizeRemote(url)) : "";
    if (fromRemote && isValidPeerId(fromRemote)) return { peerId: fromRemote, source: "git-remote" };
    const fromRoot = await pathPeerId(repo.root);
    if (fromRoot) return { peerId: fromRoot, source: "git-root" };
  }
  const fromCwd = await pathPeerId(cwd);
  return fromCwd ? { peerId: fromCwd, source: "cwd" } : { peerId: "", source: "none" };
}
