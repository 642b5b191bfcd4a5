/**
 * `openviking-kimi install` / `uninstall`: argument parsing and the wiring of the pure planners
 * (toml-block, mcp-json, registry, ovcli) with the file writers and the plugin placement. Every change is
 * planned and checked first (files readable, symlinks resolvable, directories creatable), so every refusal
 * comes before the first write; `--dry-run` prints the diffs instead. A step that still fails mid-way (a full
 * disk) rolls back the steps already taken, so a run applies all or nothing.
 */

import { credentialFilePaths } from "../runtime/config.ts";
import { readTextIfExists } from "../runtime/fs.ts";
import {
  dirName,
  type Env,
  hookStateDir,
  isAbsolutePath,
  joinPath,
  kimiHome,
  openVikingHome,
  processEnv,
} from "../runtime/paths.ts";
import { commandLine } from "../runtime/self.ts";
import { hookEntries, PLUGIN_ID } from "./spec.ts";
import { planConfigInstall, planConfigUninstall } from "./toml-block.ts";
import { planMcpInstall, planMcpUninstall } from "./mcp-json.ts";
import { planRegistryDisable, planRegistryInstall, planRegistryUninstall } from "./registry.ts";
import { type CredentialArgs, maskSecrets, planOvcli } from "./ovcli.ts";
import {
  applyChange,
  checkChange,
  checkCreatable,
  describeFsError,
  type FileChange,
  isFsError,
  keepCopy,
  makeDirs,
  moveAside,
  readText,
  type Undo,
  undoAll,
  writeTarget,
} from "./files.ts";
import { unifiedDiff } from "./diff.ts";
import { hasOurPlugin, type KimiState, readKimiState } from "./detect.ts";
import {
  configCommandPrefix,
  configMcpEntry,
  copyExecutableAtomic,
  currentOs,
  currentSelf,
  executableFileName,
  installedBinaryPath,
  integrationDir,
  type OsFamily,
  sameFile,
  type Self,
} from "./placement.ts";
import { checkoutLauncher, manifestText, placePluginDir, type PluginFile } from "./plugin.ts";

/** Where messages go (tests capture them). */
export interface Output {
  info(line: string): void;
  error(line: string): void;
}

const consoleOutput: Output = { info: (l) => console.log(l), error: (l) => console.error(l) };

/** Parsed options of install / uninstall. */
export interface InstallOptions {
  mode?: "config" | "plugin";
  kimiHome?: string;
  credentials: CredentialArgs;
  dryRun: boolean;
  yes: boolean;
  purge: boolean;
}

/** Everything a run needs, injectable for tests. */
export interface Context {
  env: Env;
  self: Self;
  os: OsFamily;
  out: Output;
  now: Date;
  cwd: string;
}

async function defaultContext(): Promise<Context> {
  return {
    env: processEnv(),
    self: await currentSelf(),
    os: currentOs(),
    out: consoleOutput,
    now: new Date(),
    cwd: Deno.cwd(),
  };
}

function resolveHome(ctx: Context, explicit: string | undefined): string {
  const home = kimiHome(ctx.env, explicit);
  return isAbsolutePath(home) ? home : joinPath(ctx.cwd, home);
}

/** What a step did: its message, how to take it back, and what to finish once every step has succeeded. */
interface Done {
  message?: string;
  /** What it changed, named in a rollback message. */
  changed?: string;
  undo?: Undo;
  commit?: () => Promise<void>;
}

/** An action of a run (a file write, the binary copy, the plugin directory, a removal), described for dry runs. */
interface Step {
  describe: string;
  /** Why the step cannot be taken, found while planning; undefined when it can. */
  check?: () => Promise<string | undefined>;
  run: () => Promise<Done>;
}

/** A planned run: ordered steps; text-file changes are steps too. */
interface Plan {
  steps: Step[];
  changes: FileChange[];
  notes: string[];
  now: Date;
}

