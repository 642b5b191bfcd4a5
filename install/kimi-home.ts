/**
 * What each mode writes into a Kimi home and what takes it out again: config mode's block, `mcp.json` entry and
 * skill; plugin mode's directory under `plugins/managed` and its registry record.
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
import { hooksRun, madeDirList, type Program } from "./program.ts";
import { EXECUTABLE_NAME, hookEntries, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import { outsideHooksProblem, planConfigInstall, planConfigUninstall } from "./toml-block.ts";
import {
  checkCreatable,
  type Context,
  type InstallOptions,
  type Plan,
  planFile,
  removalStep,
  swapStep,
  type TreeFile,
  writeTree,
} from "./transaction.ts";
import { SYSTEM_PROMPT_FILE } from "../kimi/plugin-root.ts";
import { readTextIfExists } from "../lib/fs.ts";
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

/** The manifest for a plugin whose executable is `bin/openviking-kimi[.exe]` under the plugin root. */
export function renderManifest(os: OsFamily) {
  const exe = os === "windows" ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;
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
    hooks: hookEntries(os === "windows" ? `.\\bin\\${exe}` : `./bin/${exe}`),
    mcpServers: { [MCP_SERVER_NAME]: { command: `./bin/${exe}`, args: ["mcp"] } },
    systemPromptPath: `./${SYSTEM_PROMPT_FILE}`,
    skills: "./skills",
    commands: "./commands",
  };
}

/** The manifest's text (2-space JSON, final newline), as committed at the repository root. */
export function manifestText(os: OsFamily): string {
  return `${JSON.stringify(renderManifest(os), null, 2)}\n`;
}

/** The memory files of the plugin directory, as install places them (the profile is filled in after). */
export function pluginMemoryFiles(): TreeFile[] {
  return [
    {
      path: SYSTEM_PROMPT_FILE,
      content: systemPromptText({ kind: "unknown" }, { redact: true, profileTokenBudget: 0 }),
      mode: 0o600,
    },
    { path: `skills/${SKILL_NAME}/SKILL.md`, content: skillText("plugin"), mode: 0o600 },
    ...COMMANDS.map((c) => ({
      path: `commands/${c.name}.md`,
      content: commandText("plugin", c),
      mode: 0o600,
    })),
  ];
}

/** Which of Kimi's files: `config.toml`, `mcp.json` or `plugins/installed.json`. */
export type KimiFile = "config" | "mcp" | "registry";

/** `text` of `file` with our part taken out: whether there was one, and what is left (undefined: nothing). */
export function withoutOurs(file: KimiFile, text: string): { changed: boolean; after?: string } {
  const plan = { config: planConfigUninstall, mcp: planMcpUninstall, registry: planRegistryUninstall }[file];
  const out = plan(text);
  return out.ok ? { changed: out.changed, after: out.after } : { changed: false };
}

/** One of Kimi's three files of a home: its path and its text as read. */
export function kimiFile(state: KimiState, file: KimiFile): readonly [string, string | undefined] {
  const { config, mcp, registry } = state.paths;
  return ({
    config: [config, state.configText],
    mcp: [mcp, state.mcpText],
    registry: [registry, state.registryText],
  } as const)[file];
}

/**
 * Plans a change of one of Kimi's three files, keeping a `.bak` unless all of it was ours (the registry's
 * `openviking-memory` record only when proven ours, not just by our id).
 */
function planKimiFile(plan: Plan, state: KimiState, file: KimiFile, after: string | undefined, what: string) {
  const [path, before] = kimiFile(state, file);
  const out = before === undefined ? undefined : withoutOurs(file, before);
  const ours = out?.changed && out.after === undefined &&
    (file !== "registry" || state.plugin?.owner === "ours");
  planFile(plan, path, before, after, what, ours ? "none" : "bak");
}

/** Plans config mode out: our block and `mcp.json` entry (OpenViking's too with `removeUpstream`). */
export function planConfigOut(
  state: KimiState,
  plan: Plan,
  switching: boolean,
  removeUpstream = false,
): string | undefined {
  const cfg = planConfigUninstall(state.configText, { removeUpstream });
  if (!cfg.ok) return cfg.error;
  const mcp = planMcpUninstall(state.mcpText, { removeUpstream });
  if (!mcp.ok) return mcp.error;
  if (switching) {
    const outside = outsideHooksProblem(state.strayHooks, state.upstreamHooks);
    if (outside) return outside;
  } else if (state.strayHooks.length) {
    plan.notes.push(
      `Note: config.toml still has openviking-kimi [[hooks]] outside the marked block (${
        state.strayHooks.map((h) => h.command).join("; ")
      }); delete those [[hooks]] tables by hand.`,
    );
  }
  const [hooks, server] = switching
    ? [
      "config-mode hooks removed (switching to plugin mode)",
      "config-mode MCP entry removed (the plugin declares it)",
    ]
    : ["hooks removed", 'MCP server "openviking" removed'];
  if (cfg.changed) planKimiFile(plan, state, "config", cfg.after, hooks);
  if (mcp.changed) planKimiFile(plan, state, "mcp", mcp.after, server);
  plan.notes.push(...[...cfg.warnings, ...mcp.warnings].map((w) => `Note: ${w}`));
  return undefined;
}

