/**
 * The program install registers, however this process runs: the compiled binary (config mode runs its copy
 * in `…/kimicode/bin/`), an installed program copy installing itself (its own launcher), or a checkout (a
 * program copy built from it and placed: install/copy.ts, copy-place.ts); the steps that put it in place.
 */

import { readTextIfExists } from "../lib/fs.ts";
import { dirName, type Env, joinPath } from "../lib/paths.ts";
import { productionFlags } from "../lib/self.ts";
import { EXECUTABLE_NAME } from "./spec.ts";
import {
  commandAt,
  executableFileName,
  installedBinaryPath,
  type OsFamily,
  pathCommand,
  sameBytes,
  sameFile,
} from "./placement.ts";
import type { PluginFile } from "./plugin.ts";
import {
  checkCreatable,
  type Context,
  makeDirs,
  type Note,
  type Plan,
  type Step,
  swapIn,
  swapStep,
} from "./transaction.ts";
import { buildCopy } from "./copy.ts";
import { copyPlacement, placeCopyStep, placedSource } from "./copy-place.ts";
import { homeStep } from "./copy-homes.ts";
import { launcherName } from "./launcher.ts";

/** The program the registrations run, once in place. */
export interface Program {
  /** What config mode's hooks and `mcp.json` run: the binary's place, or a program copy's launcher. */
  command: string;
  /** The plugin directory's `bin/` file: the binary, or the launcher. */
  pluginBin: PluginFile;
  /** Where the plugin came from (the registry record's `originalSource`). */
  source: string;
  /** A note on what runs. */
  note: Note;
  /** The program copy's id (the sweep keeps it). */
  keep?: string;
}

/**
 * The compiled binary: config mode and the PATH command run its copy in `…/kimicode/bin/` (copied unless the
 * same bytes are there); the Kimi home is recorded among those installed into.
 */
async function binaryProgram(
  ctx: Context,
  self: { execPath: string },
  mode: "config" | "plugin",
  home: string,
  plan: Plan,
): Promise<Program> {
  const target = installedBinaryPath(ctx.env, ctx.os);
  const same = (await sameFile(self.execPath, target)) || (await sameBytes(self.execPath, target));
  const used = mode === "config" || pathCommand(ctx.env, ctx.os) !== undefined;
  if (used && !same) plan.steps.push(copyStep(self.execPath, target, ctx.os));
  const step = await homeStep(ctx.env, home);
  if (step) plan.steps.push(step);
  return {
    command: target,
    pluginBin: {
      path: `bin/${executableFileName(ctx.os)}`,
      content: { copyFrom: self.execPath },
      mode: 0o700,
    },
    source: self.execPath,
    note: "",
  };
}

/** An installed program copy installing itself (say, into another mode): it registers its own launcher. */
async function ownCopyProgram(
  ctx: Context,
  dir: string,
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const launcher = joinPath(dir, "bin", launcherName(ctx.os));
  const text = await readTextIfExists(launcher).catch(() => undefined);
  if (text === undefined) {
    return `this program copy (${dir}) has no launcher ${launcher}; run install from an openviking-kimi ` +
      "checkout or a release binary";
  }
  const step = await homeStep(ctx.env, home);
  if (step) plan.steps.push(step);
  return {
    command: launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o700 },
    source: dir,
    note: "",
    keep: dir.slice(dir.lastIndexOf("/") + 1),
  };
}

/** A checkout: a program copy built from it (install/copy.ts), placed unless the same one is in place. */
async function checkoutProgram(
  ctx: Context,
  root: string,
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const deno = ctx.deno ?? Deno.execPath();
  let placement;
  try {
    const flags = await productionFlags(root);
    // Built by the Deno running install (whose `deno bundle` this relies on); run by the recorded one.
    const copy = await buildCopy(root, Deno.execPath(), flags);
    // The same code placed from another clone keeps the origin it recorded: nothing of it is rewritten.
    const source = (await placedSource(ctx.env, copy.id)) ?? root;
    placement = copyPlacement(copy, ctx.env, ctx.os, { deno, flags, source });
  } catch (error) {
    return `cannot install from the checkout ${root}: ${(error as Error).message}`;
  }
  const step = await placeCopyStep(placement, ctx.env, ctx.os, home);
  if (step) plan.steps.push(step);
  return {
    command: placement.launcher,
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: placement.launcherText, mode: 0o700 },
    source: placement.source,
    note: {
      done: `The hooks run the program copy ${placement.dir} with ${deno}, not this checkout: moving or ` +
        "deleting the checkout changes nothing; run install again to update them.",
      planned: `The hooks would run the program copy ${placement.dir} with ${deno}, not this checkout: ` +
        "moving or deleting the checkout would change nothing; run install again to update them.",
    },
    keep: placement.copy.id,
  };
}

