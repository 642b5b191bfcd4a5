/**
 * Where the executable that hook entries point at lives, and how it is invoked: the compiled binary copies
 * itself to `~/.openviking/agent-integrations/kimicode/bin/`; a source checkout is run as
 * `<absolute deno> run <cli task flags> --config <root>/deno.json <root>/main.ts` (runtime/self.ts).
 */

import { commandLine, type Invocation, isCompiled, selfInvocation, shellQuote } from "../runtime/self.ts";
import { checkoutRoot } from "../runtime/self.ts";
import { type Env, joinPath, openVikingHome } from "../runtime/paths.ts";
import { EXECUTABLE_NAME } from "./spec.ts";
import type { McpEntry } from "./mcp-json.ts";

/** The operating-system family that decides file names and command quoting. */
export type OsFamily = "posix" | "windows";

/** How this program is being run. */
export type Self =
  | { kind: "compiled"; execPath: string }
  | { kind: "checkout"; invocation: Invocation; root: string };

/** The OS family of this process. */
export function currentOs(): OsFamily {
  return Deno.build.os === "windows" ? "windows" : "posix";
}

/** Describes the running program (compiled binary or checkout). */
export async function currentSelf(): Promise<Self> {
  if (isCompiled()) return { kind: "compiled", execPath: Deno.execPath() };
  return { kind: "checkout", invocation: await selfInvocation([]), root: checkoutRoot() };
}

/** The executable's file name on an OS. */
export function executableFileName(os: OsFamily): string {
  return os === "windows" ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;
}

/** Our directory under OpenViking's home: `~/.openviking/agent-integrations/kimicode`. */
export function integrationDir(env: Env): string {
  return joinPath(openVikingHome(env), "agent-integrations", "kimicode");
}

/** Where config mode keeps the compiled executable. */
export function installedBinaryPath(env: Env, os: OsFamily): string {
  return joinPath(integrationDir(env), "bin", executableFileName(os));
}

/** Quotes one word for cmd.exe (which Kimi's `shell: true` uses on Windows). */
export function cmdQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./\\-]+$/.test(word) ? word : `"${word.replace(/"/g, '""')}"`;
}

/** Renders words as one command line for the shell Kimi runs hooks with. */
export function commandFor(words: readonly string[], os: OsFamily): string {
  return words.map(os === "windows" ? cmdQuote : shellQuote).join(" ");
}

/** The program and arguments that run `openviking-kimi` in config mode (before `hook <event>` / `mcp`). */
function configInvocation(self: Self, env: Env, os: OsFamily): Invocation {
  if (self.kind === "compiled") {
    const path = installedBinaryPath(env, os);
    return { command: os === "windows" ? path.replace(/\//g, "\\") : path, args: [] };
  }
  return self.invocation;
}

/** The hook command prefix in config mode. */
export function configCommandPrefix(self: Self, env: Env, os: OsFamily): string {
  const inv = configInvocation(self, env, os);
  return os === "posix" ? commandLine(inv) : commandFor([inv.command, ...inv.args], os);
}

/** The `mcp.json` entry in config mode. */
export function configMcpEntry(self: Self, env: Env, os: OsFamily): McpEntry {
  const inv = configInvocation(self, env, os);
  return { command: inv.command, args: [...inv.args, "mcp"] };
}

/** Copies a file so that readers see the old or the new one, never half of it (temp + rename), mode 0755. */
export async function copyExecutableAtomic(from: string, to: string, os: OsFamily): Promise<void> {
  const tmp = `${to}.${Deno.pid}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  try {
    await Deno.copyFile(from, tmp);
    if (os === "posix") await Deno.chmod(tmp, 0o755);
    await Deno.rename(tmp, to);
  } catch (error) {
    await Deno.remove(tmp).catch(() => {});
    throw error;
  }
}

/** Whether two paths name the same existing file. */
export async function sameFile(a: string, b: string): Promise<boolean> {
  try {
    const [ra, rb] = await Promise.all([Deno.realPath(a), Deno.realPath(b)]);
    return ra === rb;
  } catch {
    return false;
  }
}