/** The error a failed file write reports: the file (and the link leading to it) and the cause in words. */
async function writeFailure(change: FileChange, error: unknown): Promise<Error> {
  if (!isFsError(error)) return error as Error;
  const target = await writeTarget(change.path).catch(() => change.path);
  const via = target === change.path ? "" : ` (${change.path} links there)`;
  return new Error(`could not write ${target}${via}: ${describeFsError(error)}`);
}

/** Runs `action`; a file-system error becomes "could not <what>: <cause>". */
async function attempt<T>(what: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw isFsError(error) ? new Error(`could not ${what}: ${describeFsError(error)}`) : error;
  }
}

/** Writes one planned change (after `makeDir`, when given: the directory it needs, made undoably). */
function fileStep(change: FileChange, what: string, now: Date, makeDir?: () => Promise<Undo>): Step {
  return {
    describe: `${
      change.after === undefined ? "delete" : change.before === undefined ? "create" : "update"
    } ${change.path} (${what})`,
    run: async () => {
      const dir = makeDir ? await attempt(`create the directory of ${change.path}`, makeDir) : undefined;
      try {
        const { backup, undo } = await applyChange(change, now);
        return {
          message: backup
            ? `${what}: ${change.path} (previous copy in ${backup})`
            : `${what}: ${change.path}`,
          changed: change.path,
          undo: { undo: async () => void (await undoAll(dir ? [dir, undo] : [undo]).then(throwIfAny)) },
        };
      } catch (error) {
        await dir?.undo().catch(() => {});
        throw await writeFailure(change, error);
      }
    },
  };
}