/** Where the PATH command is, and what to add to PATH when its directory is not there. */
function pathNote(env: Env, path: string): Note {
  const dir = dirName(path);
  const where = (env.PATH ?? "").split(":").includes(dir)
    ? `(${dir} is on PATH)`
    : `— ${dir} is not on PATH: add it (\`export PATH="${dir}:$PATH"\` in ~/.profile or your shell's rc ` +
      `file), or run ${path}`;
  return {
    done: `Command: openviking-kimi is ${path} ${where}.`,
    planned: `Command: openviking-kimi would be ${path} ${where}.`,
  };
}

/**
 * Plans the `openviking-kimi` the user's shell finds (placement.ts pathCommand) as a link to `target`: made,
 * or moved to a new target when the link there is ours; never over a file that is not ours.
 */
async function planPathCommand(ctx: Context, target: string, plan: Plan): Promise<void> {
  const path = pathCommand(ctx.env, ctx.os);
  if (!path) return;
  const at = await commandAt(path, ctx.env);
  if (at.kind === "other" || (await checkCreatable(path))) {
    plan.notes.push(
      `Note: no openviking-kimi command placed at ${path} (${
        at.kind === "other" ? "a file that is not ours is there" : `${dirName(path)} cannot be made`
      }; set OPENVIKING_KIMI_BIN_DIR for another place); run ${target}.`,
    );
    return;
  }
  if (at.kind === "absent" || at.target !== target) {
    plan.steps.push(linkStep(path, target));
  }
  plan.notes.push(pathNote(ctx.env, path));
}

/** Plans putting the program in place, however this process runs; returns why it cannot, as a string. */
export async function planProgram(
  ctx: Context,
  mode: "config" | "plugin",
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const self = ctx.self;
  const program = self.kind === "compiled"
    ? await binaryProgram(ctx, self, mode, home, plan)
    : self.kind === "copy"
    ? await ownCopyProgram(ctx, self.dir, home, plan)
    : await checkoutProgram(ctx, self.root, home, plan);
  if (typeof program !== "string") await planPathCommand(ctx, program.command, plan);
  return program;
}

/** The note naming the command the hooks run (would run, in a dry run). */
export function hooksRun(command: string): Note {
  return { done: `Hooks run: ${command}`, planned: `Hooks would run: ${command}` };
}

/** `swapIn` after making `path`'s directory (`private`: 0700); the undo takes both back. */
async function swapInDir(
  path: string,
  make: (tmp: string) => Promise<void>,
  options: { private?: boolean } = {},
) {
  const dir = await makeDirs(dirName(path), options);
  const swap = await swapIn(path, make).catch(async (error) => {
    await dir().catch(() => {});
    throw error;
  });
  return { undo: async () => (await swap.undo(), await dir()), end: swap.end };
}

/** Copies the executable to `target` (mode 0755); the undo puts the one it replaced back. */
function copyStep(from: string, target: string, os: OsFamily): Step {
  const copy = async (tmp: string) => {
    await Deno.copyFile(from, tmp);
    if (os === "posix") await Deno.chmod(tmp, 0o755);
  };
  return swapStep(
    `copy ${from} to ${target}`,
    `copy the executable to ${target}`,
    target,
    () => swapInDir(target, copy, { private: true }),
    `executable copied to ${target}`,
    () => checkCreatable(target),
  );
}

/** Links `path` to `target` (over our link there, atomically); the undo puts back the link it replaced. */
function linkStep(path: string, target: string): Step {
  return swapStep(
    `link ${path} to ${target}`,
    `link ${path}`,
    path,
    () => swapInDir(path, (tmp) => Deno.symlink(target, tmp)),
    `command in place: ${path} (runs ${target})`,
  );
}
