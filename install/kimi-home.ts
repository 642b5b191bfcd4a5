/**
 * What install writes into a Kimi home, per mode. Config mode: our block in `config.toml`, our
 * `mcpServers.openviking` in `mcp.json`, the memory skill. Plugin mode: the plugin directory (its manifest,
 * `bin/`, memory's files) placed whole under `plugins/managed`, and its record in `plugins/installed.json`.
 * Each mode takes the other out first; the one `.bak` rule for Kimi's files.
 */

import type { KimiState } from "./detect.ts";
import {
  planMcpInstall,
  planMcpUninstall,
  planRegistryDisable,
  planRegistryInstall,
  planRegistryUninstall,
} from "./json-files.ts";
import { configCommandPrefix, configMcpEntry, type OsFamily, sameBytes } from "./placement.ts";
import { hooksRun, type Program } from "./program.ts";
import { EXECUTABLE_NAME, hookEntries, type HookEntry, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import { outsideHooksProblem, planConfigInstall, planConfigUninstall } from "./toml-block.ts";
import {
  attempt,
  checkCreatable,
  type Context,
  type InstallOptions,
  makeDirs,
  type Plan,
  planFile,
  removalStep,
  type Step,
  swapIn,
} from "./transaction.ts";
import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import { readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { dirName, joinPath } from "../lib/paths.ts";
import { VERSION } from "../lib/version.ts";
import {
  COMMANDS,
  commandText,
  OWNED_MARK,
  SKILL_NAME,
  skillText,
  SYSTEM_PROMPT_TITLE,
} from "../memory/instructions.ts";
import { refreshPromptFile, systemPromptText } from "../memory/system-prompt.ts";
import { loadConfig } from "../openviking/config.ts";

/** A plugin manifest as we write it. */
export interface Manifest {
  name: string;
  version: string;
  description: string;
  keywords: string[];
  interface: { displayName: string; shortDescription: string };
  hooks: HookEntry[];
  mcpServers: Record<string, { command: string; args: string[] }>;
  /** The memory files (pluginMemoryFiles): the system prompt, the skill, the commands. */
  systemPromptPath: string;
  skills: string;
  commands: string;
}

/** The manifest for a plugin whose executable is `bin/openviking-kimi[.exe]` under the plugin root. */
export function renderManifest(os: OsFamily): Manifest {
  const hookPrefix = os === "windows" ? `.\\bin\\${EXECUTABLE_NAME}.exe` : `./bin/${EXECUTABLE_NAME}`;
  const mcpCommand = os === "windows" ? `./bin/${EXECUTABLE_NAME}.exe` : `./bin/${EXECUTABLE_NAME}`;
  return {
    name: PLUGIN_ID,
    version: VERSION,
    description:
      "Long-term memory for Kimi Code CLI, backed by OpenViking: relevant memories before each prompt, " +
      "every finished turn captured, and viking:// tools over MCP.",
    keywords: ["memory", "openviking", "mcp", "hooks"],
    interface: {
      displayName: "OpenViking Memory",
      shortDescription: "Recall and capture long-term memory through OpenViking",
    },
    hooks: hookEntries(hookPrefix),
    mcpServers: { [MCP_SERVER_NAME]: { command: mcpCommand, args: ["mcp"] } },
    ...memoryManifestFields(),
  };
}

/** The manifest's text (2-space JSON, final newline), as committed at the repository root. */
export function manifestText(os: OsFamily): string {
  return `${JSON.stringify(renderManifest(os), null, 2)}\n`;
}

/** A file of the plugin directory. */
export interface PluginFile {
  /** Path relative to the plugin root, with "/". */
  path: string;
  /** Content, or a file to copy. */
  content: string | { copyFrom: string };
  mode: number;
}

/** The outcome of placing the plugin directory. */
export interface Placement {
  root: string;
  /** Where the directory it replaced was kept (only when it was not ours). */
  keptPrevious?: string;
  /** With `deferRemoval`: where the replaced directory waits (the caller removes it, or puts it back). */
  previous?: string;
  replaced: boolean;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Builds the plugin directory in a staging directory next to the target and renames it into place, so Kimi
 * sees the old complete plugin or the new complete plugin. The replaced directory is deleted, or kept as
 * `<id>.replaced-<time>` when `keepPrevious` (it was not ours); `deferRemoval` leaves deleting it to the
 * caller (so a failed install can put it back).
 */
export async function placePluginDir(
  managedDir: string,
  files: readonly PluginFile[],
  options: { keepPrevious?: boolean; now?: Date; deferRemoval?: boolean } = {},
): Promise<Placement> {
  await Deno.mkdir(managedDir, { recursive: true, mode: 0o700 });
  const target = joinPath(managedDir, PLUGIN_ID);
  const staging = await Deno.makeTempDir({ dir: managedDir, prefix: `.${PLUGIN_ID}-staging-` });
  try {
    for (const f of files) {
      const path = joinPath(staging, f.path);
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true, mode: 0o700 });
      if (typeof f.content === "string") await Deno.writeTextFile(path, f.content, { mode: f.mode });
      else await Deno.copyFile(f.content.copyFrom, path);
      if (Deno.build.os !== "windows") await Deno.chmod(path, f.mode);
    }
    if (Deno.build.os !== "windows") await Deno.chmod(staging, 0o700);
    const replaced = await exists(target);
    let aside: string | undefined;
    if (replaced) {
      aside = options.keepPrevious
        ? `${target}.replaced-${(options.now ?? new Date()).toISOString().replace(/[:.]/g, "-")}`
        : `${joinPath(managedDir, `.${PLUGIN_ID}-old-`)}${crypto.randomUUID().slice(0, 8)}`;
      await Deno.rename(target, aside);
    }
    try {
      await Deno.rename(staging, target);
    } catch (error) {
      if (aside) await Deno.rename(aside, target).catch(() => {});
      throw error;
    }
    if (aside && !options.keepPrevious && !options.deferRemoval) {
      await Deno.remove(aside, { recursive: true }).catch(() => {});
    }
    return {
      root: target,
      replaced,
      keptPrevious: options.keepPrevious ? aside : undefined,
      previous: options.deferRemoval ? aside : undefined,
    };
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  }
}

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

/** Whether two paths name one directory (separators and a trailing one aside). */
function samePath(a: string, b: string): boolean {
  const norm = (p: string) => p.replaceAll("\\", "/").replace(/\/+$/, "");
  return norm(a) === norm(b);
}

/** Plans taking plugin mode out before config mode goes in: better a moment with no registration than two. */
function planLeavePluginMode(ctx: Context, state: KimiState, plan: Plan): string | undefined {
  if (state.registryError && state.plugin === undefined && state.registryText !== undefined) {
    ctx.out.info(`Note: ${state.registryError}`);
  }
  if (state.plugin?.owner === "ours" || state.plugin?.owner === "missing") {
    const error = planUnregister(plan, state, "plugin-mode registration removed (switching to config mode)");
    if (error) return error;
    // Only a directory in Kimi's managed place is ours to delete: a record may name any directory (a
    // checkout registered by hand), and that stays.
    const root = joinPath(state.paths.managedDir, PLUGIN_ID);
    if (state.plugin?.owner === "ours" && samePath(state.plugin.root, root)) {
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

/** Which of Kimi's files: `config.toml`, `mcp.json` or `plugins/installed.json`. */
export type KimiFile = "config" | "mcp" | "registry";

/**
 * The backup a change of `file` keeps, given its text before: `none` when all of it is ours, else `bak`.
 * `recordIsOurs` says whether the registry's `openviking-memory` record is proven ours (a record with our id
 * but no plugin directory may be anyone's).
 *
 * @example backupFor("config", undefined) // "bak": nothing to copy, and nothing lost by saying so
 */
export function backupFor(file: KimiFile, before: string | undefined, recordIsOurs = true): "bak" | "none" {
  if (before === undefined || (file === "registry" && !recordIsOurs)) return "bak";
  const out = withoutOurs(file, before);
  return out.changed && out.after === undefined ? "none" : "bak";
}

/** `text` of `file` with our part taken out: whether there was one, and what is left (undefined: nothing). */
export function withoutOurs(file: KimiFile, text: string): { changed: boolean; after?: string } {
  const out = file === "config"
    ? planConfigUninstall(text)
    : file === "mcp"
    ? planMcpUninstall(text)
    : planRegistryUninstall(text);
  return out.ok ? { changed: out.changed, after: out.after } : { changed: false };
}

/** The memory files of the plugin directory, as install places them (the profile is filled in after). */
export function pluginMemoryFiles(): PluginFile[] {
  return [
    {
      path: SYSTEM_PROMPT_FILE,
      content: systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 }),
      mode: 0o600,
    },
    { path: PLUGIN_SKILL_FILE, content: skillText("plugin"), mode: 0o600 },
    ...COMMANDS.map((c) => ({
      path: `${PLUGIN_COMMANDS_DIR}/${c.name}.md`,
      content: commandText("plugin", c),
      mode: 0o600,
    })),
  ];
}

/** Where config mode puts the memory skill: Kimi's user skills directory. */
function configSkillPath(state: KimiState): string {
  return joinPath(state.paths.home, "skills", SKILL_NAME, "SKILL.md");
}

/** Whether a SKILL.md text is the one openviking-kimi wrote. */
function isOurs(text: string | undefined): boolean {
  return text !== undefined && text.includes(OWNED_MARK);
}

/** Writes a file of ours (no backup: nobody else's bytes are in it); the undo puts back what was there. */
function ownedFileStep(path: string, before: string | undefined, after: string, what: string): Step {
  return {
    describe: `${before === undefined ? "create" : "update"} ${path} (${what})`,
    run: async () => {
      const dirs = await makeDirs(dirName(path));
      try {
        await writeFileAtomic(path, after, { mode: 0o600, privateDir: false });
      } catch (error) {
        await dirs().catch(() => {});
        throw error;
      }
      return {
        message: `${what}: ${path}`,
        changed: path,
        undo: async () => {
          if (before === undefined) await Deno.remove(path);
          else await writeFileAtomic(path, before, { mode: 0o600, privateDir: false });
          await dirs();
        },
      };
    },
  };
}

/** Plans config mode's skill: written (or brought up to date) when absent or ours; a skill of the user's is left. */
export async function planConfigSkill(state: KimiState, plan: Plan): Promise<void> {
  const path = configSkillPath(state);
  const before = await readTextIfExists(path).catch(() => undefined);
  const after = skillText("config");
  if (before === after) return;
  if (before !== undefined && !isOurs(before)) {
    plan.notes.push(
      `Note: ${path} is a skill of your own; left as it is (the memory skill is not installed).`,
    );
    return;
  }
  plan.changes.push({ path, before, after, backup: "bak", displayOnly: true });
  plan.steps.push(ownedFileStep(path, before, after, "memory skill installed"));
}

/** Plans taking config mode's skill out (ours only), its directory with it, and `skills/` when that is left empty. */
export async function planConfigSkillRemoval(state: KimiState, plan: Plan): Promise<void> {
  const path = configSkillPath(state);
  if (!isOurs(await readTextIfExists(path).catch(() => undefined))) return;
  const dir = dirName(path);
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  const target = entries.length === 1 ? dir : path;
  plan.steps.push(
    removalStep(target, `delete ${target} (the memory skill)`, `memory skill removed: ${target}`),
  );
  const skills = dirName(dir);
  plan.steps.push({
    describe: `delete ${skills} when it is left empty`,
    run: () => Promise.resolve({ commit: () => Deno.remove(skills).catch(() => {}) }),
  });
}

/**
 * Plans removing the system prompt (it holds the user's profile) of the plugin directory in Kimi's managed place;
 * the directory stays, and one a record names elsewhere is never touched.
 */
export async function planSystemPromptRemoval(state: KimiState, plan: Plan): Promise<void> {
  const file = joinPath(state.paths.managedDir, PLUGIN_ID, SYSTEM_PROMPT_FILE);
  const text = await readTextIfExists(file).catch(() => undefined);
  if (text === undefined || !text.startsWith(SYSTEM_PROMPT_TITLE)) return;
  plan.steps.push(
    removalStep(
      file,
      `delete ${file} (the profile in the plugin's system prompt)`,
      `system prompt removed: ${file}`,
    ),
  );
}

/**
 * After a plugin-mode install: fills the new system prompt with the user's profile, if OpenViking answered
 * (`answers`; then within a few seconds, else the next session start does). Best effort, says what happened.
 */
export async function refreshInstalledPrompt(ctx: Context, root: string, answers: boolean): Promise<void> {
  const file = joinPath(root, SYSTEM_PROMPT_FILE);
  const { config } = await loadConfig(ctx.env);
  const outcome = answers
    ? await refreshPromptFile(file, config, { force: true, now: ctx.now, budgetMs: 3000 })
    : "unreachable";
  const why = outcome === "unreachable" ? "OpenViking did not answer" : `refresh: ${outcome}`;
  ctx.out.info(
    outcome === "written"
      ? `  ✓ the user's profile is in the plugin's system prompt: ${file}`
      : `Note: the plugin's system prompt has no profile yet (${why}); the next Kimi session start fills it in.`,
  );
}

/** The skill's file, relative to the plugin root. */
export const PLUGIN_SKILL_FILE = `skills/${SKILL_NAME}/SKILL.md`;

/** The directory of the plugin's commands, relative to the plugin root. */
export const PLUGIN_COMMANDS_DIR = "commands";

/** The manifest fields of the memory files: the system prompt, the skills directory, the commands directory. */
export function memoryManifestFields(): { systemPromptPath: string; skills: string; commands: string } {
  return {
    systemPromptPath: `./${SYSTEM_PROMPT_FILE}`,
    skills: "./skills",
    commands: `./${PLUGIN_COMMANDS_DIR}`,
  };
}
