/**
 * What is registered in a Kimi home right now: our config.toml block (or OpenViking's upstream one), stray
 * hook entries, the `mcp.json` entry, and the `openviking-memory` plugin record with its manifest. Install,
 * uninstall and doctor all decide from this one picture.
 */

import { readTextIfExists } from "../lib/fs.ts";
import { readText } from "./files.ts";
import { type Env, isAbsolutePath, joinPath, kimiHome } from "../lib/paths.ts";
import { PLUGIN_ID } from "./spec.ts";
import { findBlocks, parseToml, removeBlocks } from "./toml-block.ts";
import { blockInfo, type BlockOwner, type FoundHook, hooksOf, invalidHookKeys } from "./toml-config.ts";
import { isOurHookCommand, isUpstreamHookCommand, MCP_SERVER_NAME } from "./spec.ts";
import { classifyMcpEntry, type McpOwner } from "./mcp-json.ts";
import { findRecord, parseRegistry, type RegistryRecord } from "./registry.ts";
import { classifyManifest } from "./plugin.ts";
import { parseJson } from "./json-file.ts";
import { isRecord } from "../lib/parsed.ts";

/**
 * The Kimi home a command works on: `--kimi-home` (`~` expanded, a relative one taken from `cwd`), else
 * `$KIMI_CODE_HOME`, else `~/.kimi-code`. Throws NoHomeError when it needs a home there is none of.
 */
export function kimiHomeFor(env: Env, explicit: string | undefined, cwd: string): string {
  const home = kimiHome(env, explicit);
  return isAbsolutePath(home) ? home : joinPath(cwd, home);
}

/** Paths of the files we touch in a Kimi home. */
export interface KimiPaths {
  home: string;
  config: string;
  mcp: string;
  registry: string;
  managedDir: string;
}

/** The files of a Kimi home. */
function kimiPaths(home: string): KimiPaths {
  return {
    home,
    config: joinPath(home, "config.toml"),
    mcp: joinPath(home, "mcp.json"),
    registry: joinPath(home, "plugins", "installed.json"),
    managedDir: joinPath(home, "plugins", "managed"),
  };
}

/** The plugin record and what its manifest says. */
export interface PluginState {
  record: RegistryRecord;
  enabled: boolean;
  root: string;
  owner: "ours" | "upstream" | "other" | "missing";
  manifest?: Record<string, unknown>;
  /** Whether the record disabled our MCP server (`capabilities.mcpServers.openviking.enabled === false`). */
  mcpDisabled: boolean;
}

/** Everything registered in a Kimi home. */
export interface KimiState {
  paths: KimiPaths;
  homeExists: boolean;
  configText?: string;
  configError?: string;
  blocks: { owner: BlockOwner; entries: Record<string, unknown>[] }[];
  /** Our hook entries outside the block (e.g. after Kimi rewrote config.toml). */
  strayHooks: FoundHook[];
  /** Hook entries of OpenViking's own Node plugin outside any block. */
  upstreamHooks: FoundHook[];
  /** Hook entries Kimi rejects (which make it drop every hook). */
  invalidHookKeys: string[];
  /** All parsed hook entries of config.toml. */
  configHooks: FoundHook[];
  mcpText?: string;
  mcpError?: string;
  mcpOwner: McpOwner;
  mcpEntry?: unknown;
  registryText?: string;
  registryError?: string;
  plugin?: PluginState;
  /** Why a file could not be read (a directory in its place, not UTF-8, no permission): nothing may be written. */
  unreadable: string[];
}

async function readManifest(root: string): Promise<Record<string, unknown> | undefined> {
  for (const name of ["kimi.plugin.json", ".kimi-plugin/plugin.json"]) {
    const text = await readTextIfExists(joinPath(root, name)).catch(() => undefined);
    if (text === undefined) continue;
    const parsed = parseJson(text);
    return parsed.ok && isRecord(parsed.value) ? parsed.value : undefined;
  }
  return undefined;
}

/** A file's exact text (BOM kept); a read error is recorded in `state` and the file treated as absent. */
async function readFile(state: KimiState, path: string): Promise<{ text?: string; error?: string }> {
  const r = await readText(path);
  if (r.ok) return { text: r.text };
  state.unreadable.push(r.error);
  return { error: `cannot be read: ${r.reason}` };
}

