/**
 * Install's planner for plugin mode: config mode taken out first (our block and `mcp.json` entry, the config
 * mode skill), then the plugin directory placed whole unless it is in place byte for byte, and its record in
 * plugins/installed.json; and taking that record out again (switching to config mode, uninstall).
 */

import { readTextIfExists } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";
import { PLUGIN_ID } from "./spec.ts";
import { outsideHooksProblem, planConfigUninstall } from "./toml-block.ts";
import { planMcpUninstall } from "./json-files.ts";
import { planRegistryInstall, planRegistryUninstall } from "./json-files.ts";
import { backupFor } from "./backup.ts";
import type { KimiState } from "./detect.ts";
import { sameBytes } from "./placement.ts";
import { manifestText, placePluginDir, type PluginFile } from "./plugin.ts";
import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import {
  attempt,
  checkCreatable,
  type Context,
  type InstallOptions,
  makeDirs,
  type Plan,
  planFile,
  type Step,
  swapIn,
} from "./transaction.ts";
import { planConfigSkillRemoval, pluginMemoryFiles } from "./memory-files.ts";
import { hooksRun, type Program } from "./program.ts";

/** Plans removing our record from plugins/installed.json; returns why it cannot, or undefined. */
export function planUnregister(plan: Plan, state: KimiState, what: string): string | undefined {
  const reg = planRegistryUninstall(state.registryText);
  if (!reg.ok) return reg.error;
  const backup = backupFor("registry", state.registryText, state.plugin?.owner === "ours");
  planFile(plan, state.paths.registry, state.registryText, reg.after, what, backup);
  return undefined;
}

/** Plans taking config mode out before plugin mode goes in: our block, and our `mcp.json` entry. */
function planLeaveConfigMode(options: InstallOptions, state: KimiState, plan: Plan): string | undefined {
  const cfg = planConfigUninstall(state.configText, { removeUpstream: options.yes });
  if (!cfg.ok) return cfg.error;
  if (cfg.changed) {
    const what = "config-mode hooks removed (switching to plugin mode)";
    planFile(
      plan,
      state.paths.config,
      state.configText,
      cfg.after,
      what,
      backupFor("config", state.configText),
    );
  }
  const outside = outsideHooksProblem(state.strayHooks, state.upstreamHooks);
  if (outside) return outside;
  const mcp = planMcpUninstall(state.mcpText, { removeUpstream: options.yes });
  if (!mcp.ok) return mcp.error;
  if (mcp.changed) {
    const what = "config-mode MCP entry removed (the plugin declares it)";
    planFile(plan, state.paths.mcp, state.mcpText, mcp.after, what, backupFor("mcp", state.mcpText));
  }
  return undefined;
}

/** The files of the plugin directory: its manifest, its `bin/` (the binary, or a program copy's launcher), memory's. */
function pluginFiles(ctx: Context, program: Program): PluginFile[] {
  return [
    { path: "kimi.plugin.json", content: manifestText(ctx.os), mode: 0o600 },
    ...pluginMemoryFiles(),
    program.pluginBin,
  ];
}

/**
 * Whether the plugin directory holds these files already, byte for byte and with their modes (then it is not
 * placed again).
 */
async function pluginInPlace(root: string, files: PluginFile[]): Promise<boolean> {
  for (const f of files) {
    const path = joinPath(root, f.path);
    const mode = await Deno.stat(path).then((i) => i.mode, () => null);
    if (mode === null || (mode !== undefined && Deno.build.os !== "windows" && (mode & 0o777) !== f.mode)) {
      return false;
    }
    if (typeof f.content !== "string") {
      if (!(await sameBytes(path, f.content.copyFrom))) return false; // a binary: compared as it streams
      continue;
    }
    const now = await readTextIfExists(path).catch(() => undefined);
    // The hooks rewrite the system prompt with the user's profile: it is in place when it is there.
    if (now === undefined || (f.path !== SYSTEM_PROMPT_FILE && now !== f.content)) return false;
  }
  return true;
}

