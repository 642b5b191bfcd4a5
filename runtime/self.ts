/**
 * How this program runs itself again: the compiled binary is its own path; from a checkout it is the running
 * deno with the production flags of deno.json's `cli` task (the one place they are defined) and this
 * checkout's main.ts. Used by the detached hook worker and by the installer's hook commands.
 */

import { joinPath } from "./paths.ts";

/** A program and its arguments. */
export interface Invocation {
  command: string;
  args: string[];
}

/** The checkout's root directory (where deno.json and main.ts live). */
export function checkoutRoot(): string {
  const url = new URL("../", import.meta.url);
  return decodeURIComponent(url.pathname).replace(/^\/([A-Za-z]:)/, "$1").replace(/\/$/, "");
}

/** Extracts the permission and runtime flags from a `deno run … main.ts` task line. */
export function flagsFromTask(task: string): string[] {
  const tokens = task.trim().split(/\s+/);
  const run = tokens.indexOf("run");
  const main = tokens.findIndex((t) => t.endsWith("main.ts"));
  if (tokens[0] !== "deno" || run !== 1 || main < 0) throw new Error(`unexpected cli task: ${task}`);
  return tokens.slice(run + 1, main);
}

/** The production flags, read from `<root>/deno.json` task `cli`. */
export async function productionFlags(root = checkoutRoot()): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(joinPath(root, "deno.json"))) as {
    tasks?: Record<string, string>;
  };
  const task = config.tasks?.cli;
  if (!task) throw new Error(`${root}/deno.json has no "cli" task`);
  return flagsFromTask(task);
}

/** Whether this process is the compiled standalone binary. */
export function isCompiled(): boolean {
  return Deno.build.standalone === true;
}

/** The invocation that runs `openviking-kimi <args>` the way this process was run. */
export async function selfInvocation(args: string[]): Promise<Invocation> {
  if (isCompiled()) return { command: Deno.execPath(), args };
  const root = checkoutRoot();
  return {
    command: Deno.execPath(),
    args: [
      "run",
      ...(await productionFlags(root)),
      "--config",
      joinPath(root, "deno.json"),
      joinPath(root, "main.ts"),
      ...args,
    ],
  };
}

/** Quotes one word for a POSIX shell (`sh -c`), as Kimi Code runs hook commands. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Renders an invocation as one shell command line. */
export function commandLine(inv: Invocation): string {
  return [inv.command, ...inv.args].map(shellQuote).join(" ");
}