/** A path with `/` separators and no trailing one, to compare two that name one directory. */
const norm = (p: string) => p.replaceAll("\\", "/").replace(/\/+$/, "");

/** Plans plugin mode out: our record; switching, our plugin directory (only in Kimi's managed place) and OpenViking's disabled. */
export function planPluginOut(
  ctx: Context,
  state: KimiState,
  plan: Plan,
  switching: boolean,
): string | undefined {
  const { plugin } = state;
  if (state.registryError && state.registryText !== undefined) {
    plan.notes.push(`Note: ${state.registryError}`);
  } else if (plugin?.owner === "ours" || plugin?.owner === "missing") {
    const reg = planRegistryUninstall(state.registryText);
    if (!reg.ok) return reg.error;
    const what = switching
      ? "plugin-mode registration removed (switching to config mode)"
      : `plugin "${PLUGIN_ID}" unregistered`;
    planKimiFile(plan, state, "registry", reg.after, what);
    const root = joinPath(state.paths.managedDir, PLUGIN_ID);
    if (switching && plugin.owner === "ours" && norm(plugin.root) === norm(root)) {
      plan.steps.push(
        removalStep(root, `delete the plugin directory ${root}`, `plugin directory removed: ${root}`, true),
      );
    }
  } else if (plugin?.owner === "upstream" && !switching) {
    plan.notes.push(
      `Note: the "${PLUGIN_ID}" plugin registered in Kimi is OpenViking's own one; left in place.`,
    );
  } else if (plugin?.owner === "upstream" && plugin.enabled) {
    const reg = planRegistryDisable(state.registryText, ctx.now);
    if (!reg.ok) return reg.error;
    const what = "OpenViking's own plugin disabled (`/plugins enable openviking-memory` turns it back on)";
    planFile(plan, state.paths.registry, state.registryText, reg.after, what);
  }
  return undefined;
}

/** Whether the plugin directory holds `files` already, byte for byte and with their modes. */
async function pluginInPlace(root: string, files: TreeFile[]): Promise<boolean> {
  for (const f of files) {
    const path = joinPath(root, f.path);
    const mode = await Deno.stat(path).then((i) => i.mode, () => null);
    if (mode === null || (mode !== undefined && Deno.build.os !== "windows" && (mode & 0o777) !== f.mode)) {
      return false;
    }
    if (typeof f.content === "object" && "copyFrom" in f.content) {
      if (!(await sameBytes(path, f.content.copyFrom))) return false;
      continue;
    }
    const now = await readTextIfExists(path).catch(() => undefined);
    // The hooks rewrite the system prompt with the user's profile: it is in place when it is there.
    if (now === undefined || (f.path !== SYSTEM_PROMPT_FILE && now !== f.content)) return false;
  }
  return true;
}

/** Plans plugin mode: config mode out, the plugin directory placed whole (unless in place), its record. */
export async function planPluginMode(
  ctx: Context,
  options: InstallOptions,
  state: KimiState,
  program: Program,
  plan: Plan,
): Promise<string | undefined> {
  if (state.registryError) return state.registryError;
  const leave = planConfigOut(state, plan, true, options.yes);
  if (leave) return leave;
  await planConfigSkillRemoval(state, plan, await madeDirList(ctx.env));
  const root = joinPath(state.paths.managedDir, PLUGIN_ID);
  const manifest = joinPath(root, "kimi.plugin.json");
  const files = [
    { path: "kimi.plugin.json", content: manifestText(ctx.os), mode: 0o600 },
    ...pluginMemoryFiles(),
    program.pluginBin,
  ];
  const placing = state.plugin?.owner !== "ours" || !(await pluginInPlace(root, files));
  if (placing) {
    const theirs = state.plugin?.owner === "upstream" || state.plugin?.owner === "other";
    const stamp = ctx.now.toISOString().replace(/[:.]/g, "-");
    const keepAs = theirs && (await Deno.lstat(root).then(() => true, () => false))
      ? `${root}.replaced-${stamp}`
      : undefined;
    const before = await readTextIfExists(manifest).catch(() => undefined);
    plan.steps.push(swapStep({
      describe: `place the plugin directory ${root} (kimi.plugin.json, ${program.pluginBin.path})`,
      path: root,
      make: (tmp) => writeTree(tmp, files),
      keepAs,
      message: `plugin directory in place: ${root}${
        keepAs ? ` (the one it replaced is kept in ${keepAs})` : ""
      }`,
      check: () => checkCreatable(root),
      // The manifest's diff, for dry runs (the step places the directory whole).
      change: { path: manifest, before, after: manifestText(ctx.os), backup: "bak", displayOnly: true },
    }));
  }
  const reg = planRegistryInstall(state.registryText, { root, originalSource: program.source }, ctx.now);
  if (!reg.ok) return reg.error;
  const p = reg.previous;
  // The same directory, registered the same way: only the record's updatedAt would change.
  const same = !placing && p?.root === root && p.source === "local-path" &&
    p.originalSource === program.source;
  if (!same) planKimiFile(plan, state, "registry", reg.after, `plugin "${PLUGIN_ID}" registered`);
  if (p?.enabled === false) {
    plan.notes.push(`Note: the plugin is disabled in Kimi; enable it with \`/plugins enable ${PLUGIN_ID}\`.`);
  }
  plan.notes.push(hooksRun(`./${program.pluginBin.path} hook <event>, in ${root}`));
  return undefined;
}

