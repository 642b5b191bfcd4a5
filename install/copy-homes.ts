/**
 * The Kimi homes installed into (`kimi-homes` in the integration directory, one absolute path a line):
 * recording one, as a step or inside another, with its undo; which of them still have openviking-kimi
 * registered (a purge keeps what they share: install/uninstall.ts); and what still uses a version — a home
 * registering it, or the PATH command (the sweep keeps that version: install/copy-sweep.ts).
 */

import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { type Env, integrationDir, joinPath, kimiHome, orNoHome } from "../lib/paths.ts";
import { PLUGIN_ID } from "./spec.ts";
import { attempt, checkCreatable, makeDirs, type Step } from "./transaction.ts";
import { launcherName } from "./launcher.ts";
import { readKimiState } from "./detect.ts";

/** The file listing the Kimi homes installed into (one absolute path a line), for the removal rule. */
export function homesFile(env: Env): string {
  return joinPath(integrationDir(env), "kimi-homes");
}

/** The lines of the homes file as they are (none when it is missing or unreadable). */
export async function listedHomes(env: Env): Promise<string[]> {
  return (await readTextIfExists(homesFile(env)).catch(() => undefined))?.split("\n") ?? [];
}

/** The step that records `kimiHome` among the homes installed into (none when it is listed already). */
export async function homeStep(env: Env, kimiHome: string): Promise<Step | undefined> {
  const listed = await listedHomes(env);
  if (listed.includes(kimiHome)) return undefined;
  return {
    describe: `record ${kimiHome} in ${homesFile(env)}`,
    check: () => checkCreatable(homesFile(env)),
    run: () =>
      attempt(`record ${kimiHome} in ${homesFile(env)}`, async () => {
        const dirs = await makeDirs(integrationDir(env), { private: true });
        const undo = await recordHome(env, kimiHome, listed);
        return { changed: homesFile(env), undo: async () => (await undo(), await dirs()) };
      }),
  };
}

/** Adds `home` to the list of Kimi homes installed into (`listed`: the list as read); returns the undo. */
export async function recordHome(env: Env, home: string, listed: string[]): Promise<() => Promise<void>> {
  if (listed.includes(home)) return () => Promise.resolve();
  const path = homesFile(env);
  const before = await readTextIfExists(path);
  const kept = listed.filter((l) => l.trim() !== "");
  await writeFileAtomic(path, `${[...kept, home].join("\n")}\n`, { privateDir: false });
  return async () => {
    if (before === undefined) await Deno.remove(path).catch(() => {});
    else await writeFileAtomic(path, before, { privateDir: false });
  };
}

/** The Kimi homes of `env` installed into, and `also`. */
export async function knownHomes(env: Env, also: string[]): Promise<string[]> {
  const listed = await listedHomes(env);
  return [
    ...new Set(
      [...listed, ...also].map((l) => l.trim()).filter((l) => l.startsWith("/") || /^[A-Za-z]:/.test(l)),
    ),
  ];
}

/**
 * The Kimi homes other than `except` where openviking-kimi is still registered (our block, our `mcp.json`
 * entry or our plugin): they share what purging `except` would otherwise delete. The homes installed into,
 * and the default one (an install from before the list was kept).
 */
export async function installedHomes(env: Env, except: string): Promise<string[]> {
  const homes = await knownHomes(env, [orNoHome(() => kimiHome(env)) ?? ""]);
  const installed: string[] = [];
  for (const home of homes.filter((h) => h !== except)) {
    const state = await readKimiState(home);
    // A home whose files cannot be read may have it: what it may use stays.
    const ours = state.blocks.some((b) => b.owner === "ours") || state.mcpOwner === "ours" ||
      state.plugin?.owner === "ours" || state.unreadable.length > 0;
    if (ours) installed.push(home);
  }
  return installed;
}

/**
 * What still uses version `id`, in words: the `command` linked to it (the PATH command, when given), or the
 * first Kimi home whose registration (config.toml, mcp.json, plugin launcher) names it; undefined: nothing.
 */
export async function usedBy(id: string, homes: string[], command?: string): Promise<string | undefined> {
  if (command && (await Deno.readLink(command).catch(() => "")).includes(`/${id}/`)) {
    return `the command ${command} runs it`;
  }
  for (const home of homes) {
    const plugin = joinPath(home, "plugins", "managed", PLUGIN_ID, "bin");
    const files = [
      joinPath(home, "config.toml"),
      joinPath(home, "mcp.json"),
      joinPath(plugin, launcherName("posix")),
      joinPath(plugin, launcherName("windows")),
    ];
    for (const f of files) {
      if ((await readTextIfExists(f).catch(() => undefined))?.includes(id)) {
        return `the Kimi home ${home} runs it`;
      }
    }
  }
  return undefined;
}
