/**
 * A run as one transaction: every check before the first write, a dry run's diff, then the steps in order,
 * each keeping what it replaced aside until all succeeded; a failure puts back those taken, last first.
 */

import { createTwoFilesPatch } from "diff";
import { writeFileAtomic } from "../lib/fs.ts";
import { dirName, type Env, isAbsolutePath, joinPath, processEnv } from "../lib/paths.ts";
import { invocationCwd } from "../lib/self.ts";
import { currentOs, currentSelf, type OsFamily, type Self } from "./spec.ts";
import { type CredentialArgs, maskSecrets } from "./ovcli.ts";

/** Where messages go (tests capture them). */
export interface Output {
  info(line: string): void;
  error(line: string): void;
}

/** Parsed options of install and uninstall. */
export interface InstallOptions {
  kimiHome?: string;
  credentials: CredentialArgs;
  dryRun: boolean;
  yes: boolean;
  purge: boolean;
}

/** Everything a run needs, injectable for tests; `deno`: the Deno a program copy records (default: this one). */
export interface Context {
  env: Env;
  self: Self;
  os: OsFamily;
  out: Output;
  now: Date;
  cwd: string;
  deno?: string;
  fetch?: typeof fetch;
}

/** The context of a real run: this process, its environment, the console, now. */
export async function defaultContext(): Promise<Context> {
  const out = { info: (l: string) => console.log(l), error: (l: string) => console.error(l) };
  return {
    env: processEnv(),
    self: await currentSelf(),
    os: currentOs(),
    out,
    now: new Date(),
    cwd: invocationCwd(),
  };
}

/** A note after the run: the same words always, or its words once done (or, `planned`, as a dry run says them). */
export type Note = string | ((planned: boolean) => string);

/** What a step did: its message, what it changed (named by a rollback), its undo, and what ends it once all succeeded. */
export interface Done {
  message?: string;
  changed?: string;
  undo?: () => Promise<void>;
  /** Ends the step: what it did then (said done) and what it left undone, with why (said as notes). */
  commit?: () => Promise<{ done: string[]; notes?: string[] } | void>;
}

/** An action of a run: described for dry runs, why it cannot be taken, the path it removes, the text change it makes. */
export interface Step {
  describe: string;
  check?: () => Promise<string | undefined>;
  run: () => Promise<Done>;
  removes?: string;
  change?: FileChange;
}

/**
 * A planned change of one text file (`undefined`: absent); `backup` "none": all of it was ours; `displayOnly`:
 * a dry run's diff only (another step writes it); `secret`: masked in a dry run and written 0600.
 */
export interface FileChange {
  path: string;
  before: string | undefined;
  after: string | undefined;
  backup: "bak" | "none";
  displayOnly?: boolean;
  secret?: boolean;
}

/** A planned run. */
export interface Plan {
  steps: Step[];
  notes: Note[];
}

const NOTHING = "nothing was changed";

const FS_WORDS: Record<string, string> = {
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  EROFS: "the file system is read-only",
  EACCES: "permission denied",
  EPERM: "the operation is not permitted",
  ENOENT: "a directory on its path does not exist",
  ENOTDIR: "a part of its path is a file, not a directory",
  EISDIR: "it is a directory",
  ENAMETOOLONG: "the file name is too long",
  ELOOP: "its symbolic links go round in a loop",
  EBUSY: "it is in use",
  ETXTBSY: "it is in use",
  EIO: "an input/output error",
  EXDEV: "it is on another file system",
  ENOTEMPTY: "the directory is not empty",
};

const codeOf = (error: unknown) => (error as { code?: unknown })?.code;

/** A file-system error in words (no Deno error text). */
export function describeFsError(error: unknown): string {
  const code = codeOf(error);
  if (typeof code === "string" && FS_WORDS[code]) return FS_WORDS[code];
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\(os error \d+\)[^]*$/, "").replace(/^\w+:\s*/, "") || "it failed";
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A text file byte for byte (BOM kept); undefined when absent; a failure names the file and the fix. */
export async function readText(
  path: string,
): Promise<{ ok: true; text: string | undefined } | { ok: false; error: string; reason: string }> {
  const refuse = (reason: string, fix: string) =>
    ({
      ok: false,
      reason,
      error: `${path} cannot be read (${reason}). ${fix} and run again; ${NOTHING}.`,
    }) as const;
  try {
    return { ok: true, text: utf8.decode(await Deno.readFile(path)) };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { ok: true, text: undefined };
    if (error instanceof Deno.errors.IsADirectory) {
      return refuse("it is a directory, not a file", "Move it away");
    }
    if (error instanceof TypeError) {
      return refuse("it is not UTF-8 text", `Save it as UTF-8 (or restore ${path}.bak)`);
    }
    return refuse(describeFsError(error), "Fix that");
  }
}