/** Plans config mode: plugin mode out, our `mcp.json` entry and hook block, the memory skill. */
export async function planConfigMode(
  options: InstallOptions,
  ctx: Context,
  state: KimiState,
  program: Program,
  plan: Plan,
): Promise<string | undefined> {
  const prefix = configCommandPrefix(program.command, ctx.os);
  const leave = planPluginOut(ctx, state, plan, true);
  if (leave) return leave;
  const mcp = planMcpInstall(state.mcpText, configMcpEntry(program.command, ctx.os), {
    replaceOthers: options.yes,
  });
  if (!mcp.ok) return mcp.error;
  const cfg = planConfigInstall(state.configText, hookEntries(prefix));
  if (!cfg.ok) return cfg.error;
  if (mcp.changed) planKimiFile(plan, state, "mcp", mcp.after, 'MCP server "openviking" registered');
  if (cfg.changed) planKimiFile(plan, state, "config", cfg.after, "hooks registered");
  const skill = configSkillPath(state);
  const before = await readTextIfExists(skill).catch(() => undefined);
  if (before !== undefined && !before.includes(OWNED_MARK)) {
    plan.notes.push(
      `Note: ${skill} is a skill of your own; left as it is (the memory skill is not installed).`,
    );
  } else if (before !== skillText("config")) {
    planFile(plan, skill, before, skillText("config"), "memory skill installed", "none");
  }
  for (const w of cfg.warnings) plan.notes.push(`Warning: config.toml ${w}.`);
  plan.notes.push(hooksRun(`${prefix} hook <event>`));
  return undefined;
}

/** Where config mode puts the memory skill: Kimi's user skills directory. */
function configSkillPath(state: KimiState): string {
  return joinPath(state.paths.home, "skills", SKILL_NAME, "SKILL.md");
}

/** Plans config mode's skill out (ours only), its directory with it, and `skills/` when left empty and `made` by install. */
export async function planConfigSkillRemoval(state: KimiState, plan: Plan, made: string[]): Promise<void> {
  const path = configSkillPath(state);
  if (!(await readTextIfExists(path).catch(() => undefined))?.includes(OWNED_MARK)) return;
  const dir = dirName(path);
  const entries = await Array.fromAsync(Deno.readDir(dir)).catch(() => []);
  const target = entries.length === 1 ? dir : path;
  plan.steps.push(
    removalStep(target, `delete ${target} (the memory skill)`, `memory skill removed: ${target}`),
  );
  const skills = dirName(dir);
  const left = await Array.fromAsync(Deno.readDir(skills)).catch(() => []);
  if (target !== dir || left.length !== 1 || !made.includes(skills)) return;
  plan.steps.push({
    describe: `delete ${skills} (left empty)`,
    removes: skills,
    run: () => Promise.resolve({ commit: () => Deno.remove(skills).catch(() => {}) }),
  });
}

/** Plans the system prompt (it holds the user's profile) out of the plugin directory in Kimi's managed place. */
export async function planSystemPromptRemoval(state: KimiState, plan: Plan): Promise<void> {
  const file = joinPath(state.paths.managedDir, PLUGIN_ID, SYSTEM_PROMPT_FILE);
  const text = await readTextIfExists(file).catch(() => undefined);
  if (!text?.startsWith(SYSTEM_PROMPT_TITLE)) return;
  const describe = `delete ${file} (the profile in the plugin's system prompt)`;
  plan.steps.push(removalStep(file, describe, `system prompt removed: ${file}`));
}

/**
 * After a plugin-mode install: fills the new system prompt with the user's profile when OpenViking answered
 * (`answers`), within a few seconds; else the next session start does. Says what happened.
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
