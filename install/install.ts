/**
 * `openviking-kimi install`: a planner per mode — config mode (our `config.toml` block, `mcp.json` entry and,
 * for the compiled binary, its copy) or plugin mode (the native plugin directory and its registry record) —
 * each taking the other mode's registration out, after the shared part (ovcli.conf), feeding one plan that
 * run.ts checks and carries out all or nothing.
 */

import { credentialFilePaths } from "../runtime/config.ts";
import { readTextIfExists } from "../runtime/fs.ts";
import { dirName, joinPath, openVikingHome } from "../runtime/paths.ts";
import { commandLine } from "../runtime/self.ts";
import { hookEntries, PLUGIN_ID } from "./spec.ts";
import { planConfigInstall, planConfigUninstall } from "./toml-config.ts";
import { planMcpInstall, planMcpUninstall } from "./mcp-json.ts";
import { planRegistryDisable, planRegistryInstall, planRegistryUninstall } from "./registry.ts";
import { type CredentialArgs, maskSecrets, planOvcli } from "./ovcli.ts";
import { type FileChange, makeDirs, readText } from "./files.ts";
import { hasOurPlugin, hasUpstream, kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import {
  configCommandPrefix,
  configMcpEntry,
  executableFileName,
  installedBinaryPath,
  sameFile,
} from "./placement.ts";
import { checkoutLauncher, manifestText, type PluginFile } from "./plugin.ts";
import { carryOut, type Context, fail, type InstallOptions, newPlan, type Plan, planFile } from "./run.ts";
import { copyStep, fileStep, placeStep, removalStep } from "./steps.ts";
import {
  planConfigSkill,
  planConfigSkillRemoval,
  pluginMemoryFiles,
  refreshInstalledPrompt,
} from "./memory-files.ts";

/** Why OpenViking's own plugin stands in the way, where it is registered, and the two ways on. */
function upstreamMessage(state: KimiState): string {
  const found: string[] = [];
  if (state.plugin?.owner === "upstream") found.push(`the "${PLUGIN_ID}" plugin in ${state.paths.registry}`);
  if (state.blocks.some((b) => b.owner === "upstream")) found.push(`its block in ${state.paths.config}`);
  if (state.upstreamHooks.length) found.push(`its [[hooks]] in ${state.paths.config}`);
  if (state.mcpOwner === "upstream") found.push(`its "openviking" server in ${state.paths.mcp}`);
  return `OpenViking's own Kimi Code plugin is registered (${
    found.join(", ")
  }). With both, every turn would be ` +
    "captured twice. Either remove it first — in Kimi run `/plugins remove openviking-memory`, or run OpenViking's " +
    "`install.sh --harness kimicode --uninstall --yes` — and run install again, or run install again with --yes " +
    "to let openviking-kimi take its place (its plugin is disabled or replaced, its block and MCP entry replaced).";
}

/** Plans removing our record from plugins/installed.json; returns why it cannot, or undefined. */
export function planUnregister(plan: Plan, state: KimiState, what: string): string | undefined {
  const reg = planRegistryUninstall(state.registryText);
  if (!reg.ok) return reg.error;
  planFile(plan, state.paths.registry, state.registryText, reg.after, what);
  return undefined;
}

/** Plans the shared part: the connection settings given on the command line, saved to ovcli.conf. */
async function planCredentials(ctx: Context, creds: CredentialArgs, plan: Plan): Promise<string | undefined> {
  const path = credentialFilePaths(ctx.env).cli;
  const read = await readText(path);
  if (!read.ok) return read.error;
  const before = read.text;
  const ov = planOvcli(before, creds, path);
  if (!ov.ok) return ov.error;
  if (!ov.changed) return undefined;
  const change: FileChange = { path, before, after: ov.after, backup: "timestamped", display: maskSecrets };
  plan.changes.push(change);
  const ownDir = dirName(path) === openVikingHome(ctx.env);
  const step = fileStep(
    change,
    "connection settings",
    plan.now,
    ownDir ? () => makeDirs(dirName(path), { private: true }) : undefined,
  );
  plan.steps.push({
    ...step,
    describe: `update ${path} (${ov.summary.join(", ")})`,
    run: async () => ({
      ...(await step.run()),
      message: `connection settings saved to ${path}: ${ov.summary.join(", ")}`,
    }),
  });
  return undefined;
}

/** Plans taking plugin mode out before config mode goes in: better a moment with no registration than two. */
function planLeavePluginMode(ctx: Context, state: KimiState, plan: Plan): string | undefined {
  if (state.registryError && state.plugin === undefined && state.registryText !== undefined) {
    ctx.out.info(`Note: ${state.registryError}`);
  }
  if (hasOurPlugin(state) || state.plugin?.owner === "missing") {
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

/** Plans config mode: the executable's copy (compiled), plugin mode out, our `mcp.json` entry and hook block. */
async function planConfigMode(
  ctx: Context,
  options: InstallOptions,
  state: KimiState,
  plan: Plan,
): Promise<string | undefined> {
  const prefix = configCommandPrefix(ctx.self, ctx.env, ctx.os);
  if (ctx.self.kind === "compiled") {
    const target = installedBinaryPath(ctx.env, ctx.os);
    const from = ctx.self.execPath;
    if (!(await sameFile(from, target))) plan.steps.push(copyStep(from, target, ctx.os));
  }
  const leave = planLeavePluginMode(ctx, state, plan);
  if (leave) return leave;
  const mcp = planMcpInstall(state.mcpText, configMcpEntry(ctx.self, ctx.env, ctx.os), {
    replaceOthers: options.yes,
  });
  if (!mcp.ok) return mcp.error;
  const cfg = planConfigInstall(state.configText, hookEntries(prefix), { replaceUpstream: options.yes });
  if (!cfg.ok) return cfg.error;
  if (mcp.changed) {
    planFile(plan, state.paths.mcp, state.mcpText, mcp.after, 'MCP server "openviking" registered');
  }
  if (cfg.changed) planFile(plan, state.paths.config, state.configText, cfg.after, "hooks registered");
  await planConfigSkill(state, plan);
  for (const w of cfg.warnings) plan.notes.push(`Warning: config.toml ${w}.`);
  plan.notes.push(`Hooks run: ${prefix} hook <event>`);
  return undefined;
}

/** Plans taking config mode out before plugin mode goes in: our block, and our `mcp.json` entry. */
function planLeaveConfigMode(options: InstallOptions, state: KimiState, plan: Plan): string | undefined {
  const cfg = planConfigUninstall(state.configText, { removeUpstream: options.yes });
  if (!cfg.ok) return cfg.error;
  if (cfg.changed) {
    const what = "config-mode hooks removed (switching to plugin mode)";
    planFile(plan, state.paths.config, state.configText, cfg.after, what);
  }
  if (state.strayHooks.length) {
    return `config.toml has openviking-kimi [[hooks]] outside the marked block (${
      state.strayHooks.map((h) => h.command).join("; ")
    }); with the plugin they would run twice. Delete those [[hooks]] tables and run again.`;
  }
  const mcp = planMcpUninstall(state.mcpText, { removeUpstream: options.yes });
  if (!mcp.ok) return mcp.error;
  if (mcp.changed) {
    const what = "config-mode MCP entry removed (the plugin declares it)";
    planFile(plan, state.paths.mcp, state.mcpText, mcp.after, what);
  }
  return undefined;
}

/** The files of the plugin directory: its manifest, its `bin/` (the binary, or a checkout's launcher), memory's. */
function pluginFiles(ctx: Context): PluginFile[] {
  return [
    { path: "kimi.plugin.json", content: manifestText(ctx.os), mode: 0o644 },
    ...pluginMemoryFiles(),
    ctx.self.kind === "compiled"
      ? { path: `bin/${executableFileName(ctx.os)}`, content: { copyFrom: ctx.self.execPath }, mode: 0o755 }
      : {
        path: "bin/openviking-kimi",
        content: checkoutLauncher(ctx.self.invocation, ctx.self.root),
        mode: 0o755,
      },
  ];
}

/** Plans plugin mode: config mode out, the plugin directory placed whole, its registry record. */
async function planPluginMode(
  ctx: Context,
  options: InstallOptions,
  state: KimiState,
  plan: Plan,
): Promise<string | undefined> {
  if (ctx.self.kind === "checkout" && ctx.os === "windows") {
    return "plugin mode from a source checkout needs a POSIX shell for its launcher; on Windows use a " +
      "release binary (openviking-kimi.exe install --mode plugin) or --mode config.";
  }
  if (state.registryError) return state.registryError;
  const leave = planLeaveConfigMode(options, state, plan);
  if (leave) return leave;
  await planConfigSkillRemoval(state, plan);
  const root = joinPath(state.paths.managedDir, PLUGIN_ID);
  const manifestPath = joinPath(root, "kimi.plugin.json");
  // Shown in dry runs only: the directory itself is placed whole by the step below.
  plan.changes.push({
    path: manifestPath,
    before: await readTextIfExists(manifestPath).catch(() => undefined),
    after: manifestText(ctx.os),
    backup: "bak",
    displayOnly: true,
  });
  const keepPrevious = state.plugin?.owner === "upstream" || state.plugin?.owner === "other";
  const bin = ctx.self.kind === "compiled" ? executableFileName(ctx.os) : "openviking-kimi launcher";
  plan.steps.push(
    placeStep(
      state.paths.managedDir,
      pluginFiles(ctx),
      { keepPrevious, now: ctx.now },
      `place the plugin directory ${root} (kimi.plugin.json, bin/${bin})`,
    ),
  );
  const source = ctx.self.kind === "compiled" ? ctx.self.execPath : ctx.self.root;
  const reg = planRegistryInstall(state.registryText, { root, originalSource: source }, ctx.now);
  if (!reg.ok) return reg.error;
  planFile(plan, state.paths.registry, state.registryText, reg.after, `plugin "${PLUGIN_ID}" registered`);
  if (reg.previous && reg.previous.enabled === false) {
    plan.notes.push(`Note: the plugin is disabled in Kimi; enable it with \`/plugins enable ${PLUGIN_ID}\`.`);
  }
  plan.notes.push(
    ctx.self.kind === "compiled"
      ? `Hooks run: ./bin/${executableFileName(ctx.os)} hook <event> in ${root}`
      : `Hooks run: ${root}/bin/openviking-kimi (launcher: ${commandLine(ctx.self.invocation)})`,
  );
  return undefined;
}

/** Installs in `mode` and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const mode = options.mode ?? "config";
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return fail(ctx.out, "install", state.unreadable[0]);
  if (!state.homeExists) {
    ctx.out.info(
      `Kimi Code home ${home} does not exist yet; it will be created (is Kimi Code installed? ` +
        "`npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  if (hasUpstream(state) && !options.yes) return fail(ctx.out, "install", upstreamMessage(state));
  const plan = newPlan(ctx.now);
  const problem = (await planCredentials(ctx, options.credentials, plan)) ??
    (mode === "config"
      ? await planConfigMode(ctx, options, state, plan)
      : await planPluginMode(ctx, options, state, plan));
  if (problem) return fail(ctx.out, "install", problem);
  const code = await carryOut(plan, ctx.out, {
    command: "install",
    dryRun: options.dryRun,
    start: `Installing openviking-kimi into ${home} (${mode} mode)`,
  });
  if (code !== 0 || options.dryRun) return code;
  if (mode === "plugin") await refreshInstalledPrompt(ctx, joinPath(state.paths.managedDir, PLUGIN_ID));
  ctx.out.info(
    "Start a new Kimi Code session (or /reload) to load it; `openviking-kimi doctor` checks the setup.",
  );
  return code;
}
