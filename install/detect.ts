/** What a Kimi home has registered now and who wrote each: the one picture install, uninstall and doctor use. */

import { readTextIfExists } from "../lib/fs.ts";
import { type Env, isAbsolutePath, joinPath, kimiHome } from "../lib/paths.ts";
import { isRecord } from "../lib/parsed.ts";
import {
  classifyManifest,
  classifyMcpEntry,
  isOurHookCommand,
  isUpstreamHookCommand,
  MCP_SERVER_NAME,
  type McpOwner,
} from "./spec.ts";
import {
  blockInfo,
  type BlockOwner,
  findBlocks,
  type FoundHook,
  hooksOf,
  invalidHookKeys,
  parseToml,
  removeBlocks,
} from "./toml-block.ts";
import { findRecord, parseJson, parseRegistry, type RegistryRecord } from "./json-files.ts";
import { readText } from "./transaction.ts";

/** The Kimi home a command works on: `--kimi-home` (`~` expanded, relative to `cwd`), `$KIMI_CODE_HOME`, `~/.kimi-code`. */
export function kimiHomeFor(env: Env, explicit: string | undefined, cwd: string): string {
  const home = kimiHome(env, explicit);
  return isAbsolutePath(home) ? home : joinPath(cwd, home);
}

/** The `openviking-memory` plugin record and what its manifest says. */
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
  paths: { home: string; config: string; mcp: string; registry: string; managedDir: string };
  homeExists: boolean;
  configText?: string;
  configError?: string;
  blocks: { owner: BlockOwner; entries: Record<string, unknown>[] }[];
  /** Our hook entries outside the block (Kimi rewrote config.toml, say). */
  strayHooks: FoundHook[];
  /** Hook entries of OpenViking's own Node plugin outside any block. */
  upstreamHooks: FoundHook[];
  /** Hook entries Kimi rejects (which make it drop every hook). */
  invalidHookKeys: string[];
  configHooks: FoundHook[];
  mcpText?: string;
  mcpError?: string;
  mcpOwner: McpOwner;
  registryText?: string;
  registryError?: string;
  plugin?: PluginState;
  /** Why a file could not be read (a directory in its place, not UTF-8, no permission): nothing may be written. */
  unreadable: string[];
}

/** Reads and classifies every registration in the Kimi home `home`. */
export async function readKimiState(home: string): Promise<KimiState> {
  const state: KimiState = {
    paths: {
      home,
      config: joinPath(home, "config.toml"),
      mcp: joinPath(home, "mcp.json"),
      registry: joinPath(home, "plugins", "installed.json"),
      managedDir: joinPath(home, "plugins", "managed"),
    },
    homeExists: await Deno.stat(home).then((s) => s.isDirectory, () => false),
    blocks: [],
    strayHooks: [],
    upstreamHooks: [],
    invalidHookKeys: [],
    configHooks: [],
    mcpOwner: "absent",
    unreadable: [],
  };
  const read = async (path: string) => {
    const r = await readText(path);
    if (r.ok) return { text: r.text };
    state.unreadable.push(r.error);
    return { error: `cannot be read: ${r.reason}` };
  };

  ({ text: state.configText, error: state.configError } = await read(state.paths.config));
  if (state.configText !== undefined) {
    const parsed = parseToml(state.configText);
    const found = findBlocks(state.configText);
    if (!parsed.ok) state.configError = parsed.error;
    else if ("error" in found) state.configError = found.error;
    else {
      state.blocks = found.blocks.map(blockInfo);
      state.configHooks = hooksOf(parsed.value);
      state.invalidHookKeys = invalidHookKeys(parsed.value);
      const outside = parseToml(removeBlocks(state.configText));
      const loose = outside.ok ? hooksOf(outside.value) : [];
      state.strayHooks = loose.filter((h) => isOurHookCommand(h.command));
      state.upstreamHooks = loose.filter((h) => isUpstreamHookCommand(h.command));
    }
  }

  ({ text: state.mcpText, error: state.mcpError } = await read(state.paths.mcp));
  if (state.mcpText?.trim()) {
    const parsed = parseJson(state.mcpText);
    if (!parsed.ok || !isRecord(parsed.value)) {
      state.mcpError = parsed.ok ? "not a JSON object" : parsed.error;
    } else {state.mcpOwner = classifyMcpEntry(
        isRecord(parsed.value.mcpServers) ? parsed.value.mcpServers[MCP_SERVER_NAME] : undefined,
      );}
  }

  const registry = await read(state.paths.registry);
  state.registryText = registry.text;
  const parsed = parseRegistry(registry.text);
  state.registryError = registry.error ?? (parsed.ok ? undefined : parsed.error);
  const record = parsed.ok && !registry.error ? findRecord(parsed.value) : undefined;
  if (record) {
    const root = typeof record.root === "string" ? record.root : "";
    let manifest: Record<string, unknown> | undefined;
    for (const name of root ? ["kimi.plugin.json", ".kimi-plugin/plugin.json"] : []) {
      const text = await readTextIfExists(joinPath(root, name)).catch(() => undefined);
      if (text === undefined) continue;
      const m = parseJson(text);
      manifest = m.ok && isRecord(m.value) ? m.value : undefined;
      break;
    }
    const caps = isRecord(record.capabilities) && isRecord(record.capabilities.mcpServers)
      ? record.capabilities.mcpServers
      : {};
    state.plugin = {
      record,
      root,
      enabled: record.enabled !== false,
      owner: manifest ? classifyManifest(manifest) : "missing",
      manifest,
      mcpDisabled: isRecord(caps[MCP_SERVER_NAME]) && caps[MCP_SERVER_NAME].enabled === false,
    };
  }
  return state;
}
