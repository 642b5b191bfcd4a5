/** Where the program the hook entries run lives, and how a command line for it is written. */

import { checkoutRoot, copyDir, isCompiled, shellQuote } from "../lib/self.ts";
import { sha256Hex } from "../lib/hash.ts";
import { commandDir, type Env, integrationDir, isAbsolutePath, joinPath, orNoHome } from "../lib/paths.ts";
import { EXECUTABLE_NAME, type McpEntry } from "./spec.ts";

/** The operating-system family that decides file names and command quoting. */
export type OsFamily = "posix" | "windows";

/** How this program is being run: the compiled binary, a checkout, or an installed copy. */
export type Self =
  | { kind: "compiled"; execPath: string }
  | { kind: "checkout"; root: string }
  | { kind: "copy"; dir: string };

/** The OS family of this process. */
export function currentOs(): OsFamily {
  return Deno.build.os === "windows" ? "windows" : "posix";
}

/** Describes the running program (compiled binary, installed copy or checkout). */
export function currentSelf(): Promise<Self> {
  if (isCompiled()) return Promise.resolve({ kind: "compiled", execPath: Deno.execPath() });
  const copy = copyDir();
  return Promise.resolve(copy ? { kind: "copy", dir: copy } : { kind: "checkout", root: checkoutRoot() });
}

/** The executable's file name on an OS. */
export function executableFileName(os: OsFamily): string {
  return os === "windows" ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;
}

/** Where config mode keeps the compiled executable. */
export function installedBinaryPath(env: Env, os: OsFamily): string {
  return joinPath(integrationDir(env), "bin", executableFileName(os));
}

/** Where install links the `openviking-kimi` the shell finds; none on Windows or without a home. */
export function pathCommand(env: Env, os: OsFamily): string | undefined {
  if (os === "windows") return undefined;
  const dir = orNoHome(() => commandDir(env));
  return dir && joinPath(dir, EXECUTABLE_NAME);
}

/** What is at the PATH command's place: nothing, our link (and where it points), or something not ours. */
export type CommandAt = { kind: "absent" } | { kind: "ours"; target: string } | { kind: "other" };

/** What is at `path`: our link is a symlink into our integration directory (whether or not it dangles). */
export async function commandAt(path: string, env: Env): Promise<CommandAt> {
  const info = await Deno.lstat(path).catch(() => undefined);
  if (!info) return { kind: "absent" };
  const target = info.isSymlink ? await Deno.readLink(path).catch(() => "") : "";
  const ours = isAbsolutePath(target) && target.startsWith(`${integrationDir(env)}/`);
  return ours ? { kind: "ours", target } : { kind: "other" };
}

/** A program path as the shell Kimi runs hooks with on `os` wants it (backslashes on Windows). */
function nativePath(path: string, os: OsFamily): string {
  return os === "windows" ? path.replace(/\//g, "\\") : path;
}

/** Config mode's hook command prefix: the program (the binary, or a copy's launcher) quoted for cmd or sh. */
export function configCommandPrefix(program: string, os: OsFamily): string {
  const path = nativePath(program, os);
  if (os !== "windows") return shellQuote(path);
  return /^[A-Za-z0-9_@%+=:,./\\-]+$/.test(path) ? path : `"${path.replace(/"/g, '""')}"`;
}

/** The `mcp.json` entry in config mode. */
export function configMcpEntry(program: string, os: OsFamily): McpEntry {
  return { command: nativePath(program, os), args: ["mcp"] };
}

/** Whether two files hold the same bytes (a binary installed again from its download: nothing to copy). */
export async function sameBytes(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([a, b].map((p) => Deno.stat(p).catch(() => undefined)));
  if (!sa?.isFile || !sb?.isFile || sa.size !== sb.size) return false;
  const [ha, hb] = await Promise.all([a, b].map(async (p) => sha256Hex(await Deno.readFile(p))));
  return ha === hb;
}