const lstat = (path: string) =>
  Deno.lstat(path).catch((e) => (e instanceof Deno.errors.NotFound ? undefined : Promise.reject(e)));

/** Why a file cannot be created at `path` (its nearest existing ancestor is not a directory), or undefined. */
export async function checkCreatable(path: string): Promise<string | undefined> {
  for (let dir = dirName(path); dir !== ""; dir = dirName(dir)) {
    const info = await Deno.stat(dir).catch((e) => e as Error);
    if (info instanceof Deno.errors.NotFound && dirName(dir) !== dir) continue;
    if (info instanceof Error) {
      return `cannot create ${path}: ${dir} cannot be used (${describeFsError(info)}); ${NOTHING}.`;
    }
    return info.isDirectory
      ? undefined
      : `cannot create ${path}: ${dir} is a file, not a directory. Move it away and run again; ${NOTHING}.`;
  }
  return undefined;
}

async function checkChange(change: FileChange): Promise<string | undefined> {
  if (change.displayOnly || change.before === change.after) return undefined;
  const { path } = change;
  let info = await lstat(path).catch((e) => e as Error);
  if (info instanceof Error) {
    return `${path} cannot be used (${describeFsError(info)}). Fix that and run again; ${NOTHING}.`;
  }
  let target = path;
  if (info?.isSymlink) {
    try {
      target = await Deno.realPath(path);
      info = await Deno.stat(target);
    } catch (error) {
      // Where the chain of links ends: the first path that is not a link, or does not exist.
      let end = path;
      for (let hops = 0; hops < 40 && (await lstat(end).catch(() => undefined))?.isSymlink; hops++) {
        const link = await Deno.readLink(end);
        end = isAbsolutePath(link) ? link : joinPath(dirName(end), link);
      }
      return error instanceof Deno.errors.NotFound
        ? `${path} is a symbolic link to ${end}, which does not exist. Create ${end}, point the link at an ` +
          `existing file, or remove the link, then run again; ${NOTHING}.`
        : `${path} is a symbolic link to ${end}, which cannot be reached (${
          describeFsError(error)
        }). Fix or ` +
          `remove the link and run again; ${NOTHING}.`;
    }
  }
  const via = target === path ? "" : ` (${path} links there)`;
  if (info?.isDirectory) {
    return `${target}${via} is a directory, not a file. Move it away and run again; ${NOTHING}.`;
  }
  if (info && !info.isFile) {
    return `${target}${via} is not a regular file. Move it away and run again; ${NOTHING}.`;
  }
  if (!info) return await checkCreatable(target);
  if (
    change.before !== undefined && change.backup === "bak" &&
    (await lstat(`${path}.bak`).catch(() => undefined))?.isDirectory
  ) {
    return `${path}.bak is a directory, so the previous ${path} cannot be kept there. Move it away and run again; ${NOTHING}.`;
  }
  return undefined;
}

/**
 * Puts at `path` what `make` makes at a hidden sibling (missing parents made 0700; `privateDir`: the parent
 * itself 0700); no `make`: a removal. What was there waits aside (a file hard-linked) until `end` deletes it or
 * renames it to `keepAs`; `undo` puts it back.
 */
async function swapIn(
  path: string,
  make?: (tmp: string) => Promise<void>,
  options: { keepAs?: string; privateDir?: boolean } = {},
): Promise<{ undo: () => Promise<void>; end: () => Promise<void> }> {
  const [dir, id] = [dirName(path), crypto.randomUUID().slice(0, 8)];
  const base = path.slice(dir.length + 1);
  const [tmp, aside] = [joinPath(dir, `.${base}.${id}.tmp`), joinPath(dir, `.${base}.${id}.previous`)];
  const undos: (() => Promise<void>)[] = [];
  const undo = async () => {
    for (const u of undos.reverse()) await u();
  };
  const old = await lstat(path);
  try {
    if (make) {
      const made: string[] = [];
      for (let d = dir; d !== "" && !(await lstat(d).catch(() => undefined)); d = dirName(d)) {
        made.push(d);
        if (dirName(d) === d) break;
      }
      const tighten = options.privateDir && Deno.build.os !== "windows";
      const mode = tighten && !made.length ? (await Deno.stat(dir)).mode! & 0o7777 : 0o700;
      await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
      if (tighten) await Deno.chmod(dir, 0o700);
      undos.push(async () => {
        if (mode !== 0o700) await Deno.chmod(dir, mode);
        for (const d of made) await Deno.remove(d).catch(() => {});
      });
      undos.push(() => Deno.remove(tmp, { recursive: true }).catch(() => {}));
      await make(tmp);
    }
    if (old?.isFile && make) await Deno.link(path, aside).catch(() => Deno.copyFile(path, aside));
    else if (old) await Deno.rename(path, aside);
    if (old) undos.push(() => Deno.rename(aside, path));
    if (make) {
      if (old && !old.isFile) undos.push(() => Deno.remove(path, { recursive: true }).catch(() => {}));
      await Deno.rename(tmp, path);
      if (!old) undos.push(() => Deno.remove(path, { recursive: true }));
    }
  } catch (error) {
    await undo().catch(() => {});
    throw error;
  }
  const end = async () => {
    if (old) {
      const { keepAs } = options;
      await (keepAs ? Deno.rename(aside, keepAs) : Deno.remove(aside, { recursive: true })).catch(() => {});
    }
  };
  return { undo, end };
}

