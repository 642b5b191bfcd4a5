/**
 * `openviking-kimi install`: the program the registrations run (the compiled binary's copy, or a program copy
 * built from the checkout: install/copy.ts), then a planner per mode — config mode (our `config.toml` block
 * and `mcp.json` entry) or plugin mode (the native plugin directory and its registry record) — each taking
 * the other mode's registration out, after the shared part (ovcli.conf), feeding one plan that run.ts checks
 * and carries out all or nothing. Once installed, it asks the server whether it answers (no server yet?).
 */

import { credentialFilePaths, loadConfig } from "../runtime/config.ts";
import { readTextIfExists } from "../runtime/fs.ts";
import { dirName, joinPath, openVikingHome } from "../runtime/paths.ts";
import { productionFlags } from "../runtime/self.ts";
import { scrub } from "../runtime/scrub.ts";
import { EXECUTABLE_NAME, hookEntries, PLUGIN_ID } from "./spec.ts";
import { outsideHooksProblem, planConfigInstall, planConfigUninstall } from "./toml-config.ts";
import { planMcpInstall, planMcpUninstall } from "./mcp-json.ts";
import { planRegistryDisable, planRegistryInstall, planRegistryUninstall } from "./registry.ts";
import { backupFor } from "./backup.ts";
import { type CredentialArgs, maskSecrets, planOvcli } from "./ovcli.ts";
import { type FileChange, makeDirs, readText } from "./files.ts";
import { hasOurPlugin, hasUpstream, kimiHomeFor, type KimiState, readKimiState } from "./detect.ts";
import {
  configCommandPrefix,
  configMcpEntry,
  executableFileName,
  installedBinaryPath,
  sameBytes,
  sameFile,
} from "./placement.ts";
import { manifestText, type PluginFile } from "./plugin.ts";
import { SYSTEM_PROMPT_FILE } from "../hooks/plugin-root.ts";
import {
  carryOut,
  type Context,
  fail,
  type InstallOptions,
  newPlan,
  type Note,
  type Plan,
  planFile,
} from "./run.ts";
import { copyStep, fileStep, placeStep, removalStep } from "./steps.ts";
import { buildCopy, versionsDir } from "./copy.ts";
import { copyPlacement, placeCopyStep, placedSource } from "./copy-place.ts";
import { homeStep } from "./copy-homes.ts";
import { sweepStep } from "./copy-sweep.ts";
import { launcherName } from "./launcher.ts";
import { serverChecks } from "./doctor-memory.ts";
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
  const backup = backupFor("registry", state.registryText, state.plugin?.owner === "ours");
  planFile(plan, state.paths.registry, state.registryText, reg.after, what, backup);
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
    describe: `${before === undefined ? "create" : "update"} ${path}: ${ov.steps.join(", ")}`,
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

