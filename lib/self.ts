/** This program as it runs (binary, installed copy or checkout): how it runs itself again, what a message calls it. */

import {
  commandDir,
  type Env,
  integrationDir,
  isAbsolutePath,
  joinPath,
  orNoHome,
  processEnv,
} from "./paths.ts";

/** An installed copy's files: its bundles (all, and the `hook <event>` path), its record, its lock, its cache. */
export const COPY_FILES = {
  main: "main.js",
  hook: "hook.js",
  info: "copy.json",
  lock: "in-use.lock",
  denoDir: "cache",
} as const;

/** The flags an installed copy runs with besides the production ones. */
export const COPY_RUN_FLAGS: readonly string[] = "--no-config --no-npm --no-remote --v8-flags=--no-lazy"
  .split(" ");

/** The file path of a directory URL, without its final slash. */
const pathOf = (url: URL) =>
  decodeURIComponent(url.pathname).replace(/^\/([A-Za-z]:)/, "$1").replace(/\/$/, "");

/** The checkout's root directory (where deno.json and main.ts live). */
export const checkoutRoot = (): string => pathOf(new URL("../", import.meta.url));

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
  const task = JSON.parse(await Deno.readTextFile(joinPath(root, "deno.json"))).tasks?.cli;
  return task ? flagsFromTask(task) : Promise.reject(new Error(`${root}/deno.json has no "cli" task`));
}

/** Whether this process is the compiled standalone binary. */
export const isCompiled = (): boolean => Deno.build.standalone === true;

/** The directory of the installed copy this process runs from (its bundles sit there); else undefined. */
export function copyDir(): string | undefined {
  const url = new URL(import.meta.url);
  const name = url.pathname.slice(url.pathname.lastIndexOf("/") + 1);
  if (url.protocol !== "file:" || (name !== COPY_FILES.main && name !== COPY_FILES.hook)) return undefined;
  return pathOf(new URL(".", url));
}

let lockFile: Deno.FsFile | undefined;

/** In an installed copy, holds a shared lock on its `in-use.lock` while this process lives; never waits. */
export function holdCopyLock(): void {
  const dir = copyDir();
  if (!dir || lockFile) return;
  try {
    const file = Deno.openSync(joinPath(dir, COPY_FILES.lock), { read: true });
    if (file.tryLockSync(false)) lockFile = file;
    else file.close();
  } catch { /* no lock file (a hand-made copy) or an unreadable one: nothing to hold */ }
}

/** Lets go of this process's hold on its copy (before a run removes versions). */
export function releaseCopyLock(): void {
  lockFile?.close();
  lockFile = undefined;
}

/** The production flags an installed copy recorded in its copy.json. */
async function copyFlags(dir: string): Promise<string[]> {
  const info = JSON.parse(await Deno.readTextFile(joinPath(dir, COPY_FILES.info))) as { flags?: unknown };
  if (!Array.isArray(info.flags) || !info.flags.every((f) => typeof f === "string")) {
    throw new Error(`${dir}/${COPY_FILES.info} has no flags`);
  }
  return info.flags;
}

/** The entry of an installed copy that runs `args`: the lean hook bundle for `hook <event>`, else main. */
const copyEntry = (args: readonly string[]): string =>
  args.length === 2 && args[0] === "hook" && !args[1].startsWith("-") ? COPY_FILES.hook : COPY_FILES.main;

/** The program and arguments that run `openviking-kimi <args>` the way this process was run. */
export async function selfInvocation(args: string[]): Promise<{ command: string; args: string[] }> {
  const [command, copy, root] = [Deno.execPath(), copyDir(), checkoutRoot()];
  if (isCompiled()) return { command, args };
  const run = copy
    ? [...(await copyFlags(copy)), ...COPY_RUN_FLAGS, joinPath(copy, copyEntry(args))]
    : [...(await productionFlags(root)), "--config", joinPath(root, "deno.json"), joinPath(root, "main.ts")];
  return { command, args: ["run", ...run, ...args] };
}

/** Quotes one word for a POSIX shell (`sh -c`), as Kimi Code runs hook commands. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The real path of `path`, or undefined when nothing is there. */
function realPath(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch { /* nothing there */ }
}

/** Quotes a path for the user's shell (cmd.exe's double quotes on Windows). */
function quotePath(path: string): string {
  if (Deno.build.os !== "windows") return shellQuote(path);
  return /^[A-Za-z0-9_@%+=:,./\\-]+$/.test(path) ? path : `"${path}"`;
}

/** The words that run openviking-kimi here: the bare name when PATH finds ours, else an absolute path or the task. */
export function commandName(env: Env = processEnv()): string {
  const windows = Deno.build.os === "windows";
  const copy = copyDir();
  const running = isCompiled()
    ? Deno.execPath()
    : copy && joinPath(copy, "bin", windows ? "openviking-kimi.cmd" : "openviking-kimi");
  const self = running ? realPath(running) : undefined;
  const isOurs = (path: string) =>
    inIntegration(path, env) || (self !== undefined && realPath(path) === self);
  const names = windows ? ["openviking-kimi.exe", "openviking-kimi.cmd"] : ["openviking-kimi"];
  const dirs = (env.PATH ?? "").split(windows ? ";" : ":").filter(isAbsolutePath);
  // The shell runs the first one PATH finds: when it is not ours, ours is named by its path.
  const hit = dirs.flatMap((d) => names.map((n) => joinPath(d, n))).find((p) => realPath(p) !== undefined);
  if (hit && isOurs(hit)) return "openviking-kimi";
  const placed = windows ? undefined : orNoHome(() => joinPath(commandDir(env), "openviking-kimi"));
  if (placed && isOurs(placed)) return quotePath(placed);
  if (running) return quotePath(running);
  return checkoutTask(checkoutRoot());
}

/** The words that run the checkout at `root`. */
const checkoutTask = (root: string) => `deno task -q --config ${quotePath(joinPath(root, "deno.json"))} cli`;

/** Whether `path` really lies inside our integration directory (copies, the installed binary, the launcher). */
function inIntegration(path: string, env: Env): boolean {
  const [base, real] = [realPath(orNoHome(() => integrationDir(env)) ?? ""), realPath(path)];
  return base !== undefined && real !== undefined && real.startsWith(base) && /[\\/]/.test(real[base.length]);
}

/** The directory the user ran this command in (`deno task` runs a checkout's task in its root: `INIT_CWD`). */
export function invocationCwd(env: Env = processEnv()): string {
  const [cwd, init] = [Deno.cwd(), env.INIT_CWD];
  if (isCompiled() || copyDir() || !init || !isAbsolutePath(init)) return cwd;
  return realPath(cwd) === realPath(checkoutRoot()) ? init : cwd;
}

/** The workspace a command works on: `given` (relative to {@link invocationCwd}) or that; undefined if no directory. */
export async function workspaceDir(
  given: string | undefined,
  env = processEnv(),
): Promise<string | undefined> {
  const here = invocationCwd(env);
  const dir = given === undefined ? here : isAbsolutePath(given) ? given : joinPath(here, given);
  return (await Deno.stat(dir).then((i) => i.isDirectory, () => false)) ? dir : undefined;
}