/** The step doing one {@link swapIn} of `path` (no `make`: it removes `path`); its file-system errors in words. */
export function swapStep(
  s: Pick<Step, "describe" | "check" | "change"> & {
    path: string;
    message: string;
    make?: (tmp: string) => Promise<void>;
    keepAs?: string;
    privateDir?: boolean;
  },
): Step {
  const { describe, check, change } = s;
  const run = async () => {
    try {
      const { undo, end } = await swapIn(s.path, s.make, s);
      return { message: s.message, changed: s.path, undo, commit: end };
    } catch (error) {
      if (typeof codeOf(error) !== "string") throw error;
      throw new Error(
        `could not ${s.make ? `put ${s.path} in place` : `remove ${s.path}`}: ${describeFsError(error)}`,
      );
    }
  };
  return { describe, check, change, removes: s.make ? undefined : s.path, run };
}

/** The step removing `path` (moved aside, deleted once the run succeeded). */
export const removalStep = (path: string, describe: string, message: string): Step =>
  swapStep({ describe, path, message });

/** A file of a directory placed whole: its path below the directory ("/"), its content (or a file to copy), mode. */
export interface TreeFile {
  path: string;
  content: string | Uint8Array | { copyFrom: string };
  mode: number;
}

/** Writes `files` (and the empty directories `dirs`) under a new directory `root`, all 0700/their modes. */
export async function writeTree(
  root: string,
  files: readonly TreeFile[],
  dirs: string[] = [],
): Promise<void> {
  await Deno.mkdir(root, { mode: 0o700 });
  for (const d of dirs) await Deno.mkdir(joinPath(root, d), { recursive: true, mode: 0o700 });
  for (const { path: name, content, mode } of files) {
    const path = joinPath(root, name);
    await Deno.mkdir(dirName(path), { recursive: true, mode: 0o700 });
    const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
    if ("copyFrom" in bytes) await Deno.copyFile(bytes.copyFrom, path);
    else await Deno.writeFile(path, bytes, { mode });
    if (Deno.build.os !== "windows") await Deno.chmod(path, mode);
  }
  if (Deno.build.os !== "windows") await Deno.chmod(root, 0o700);
}

const writeText = (path: string, text: string, mode = 0o600) =>
  writeFileAtomic(path, text, { mode, privateDir: false, durable: true });

/**
 * The step writing one planned change (and its `.bak`), through a symlink to where it points, in the file's
 * own mode (0600 for a new one or one holding a key); `say` in place of the words made of `what` ("" says nothing).
 */
export function fileStep(
  change: FileChange,
  what: string,
  say: { describe?: string; message?: string } = {},
): Step {
  const { path, before, after } = change;
  const verb = after === undefined ? "delete" : before === undefined ? "create" : "update";
  const run = async () => {
    const swaps: { undo: () => Promise<void>; end: () => Promise<void> }[] = [];
    const undo = async () => {
      for (const swap of [...swaps].reverse()) await swap.undo();
    };
    let target = path;
    try {
      const now = await readText(path);
      if (!now.ok || now.text !== before) {
        throw new Error(`${path} changed while openviking-kimi was working on it; run the command again.`);
      }
      const bak = before !== undefined && change.backup === "bak" ? `${path}.bak` : undefined;
      if (bak) swaps.push(await swapIn(bak, (tmp) => writeText(tmp, before!)));
      if (after !== undefined && (await lstat(path))?.isSymlink) target = await Deno.realPath(path);
      const info = change.secret ? undefined : await lstat(target).catch(() => undefined);
      const mode = info?.isFile && info.mode !== null ? info.mode & 0o7777 : 0o600;
      swaps.push(
        await swapIn(target, after === undefined ? undefined : (tmp) => writeText(tmp, after, mode)),
      );
      return {
        message: say.message ?? (bak ? `${what}: ${path} (previous copy in ${bak})` : `${what}: ${path}`),
        changed: path,
        undo,
        commit: async () => void (await Promise.all(swaps.map((swap) => swap.end()))),
      };
    } catch (error) {
      await undo().catch(() => {});
      if (typeof codeOf(error) !== "string") throw error;
      const via = target === path ? "" : ` (${path} links there)`;
      throw new Error(`could not write ${target}${via}: ${describeFsError(error)}`);
    }
  };
  return {
    describe: say.describe ?? `${verb} ${path} (${what})`,
    removes: after === undefined ? path : undefined,
    run,
  };
}