/** Copies the executable to `target`; the undo puts the one it replaced back. */
function copyStep(from: string, target: string, os: OsFamily): Step {
  return {
    describe: `copy ${from} to ${target}`,
    check: () => checkCreatable(target),
    run: () =>
      attempt(`copy the executable to ${target}`, async () => {
        const dir = await makeDirs(dirName(target), { private: true });
        let previous: string | undefined;
        try {
          previous = await keepCopy(target);
          await copyExecutableAtomic(from, target, os);
        } catch (error) {
          if (previous) await Deno.remove(previous).catch(() => {});
          await dir.undo().catch(() => {});
          throw error;
        }
        return {
          message: `executable copied to ${target}`,
          changed: target,
          undo: {
            undo: async () => {
              await (previous ? Deno.rename(previous, target) : Deno.remove(target));
              await dir.undo();
            },
          },
          commit: async () => void (previous && await Deno.remove(previous).catch(() => {})),
        };
      }),
  };
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
            await dirs.undo().catch(() => {});
            throw error;
          },
        );
        return {
          message: `plugin directory in place: ${placed.root}${
            placed.keptPrevious ? ` (the one it replaced is kept in ${placed.keptPrevious})` : ""
          }`,
          changed: placed.root,
          undo: {
            undo: async () => {
              const ours = await moveAside(placed.root);
              if (placed.previous) await Deno.rename(placed.previous, placed.root);
              await Deno.remove(ours, { recursive: true });
              await dirs.undo();
            },
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

function throwIfAny(failed: string[]): void {
  if (failed.length) throw new Error(failed.join("; "));
}

/** A removal that can be taken back until the run succeeds: moved aside first, deleted at the end. */
function removalStep(
  path: string,
  describe: string,
  message: string,
  options: { quiet?: boolean } = {},
): Step {
  return {
    describe,
    run: async () => {
      let aside: string;
      try {
        aside = await moveAside(path);
      } catch (error) {
        if (options.quiet) return {};
        throw isFsError(error) ? new Error(`could not remove ${path}: ${describeFsError(error)}`) : error;
      }
      return {
        message,
        changed: path,
        undo: { undo: () => Deno.rename(aside, path) },
        commit: () => Deno.remove(aside, { recursive: true }).catch(() => {}),
      };
    },
  };
}

/** Plans a change to one of Kimi's files (kept as a `.bak`) and the step that writes it. */
function planFile(
  plan: Plan,
  path: string,
  before: string | undefined,
  after: string | undefined,
  what: string,
): void {
  const change: FileChange = { path, before, after, backup: "bak" };
  plan.changes.push(change);
  plan.steps.push(fileStep(change, what, plan.now));
}

/** Plans removing our record from plugins/installed.json; returns why it cannot, or undefined. */
function planUnregister(plan: Plan, state: KimiState, what: string): string | undefined {
  const reg = planRegistryUninstall(state.registryText);
  if (!reg.ok) return reg.error;
  planFile(plan, state.paths.registry, state.registryText, reg.after, what);
  return undefined;
}

function printDryRun(plan: Plan, out: Output): void {
  out.info("Dry run: nothing was changed. These changes would be made:");
  for (const step of plan.steps) out.info(`  - ${step.describe}`);
  for (const change of plan.changes) {
    const show = change.display ?? ((t: string) => t);
    const diff = unifiedDiff(
      change.path,
      change.before === undefined ? undefined : show(change.before),
      change.after === undefined ? undefined : show(change.after),
    );
    if (diff) out.info(diff.trimEnd());
  }
  for (const note of plan.notes) out.info(note);
}

/** Why the plan cannot be carried out, found before anything is written; undefined when it can. */
async function checkPlan(plan: Plan): Promise<string | undefined> {
  for (const change of plan.changes) {
    const problem = await checkChange(change, plan.now);
    if (problem) return problem;
  }
  for (const step of plan.steps) {
    const problem = await step.check?.();
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Takes the steps in order. When one fails, the ones already taken are rolled back (files get their exact
 * previous bytes) and the error says so; returns that error, or undefined when every step succeeded.
 */
async function execute(plan: Plan, out: Output): Promise<string | undefined> {
  for (const change of plan.changes) {
    if (change.displayOnly || change.before === change.after) continue;
    const now = await readText(change.path);
    if (!now.ok || now.text !== change.before) {
      return `${change.path} changed while openviking-kimi was working on it; run the command again; ` +
        "nothing was changed.";
    }
  }
  const done: Done[] = [];
  for (const step of plan.steps) {
    try {
      done.push(await step.run());
    } catch (error) {
      const reason = isFsError(error)
        ? `${step.describe} failed: ${describeFsError(error)}`
        : (error as Error).message;
      const taken = done.filter((d) => d.undo);
      if (taken.length === 0) return `${reason}; nothing was changed. Fix that and run again.`;
      const failed = await undoAll(taken.map((d) => d.undo!));
      const names = taken.flatMap((d) => (d.changed ? [d.changed] : []));
      if (failed.length === 0) {
        return `${reason}. Rolled back the changes already made: ${names.join(", ")} as before, so ` +
          "nothing was changed. Fix that and run again.";
      }
      return `${reason}. Rolled back the changes already made (${names.join(", ")}), except: ${
        failed.join("; ")
      }. The previous content of each file is in its .bak copy.`;
    }
  }
  for (const d of done) await d.commit?.();
  for (const d of done) if (d.message) out.info(`  ✓ ${d.message}`);
  for (const note of plan.notes) out.info(note);
  return undefined;
}

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

/** Plans the shared parts: ovcli.conf. */
async function planCredentials(ctx: Context, creds: CredentialArgs, plan: Plan): Promise<string | undefined> {
  const path = credentialFilePaths(ctx.env).cli;
  const read = await readText(path);
  if (!read.ok) return read.error;
  const before = read.text;
  const ov = planOvcli(before, creds, path);
  if (!ov.ok) return ov.error;
  if (ov.changed) {
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
  }
  return undefined;
}

/** Installs in `mode` and returns the exit code. */
export async function runInstall(ctx: Context, options: InstallOptions): Promise<number> {
  const { out } = ctx;
  const mode = options.mode ?? "config";
  const home = resolveHome(ctx, options.kimiHome);
  const state = await readKimiState(home);
  const plan: Plan = { steps: [], changes: [], notes: [], now: ctx.now };
  const fail = (message: string): number => {
    out.error(`openviking-kimi install: ${message}`);
    return 1;
  };
  if (state.unreadable.length) return fail(state.unreadable[0]);

  if (!state.homeExists) {
    out.info(
      `Kimi Code home ${home} does not exist yet; it will be created (is Kimi Code installed? ` +
        "`npm install -g @moonshot-ai/kimi-code`, or pass --kimi-home).",
    );
  }
  const upstream = state.plugin?.owner === "upstream" || state.blocks.some((b) => b.owner === "upstream") ||
    state.upstreamHooks.length > 0 || state.mcpOwner === "upstream";
  if (upstream && !options.yes) return fail(upstreamMessage(state));

  const credError = await planCredentials(ctx, options.credentials, plan);
  if (credError) return fail(credError);

  if (mode === "config") {
    const prefix = configCommandPrefix(ctx.self, ctx.env, ctx.os);
    if (ctx.self.kind === "compiled") {
      const target = installedBinaryPath(ctx.env, ctx.os);
      const from = ctx.self.execPath;
      if (!(await sameFile(from, target))) {
        plan.steps.push(copyStep(from, target, ctx.os));
      }
    }
    // Unregister plugin mode first: better a moment with no registration than two.
    if (state.registryError && state.plugin === undefined && state.registryText !== undefined) {
      out.info(`Note: ${state.registryError}`);
    }
    if (hasOurPlugin(state) || state.plugin?.owner === "missing") {
      const error = planUnregister(
        plan,
        state,
        "plugin-mode registration removed (switching to config mode)",
      );
      if (error) return fail(error);
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
      if (!reg.ok) return fail(reg.error);
      planFile(
        plan,
        state.paths.registry,
        state.registryText,
        reg.after,
        "OpenViking's own plugin disabled (`/plugins enable openviking-memory` turns it back on)",
      );
    }
    const mcp = planMcpInstall(state.mcpText, configMcpEntry(ctx.self, ctx.env, ctx.os), {
      replaceOthers: options.yes,
    });
    if (!mcp.ok) return fail(mcp.error);
    const cfg = planConfigInstall(state.configText, hookEntries(prefix), { replaceUpstream: options.yes });
    if (!cfg.ok) return fail(cfg.error);
    if (mcp.changed) {
      planFile(plan, state.paths.mcp, state.mcpText, mcp.after, 'MCP server "openviking" registered');
    }
    if (cfg.changed) {
      planFile(plan, state.paths.config, state.configText, cfg.after, "hooks registered");
    }
    for (const w of cfg.warnings) plan.notes.push(`Warning: config.toml ${w}.`);
    plan.notes.push(`Hooks run: ${prefix} hook <event>`);
  } else {
    if (ctx.self.kind === "checkout" && ctx.os === "windows") {
      return fail(
        "plugin mode from a source checkout needs a POSIX shell for its launcher; on Windows use a " +
          "release binary (openviking-kimi.exe install --mode plugin) or --mode config.",
      );
    }
    if (state.registryError) return fail(state.registryError);
    const cfg = planConfigUninstall(state.configText, { removeUpstream: options.yes });
    if (!cfg.ok) return fail(cfg.error);
    if (cfg.changed) {
      planFile(
        plan,
        state.paths.config,
        state.configText,
        cfg.after,
        "config-mode hooks removed (switching to plugin mode)",
      );
    }
    if (state.strayHooks.length) {
      return fail(
        `config.toml has openviking-kimi [[hooks]] outside the marked block (${
          state.strayHooks.map((h) => h.command).join("; ")
        }); with the plugin they would run twice. Delete those [[hooks]] tables and run again.`,
      );
    }
    const mcp = planMcpUninstall(state.mcpText, { removeUpstream: options.yes });
    if (!mcp.ok) return fail(mcp.error);
    if (mcp.changed) {
      planFile(
        plan,
        state.paths.mcp,
        state.mcpText,
        mcp.after,
        "config-mode MCP entry removed (the plugin declares it)",
      );
    }
    const files: PluginFile[] = [
      { path: "kimi.plugin.json", content: manifestText(ctx.os), mode: 0o644 },
      ctx.self.kind === "compiled"
        ? { path: `bin/${executableFileName(ctx.os)}`, content: { copyFrom: ctx.self.execPath }, mode: 0o755 }
        : {
          path: "bin/openviking-kimi",
          content: checkoutLauncher(ctx.self.invocation, ctx.self.root),
          mode: 0o755,
        },
    ];
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
    plan.steps.push(
      placeStep(
        state.paths.managedDir,
        files,
        { keepPrevious, now: ctx.now },
        `place the plugin directory ${root} (kimi.plugin.json, bin/${
          ctx.self.kind === "compiled" ? executableFileName(ctx.os) : "openviking-kimi launcher"
        })`,
      ),
    );
    const source = ctx.self.kind === "compiled" ? ctx.self.execPath : ctx.self.root;
    const reg = planRegistryInstall(state.registryText, { root, originalSource: source }, ctx.now);
    if (!reg.ok) return fail(reg.error);
    planFile(plan, state.paths.registry, state.registryText, reg.after, `plugin "${PLUGIN_ID}" registered`);
    if (reg.previous && reg.previous.enabled === false) {
      plan.notes.push(
        `Note: the plugin is disabled in Kimi; enable it with \`/plugins enable ${PLUGIN_ID}\`.`,
      );
    }
    plan.notes.push(
      ctx.self.kind === "compiled"
        ? `Hooks run: ./bin/${executableFileName(ctx.os)} hook <event> in ${root}`
        : `Hooks run: ${root}/bin/openviking-kimi (launcher: ${commandLine(ctx.self.invocation)})`,
    );
  }

  const problem = await checkPlan(plan);
  if (problem) return fail(problem);
  if (options.dryRun) {
    printDryRun(plan, out);
    return 0;
  }
  out.info(`Installing openviking-kimi into ${home} (${mode} mode)`);
  const failed = await execute(plan, out);
  if (failed) return fail(failed);
  out.info(
    "Start a new Kimi Code session (or /reload) to load it; `openviking-kimi doctor` checks the setup.",
  );
  return 0;
}

/** Uninstalls and returns the exit code. */
export async function runUninstall(ctx: Context, options: InstallOptions): Promise<number> {
  const { out } = ctx;
  const home = resolveHome(ctx, options.kimiHome);
  const state = await readKimiState(home);
  const plan: Plan = { steps: [], changes: [], notes: [], now: ctx.now };
  const fail = (message: string): number => {
    out.error(`openviking-kimi uninstall: ${message}`);
    return 1;
  };
  if (state.unreadable.length) return fail(state.unreadable[0]);
  const config = options.mode !== "plugin";
  const plugin = options.mode !== "config";
  if (config) {
    const cfg = planConfigUninstall(state.configText);
    if (!cfg.ok) return fail(cfg.error);
    const mcp = planMcpUninstall(state.mcpText);
    if (!mcp.ok) return fail(mcp.error);
    if (cfg.changed) {
      planFile(plan, state.paths.config, state.configText, cfg.after, "hooks removed");
    }
    if (mcp.changed) {
      planFile(plan, state.paths.mcp, state.mcpText, mcp.after, 'MCP server "openviking" removed');
    }
    plan.notes.push(...cfg.warnings.map((w) => `Note: ${w}`), ...mcp.warnings.map((w) => `Note: ${w}`));
    if (state.strayHooks.length) {
      plan.notes.push(
        `Note: config.toml still has openviking-kimi [[hooks]] outside the marked block (${
          state.strayHooks.map((h) => h.command).join("; ")
        }); delete those [[hooks]] tables by hand.`,
      );
    }
  }
  if (plugin) {
    if (state.registryError && state.registryText !== undefined) {
      plan.notes.push(`Note: ${state.registryError}`);
    } else if (hasOurPlugin(state) || state.plugin?.owner === "missing") {
      const error = planUnregister(plan, state, `plugin "${PLUGIN_ID}" unregistered`);
      if (error) return fail(error);
    } else if (state.plugin?.owner === "upstream") {
      plan.notes.push(
        `Note: the "${PLUGIN_ID}" plugin registered in Kimi is OpenViking's own one; left in place.`,
      );
    }
  }
  if (options.purge) {
    const targets: string[] = [];
    const managed = joinPath(state.paths.managedDir, PLUGIN_ID);
    if (plugin && (state.plugin?.owner !== "upstream" && state.plugin?.owner !== "other")) {
      const manifest = await readTextIfExists(joinPath(managed, "kimi.plugin.json")).catch(() => undefined);
      if (manifest === undefined || /bin[\\/]+openviking-kimi/.test(manifest)) targets.push(managed);
    }
    targets.push(
      integrationDir(ctx.env),
      hookStateDir(ctx.env),
      joinPath(openVikingHome(ctx.env), "logs", "kimicode-hooks.log"),
    );
    for (const t of targets) {
      const exists = await Deno.lstat(t).then(() => true, () => false);
      if (!exists) continue;
      plan.steps.push(removalStep(t, `delete ${t}`, `removed ${t}`));
    }
    if (targets.includes(managed)) {
      plan.steps.push({
        describe: `delete ${state.paths.managedDir} and its parent when empty`,
        run: () =>
          Promise.resolve({
            // At the end, once the plugin directory itself is gone.
            commit: async () => {
              await Deno.remove(state.paths.managedDir).catch(() => {});
              await Deno.remove(dirName(state.paths.managedDir)).catch(() => {});
            },
          }),
      });
    }
    plan.notes.push(
      "Kept: ~/.openviking/ovcli.conf and the pending queue (~/.openviking/pending), which OpenViking's other " +
        "clients share.",
    );
  }
  if (plan.steps.length === 0) {
    out.info(`Nothing of openviking-kimi is registered in ${home}.`);
    for (const note of plan.notes) out.info(note);
    return 0;
  }
  const problem = await checkPlan(plan);
  if (problem) return fail(problem);
  if (options.dryRun) {
    printDryRun(plan, out);
    return 0;
  }
  out.info(`Removing openviking-kimi from ${home}`);
  const failed = await execute(plan, out);
  if (failed) return fail(failed);
  if (!options.purge) {
    out.info("Files kept (remove them with --purge): the executable and the plugin directory.");
  }
  return 0;
}

/** Flags of `openviking-kimi install`, as cli/commands.ts parses them. */
export interface InstallFlags {
  mode: "config" | "plugin";
  kimiHome: string | undefined;
  url: string | undefined;
  apiKey: string | undefined;
  account: string | undefined;
  user: string | undefined;
  dryRun: boolean;
  yes: boolean;
}

/** Flags of `openviking-kimi uninstall`, as cli/commands.ts parses them (no mode: both). */
export interface UninstallFlags {
  mode: "config" | "plugin" | undefined;
  kimiHome: string | undefined;
  purge: boolean;
  dryRun: boolean;
  yes: boolean;
}

/** `openviking-kimi install …` */
export async function installCommand(flags: InstallFlags): Promise<number> {
  const { url, apiKey, account, user, ...rest } = flags;
  return await runInstall(await defaultContext(), {
    ...rest,
    credentials: { url, apiKey, account, user },
    purge: false,
  });
}

/** `openviking-kimi uninstall …` */
export async function uninstallCommand(flags: UninstallFlags): Promise<number> {
  return await runUninstall(await defaultContext(), { ...flags, credentials: {} });
}
