/**
 * Install's planner for config mode: plugin mode taken out first (our registry record and plugin directory,
 * or OpenViking's own plugin disabled), then our `mcp.json` entry, our `config.toml` hook block and the
 * memory skill in Kimi's user skills.
 */

import { hookEntries } from "./spec.ts";
import { planConfigInstall } from "./toml-block.ts";
import { planMcpInstall } from "./json-files.ts";
import { planRegistryDisable } from "./json-files.ts";
import { backupFor } from "./backup.ts";
import type { KimiState } from "./detect.ts";
import { configCommandPrefix, configMcpEntry } from "./placement.ts";
import { type Context, type InstallOptions, type Plan, planFile, removalStep } from "./transaction.ts";
import { planConfigSkill } from "./memory-files.ts";
import { hooksRun, type Program } from "./program.ts";
import { planUnregister } from "./plugin-mode.ts";

/** Plans taking plugin mode out before config mode goes in: better a moment with no registration than two. */
function planLeavePluginMode(ctx: Context, state: KimiState, plan: Plan): string | undefined {
  if (state.registryError && state.plugin === undefined && state.registryText !== undefined) {
    ctx.out.info(`Note: ${state.registryError}`);
  }
  if (state.plugin?.owner === "ours" || state.plugin?.owner === "missing") {
    const error = planUnregister(plan, state, "plugin-mode registration removed (switching to config mode)");
    if (error) return error;
    if (state.plugin?.owner === "ours") {
      const root = state.plugin.root;
      plan.steps.push(
        removalStep(root, `delete the plugin directory ${root}`, `plugin directory removed: ${root}`, {
          quiet: true,
        }),
      );
    }
  } else if (state.plugin?.owner === "upstream" && state.plugin.enabled) {
    const reg = planRegistryDisable(state.registryText, ctx.now);
    if (!reg.ok) return reg.error;
    planFile(
      plan,
      state.paths.registry,
      state.registryText,
      reg.after,
      "OpenViking's own plugin disabled (`/plugins enable openviking-memory` turns it back on)",
    );
  }
  return undefined;
}

/** Plans config mode: plugin mode out, our `mcp.json` entry and hook block. */
export async function planConfigMode(
  options: InstallOptions,
  ctx: Context,
  state: KimiState,
  program: Program,
  plan: Plan,
): Promise<string | undefined> {
  const prefix = configCommandPrefix(program.command, ctx.os);
  const leave = planLeavePluginMode(ctx, state, plan);
  if (leave) return leave;
  const mcp = planMcpInstall(state.mcpText, configMcpEntry(program.command, ctx.os), {
    replaceOthers: options.yes,
  });
  if (!mcp.ok) return mcp.error;
  const cfg = planConfigInstall(state.configText, hookEntries(prefix), { replaceUpstream: options.yes });
  if (!cfg.ok) return cfg.error;
  if (mcp.changed) {
    const backup = backupFor("mcp", state.mcpText);
    planFile(plan, state.paths.mcp, state.mcpText, mcp.after, 'MCP server "openviking" registered', backup);
  }
  if (cfg.changed) {
    const backup = backupFor("config", state.configText);
    planFile(plan, state.paths.config, state.configText, cfg.after, "hooks registered", backup);
  }
  await planConfigSkill(state, plan);
  for (const w of cfg.warnings) plan.notes.push(`Warning: config.toml ${w}.`);
  plan.notes.push(hooksRun(`${prefix} hook <event>`));
  return undefined;
}