/** Plans a change of one of Kimi's files and the step that writes it. */
export function planFile(
  plan: Plan,
  path: string,
  before: string | undefined,
  after: string | undefined,
  what: string,
  backup: FileChange["backup"] = "bak",
): void {
  const change: FileChange = { path, before, after, backup };
  plan.steps.push({ ...fileStep(change, what), change });
}

/** A unified diff (3 lines of context) from `before` to `after`; "" when equal. A CR shows as `␍`. */
export function unifiedDiff(path: string, before: string | undefined, after: string | undefined): string {
  if (before === after) return "";
  const shown = (t: string | undefined) => (t ?? "").replace(/\r(?=\n|$)/g, "␍");
  const [from, to] = [
    before === undefined ? "/dev/null" : `${path} (now)`,
    after === undefined ? "/dev/null" : `${path} (after)`,
  ];
  const patch = createTwoFilesPatch(from, to, shown(before), shown(after), undefined, undefined, {
    context: 3,
  });
  return patch.slice(patch.indexOf("\n") + 1); // without the "====" line
}

/** Reports `message` as the run's error; returns the exit code (1 unless told). */
export function fail(out: Output, command: "install" | "uninstall", message: string, code = 1): number {
  out.error(`openviking-kimi ${command}: ${message}`);
  return code;
}

async function execute(plan: Plan, out: Output): Promise<string | undefined> {
  const done: Done[] = [];
  for (const step of plan.steps) {
    try {
      done.push(await step.run());
    } catch (error) {
      const reason = typeof codeOf(error) === "string"
        ? `${step.describe} failed: ${describeFsError(error)}`
        : (error as Error).message;
      const taken = done.filter((d) => d.undo);
      if (!taken.length) return `${reason}; ${NOTHING}. Fix that and run again.`;
      const failed: string[] = [];
      for (const d of taken.toReversed()) await d.undo!().catch((e) => failed.push(describeFsError(e)));
      const names = taken.flatMap((d) => (d.changed ? [d.changed] : [])).join(", ");
      return failed.length
        ? `${reason}. Rolled back the changes already made (${names}), except: ${failed.join("; ")}. The ` +
          "previous content of each file is in its .bak copy."
        : `${reason}. Rolled back the changes already made: ${names} as before, so ${NOTHING}. Fix that and run again.`;
    }
  }
  const [finished, undone]: string[][] = [[], []];
  for (const d of done) {
    const ended = await d.commit?.();
    finished.push(...ended?.done ?? []);
    undone.push(...ended?.notes ?? []);
  }
  for (const line of [...done.flatMap((d) => d.message || []), ...finished]) out.info(`  ✓ ${line}`);
  for (const line of undone) out.info(`Note: ${line}.`);
  return undefined;
}

/**
 * Checks the plan, then prints it (dry run) or carries it out; returns the exit code. `outcome`: the command
 * (for errors), what it says before, after, and when there is nothing to do.
 */
export async function carryOut(
  plan: Plan,
  out: Output,
  outcome: {
    command: "install" | "uninstall";
    dryRun: boolean;
    start: string;
    done?: string | (() => string);
    nothing: string;
  },
): Promise<number> {
  const changes = plan.steps.flatMap((s) => (s.change ? [s.change] : []));
  for (const check of [...changes.map((c) => () => checkChange(c)), ...plan.steps.map((s) => s.check)]) {
    const problem = await check?.();
    if (problem) return fail(out, outcome.command, problem);
  }
  const notes = (planned: boolean) => {
    for (const n of plan.notes) out.info(typeof n === "string" ? n : n(planned));
  };
  if (plan.steps.length === 0) {
    out.info(`${outcome.dryRun ? "Dry run: nothing" : "Nothing"} to change: ${outcome.nothing}`);
    notes(false);
    return 0;
  }
  if (outcome.dryRun) {
    out.info("Dry run: nothing was changed. These changes would be made:");
    for (const step of plan.steps) out.info(`  - ${step.describe}`);
    for (const c of changes) {
      const show = (t: string | undefined) => (t !== undefined && c.secret ? maskSecrets(t) : t);
      const diff = unifiedDiff(c.path, show(c.before), show(c.after));
      if (diff) out.info(diff.trimEnd());
    }
    notes(true);
    return 0;
  }
  out.info(outcome.start);
  const failed = await execute(plan, out);
  if (failed) return fail(out, outcome.command, failed);
  notes(false);
  if (outcome.done) out.info(typeof outcome.done === "string" ? outcome.done : outcome.done());
  return 0;
}