/** The program the registrations run, once in place. */
interface Program {
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

/** The compiled binary: config mode runs its copy in `…/kimicode/bin/` (copied unless the same bytes are there). */
async function binaryProgram(
  ctx: Context,
  self: { execPath: string },
  mode: "config" | "plugin",
  plan: Plan,
): Promise<Program> {
  const target = installedBinaryPath(ctx.env, ctx.os);
  const same = (await sameFile(self.execPath, target)) || (await sameBytes(self.execPath, target));
  if (mode === "config" && !same) plan.steps.push(copyStep(self.execPath, target, ctx.os));
  return {
    command: target,
    pluginBin: {
      path: `bin/${executableFileName(ctx.os)}`,
      content: { copyFrom: self.execPath },
      mode: 0o755,
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
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: text, mode: 0o755 },
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
    pluginBin: { path: `bin/${EXECUTABLE_NAME}`, content: placement.launcherText, mode: 0o755 },
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

/** Plans putting the program in place, however this process runs. */
function planProgram(
  ctx: Context,
  mode: "config" | "plugin",
  home: string,
  plan: Plan,
): Promise<Program | string> {
  const self = ctx.self;
  if (self.kind === "compiled") return binaryProgram(ctx, self, mode, plan);
  if (self.kind === "copy") return ownCopyProgram(ctx, self.dir, home, plan);
  return checkoutProgram(ctx, self.root, home, plan);
}

/** The note naming the command the hooks run (would run, in a dry run). */
function hooksRun(command: string): Note {
  return { done: `Hooks run: ${command}`, planned: `Hooks would run: ${command}` };
}

/** Plans config mode: plugin mode out, our `mcp.json` entry and hook block. */
async function planConfigMode(
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
    { path: "kimi.plugin.json", content: manifestText(ctx.os), mode: 0o644 },
    ...pluginMemoryFiles(),
    program.pluginBin,
  ];
}

/** Whether the plugin directory holds these files already, byte for byte (then it is not placed again). */
async function pluginInPlace(root: string, files: PluginFile[]): Promise<boolean> {
  for (const f of files) {
    const path = joinPath(root, f.path);
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

/** Plans plugin mode: config mode out, the plugin directory placed whole, its registry record. */
async function planPluginMode(
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
  const manifestPath = joinPath(root, "kimi.plugin.json");
  const files = pluginFiles(ctx, program);
  const placing = state.plugin?.owner !== "ours" || !(await pluginInPlace(root, files));
  if (placing) {
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
  }
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

/**
 * After an install, whether the server answers: if not, where to start (README's "No server yet?"). The key
 * is doctor's to check (a search), this only asks `/health`.
 */
async function serverNote(ctx: Context): Promise<boolean> {
  const { config } = await loadConfig(ctx.env);
  const checks = await serverChecks(config, ctx.fetch, { healthOnly: true });
  const say = (text: string) => ctx.out.info(String(scrub(text, [config.apiKey])));
  const failed = checks.find((c) => c.status === "fail");
  if (!failed) {
    say(`Server: ${checks.map((c) => c.summary).join("; ")}.`);
    return true;
  }
  say(`Note: ${failed.summary}.`);
  if (failed.fix) say(`  fix: ${failed.fix}`);
  return false;
}

/** Installs in `mode` and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const mode = options.mode ?? "config";
  const home = kimiHomeFor(ctx.env, options.kimiHome, ctx.cwd);
  const state = await readKimiState(home);
  if (state.unreadable.length) return fail(ctx.out, "install", state.unreadable[0]);
  if (!state.homeExists) {
    ctx.out.info(
      `Kimi Code home ${home} does not exist yet; it ${options.dryRun ? "would" : "will"} be created (is ` +
        "Kimi Code installed? `npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  if (hasUpstream(state) && !options.yes) return fail(ctx.out, "install", upstreamMessage(state));
  if (mode === "plugin" && ctx.self.kind !== "compiled" && ctx.os === "windows") {
    return fail(
      ctx.out,
      "install",
      "plugin mode from a source checkout needs a POSIX shell for its launcher; on Windows use a " +
        "release binary (openviking-kimi.exe install --mode plugin) or --mode config.",
    );
  }
  const plan = newPlan(ctx.now);
  const credentials = await planCredentials(ctx, options.credentials, plan);
  if (credentials) return fail(ctx.out, "install", credentials);
  const program = await planProgram(ctx, mode, home, plan);
  if (typeof program === "string") return fail(ctx.out, "install", program);
  const problem = mode === "config"
    ? await planConfigMode(options, ctx, state, program, plan)
    : await planPluginMode(ctx, options, state, program, plan);
  if (problem) return fail(ctx.out, "install", problem);
  if (program.note) plan.notes.push(program.note);
  if (plan.steps.length && await Deno.lstat(versionsDir(ctx.env)).then(() => true, () => false)) {
    plan.steps.push(sweepStep(ctx.env, { keep: program.keep, kimiHome: home }));
  }
  const code = await carryOut(plan, ctx.out, {
    command: "install",
    dryRun: options.dryRun,
    start: `Installing openviking-kimi into ${home} (${mode} mode)`,
    done: "Start a new Kimi Code session (or /reload) to load it; `openviking-kimi doctor` checks the setup.",
    nothing: `openviking-kimi is installed in ${home} (${mode} mode) just as this install would leave it.`,
  });
  if (code !== 0 || options.dryRun) return code;
  // One look at the server: the profile is fetched for the plugin's system prompt only when it answers.
  const answers = await serverNote(ctx);
  if (mode === "plugin") {
    await refreshInstalledPrompt(ctx, joinPath(state.paths.managedDir, PLUGIN_ID), answers);
  }
  return code;
}