/**
 * Plans placing the plugin directory at `root` whole, unless ours is there with these files already;
 * returns whether it is placed.
 */
async function planPluginDir(
  ctx: Context,
  state: KimiState,
  root: string,
  program: Program,
  plan: Plan,
): Promise<boolean> {
  const manifestPath = joinPath(root, "kimi.plugin.json");
  const files = pluginFiles(ctx, program);
  const placing = state.plugin?.owner !== "ours" || !(await pluginInPlace(root, files));
  if (!placing) return false;
  // Shown in dry runs only: the directory itself is placed whole by the step below.
  plan.changes.push({
    path: manifestPath,
    before: await readTextIfExists(manifestPath).catch(() => undefined),
    after: manifestText(ctx.os),
    backup: "bak",
    displayOnly: true,
  });
  const keepPrevious = state.plugin?.owner === "upstream" || state.plugin?.owner === "other";
  const bin = program.pluginBin.path.slice("bin/".length);
  plan.steps.push(
    placeStep(
      state.paths.managedDir,
      files,
      { keepPrevious, now: ctx.now },
      `place the plugin directory ${root} (kimi.plugin.json, bin/${bin})`,
    ),
  );
  return true;
}

/** Plans plugin mode: config mode out, the plugin directory placed whole, its registry record. */
export async function planPluginMode(
  ctx: Context,
  options: InstallOptions,
  state: KimiState,
  program: Program,
  plan: Plan,
): Promise<string | undefined> {
  if (state.registryError) return state.registryError;
  const leave = planLeaveConfigMode(options, state, plan);
  if (leave) return leave;
  await planConfigSkillRemoval(state, plan);
  const root = joinPath(state.paths.managedDir, PLUGIN_ID);
  const placing = await planPluginDir(ctx, state, root, program, plan);
  const reg = planRegistryInstall(state.registryText, { root, originalSource: program.source }, ctx.now);
  if (!reg.ok) return reg.error;
  const p = reg.previous;
  // The same directory, registered the same way: only the record's updatedAt would change.
  const same = !placing && p?.root === root && p.source === "local-path" &&
    p.originalSource === program.source;
  if (!same) {
    const what = `plugin "${PLUGIN_ID}" registered`;
    planFile(
      plan,
      state.paths.registry,
      state.registryText,
      reg.after,
      what,
      backupFor("registry", state.registryText, state.plugin?.owner === "ours"),
    );
  }
  if (reg.previous && reg.previous.enabled === false) {
    plan.notes.push(`Note: the plugin is disabled in Kimi; enable it with \`/plugins enable ${PLUGIN_ID}\`.`);
  }
  plan.notes.push(hooksRun(`./${program.pluginBin.path} hook <event>, in ${root}`));
  return undefined;
}

/** Places the plugin directory; the undo takes it out and puts the one it replaced back. */
function placeStep(
  managedDir: string,
  files: PluginFile[],
  options: { keepPrevious: boolean; now: Date },
  describe: string,
): Step {
  const root = joinPath(managedDir, PLUGIN_ID);
  return {
    describe,
    check: () => checkCreatable(root),
    run: () =>
      attempt(`place the plugin directory ${root}`, async () => {
        const dirs = await makeDirs(managedDir);
        const placed = await placePluginDir(managedDir, files, { ...options, deferRemoval: true }).catch(
          async (error) => {
            await dirs().catch(() => {});
            throw error;
          },
        );
        const kept = placed.keptPrevious ? ` (the one it replaced is kept in ${placed.keptPrevious})` : "";
        return {
          message: `plugin directory in place: ${placed.root}${kept}`,
          changed: placed.root,
          undo: async () => {
            const ours = await swapIn(placed.root);
            if (placed.previous) await Deno.rename(placed.previous, placed.root);
            await ours.end();
            await dirs();
          },
          commit: async () => {
            if (placed.previous && !options.keepPrevious) {
              await Deno.remove(placed.previous, { recursive: true }).catch(() => {});
            }
          },
        };
      }),
  };
}