/** config.toml: our blocks, every hook entry, the ones Kimi rejects, and ours or upstream's outside a block. */
async function readConfig(state: KimiState): Promise<void> {
  const config = await readFile(state, state.paths.config);
  state.configText = config.text;
  state.configError = config.error;
  if (state.configText === undefined) return;
  const parsed = parseToml(state.configText);
  const found = findBlocks(state.configText);
  if (!parsed.ok) state.configError = parsed.error;
  else if ("error" in found) state.configError = found.error;
  else {
    state.blocks = found.blocks.map(blockInfo);
    state.configHooks = hooksOf(parsed.value);
    state.invalidHookKeys = invalidHookKeys(parsed.value);
    const outside = parseToml(removeBlocks(state.configText));
    if (outside.ok) {
      state.strayHooks = hooksOf(outside.value).filter((h) => isOurHookCommand(h.command));
      state.upstreamHooks = hooksOf(outside.value).filter((h) => isUpstreamHookCommand(h.command));
    }
  }
}

/** mcp.json: the entry under our server's name and who wrote it. */
async function readMcp(state: KimiState): Promise<void> {
  const mcp = await readFile(state, state.paths.mcp);
  state.mcpText = mcp.text;
  state.mcpError = mcp.error;
  if (state.mcpText === undefined || state.mcpText.trim() === "") return;
  const parsed = parseJson(state.mcpText);
  if (!parsed.ok || !isRecord(parsed.value)) {
    state.mcpError = parsed.ok ? "not a JSON object" : parsed.error;
    return;
  }
  const servers = isRecord(parsed.value.mcpServers) ? parsed.value.mcpServers : {};
  state.mcpEntry = servers[MCP_SERVER_NAME];
  state.mcpOwner = classifyMcpEntry(state.mcpEntry);
}

/** plugins/installed.json: the `openviking-memory` record, its manifest and who it belongs to. */
async function readPlugin(state: KimiState): Promise<void> {
  const registryFile = await readFile(state, state.paths.registry);
  state.registryText = registryFile.text;
  const registry = parseRegistry(state.registryText);
  if (registryFile.error) state.registryError = registryFile.error;
  else if (!registry.ok) state.registryError = registry.error;
  const record = registry.ok && !registryFile.error ? findRecord(registry.value, PLUGIN_ID) : undefined;
  if (!record) return;
  const root = typeof record.root === "string" ? record.root : "";
  const manifest = root ? await readManifest(root) : undefined;
  const caps = isRecord(record.capabilities) ? record.capabilities : {};
  const servers = isRecord(caps.mcpServers) ? caps.mcpServers : {};
  const ours = isRecord(servers[MCP_SERVER_NAME]) ? servers[MCP_SERVER_NAME] : {};
  state.plugin = {
    record,
    root,
    enabled: record.enabled !== false,
    owner: manifest ? classifyManifest(manifest) : "missing",
    manifest,
    mcpDisabled: ours.enabled === false,
  };
}

/** Reads and classifies every registration in the Kimi home `home`. */
export async function readKimiState(home: string): Promise<KimiState> {
  const state: KimiState = {
    paths: kimiPaths(home),
    homeExists: await Deno.stat(home).then((s) => s.isDirectory, () => false),
    blocks: [],
    strayHooks: [],
    upstreamHooks: [],
    invalidHookKeys: [],
    configHooks: [],
    mcpOwner: "absent",
    unreadable: [],
  };
  await readConfig(state);
  await readMcp(state);
  await readPlugin(state);
  return state;
}

/** Whether plugin mode is registered by us (our plugin record). */
export function hasOurPlugin(state: KimiState): boolean {
  return state.plugin?.owner === "ours";
}

/** Whether OpenViking's own Kimi plugin is registered (its plugin record, block, hooks or MCP entry). */
export function hasUpstream(state: KimiState): boolean {
  return state.plugin?.owner === "upstream" || state.blocks.some((b) => b.owner === "upstream") ||
    state.upstreamHooks.length > 0 || state.mcpOwner === "upstream";
}
