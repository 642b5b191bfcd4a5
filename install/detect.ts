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
} from "./spec.ts";
import {
  type Block,
  findBlocks,
  type FoundHook,
  hooksOf,
  invalidHookKeys,
  parseToml,
  withoutBlocks,
} from "./toml-block.ts";
import { findRecord, parseJson, parseRegistry } from "./json-files.ts";
import { readText } from "./transaction.ts";

/** The Kimi home a command works on: `--kimi-home` (`~` expanded, relative to `cwd`), `$KIMI_CODE_HOME`, `~/.kimi-code`. */
export function kimiHomeFor(env: Env, explicit: string | undefined, cwd: string): string {
  const home = kimiHome(env, explicit);
  return isAbsolutePath(home) ? home : joinPath(cwd, home);
}

/** Everything registered in a Kimi home. */
export type KimiState = Awaited<ReturnType<typeof readKimiState>>;

/**
 * Reads and classifies every registration in the Kimi home `home`: our blocks, our hooks outside them
 * (`strayHooks`) and OpenViking's own (`upstreamHooks`), hooks with keys Kimi rejects, who wrote the MCP entry,
 * the `openviking-memory` record and its manifest; `unreadable`: why a file could not be read (nothing may be
 * written then).
 */
export async function readKimiState(home: string) {
  const paths = {
    home,
    config: joinPath(home, "config.toml"),
    mcp: joinPath(home, "mcp.json"),
    registry: joinPath(home, "plugins", "installed.json"),
    managedDir: joinPath(home, "plugins", "managed"),
  };
  const unreadable: string[] = [];
  const read = async (path: string) => {
    const r = await readText(path);
    if (r.ok) return { text: r.text };
    unreadable.push(r.error);
    return { text: undefined, error: `cannot be read: ${r.reason}` };
  };
  const config = await read(paths.config);
  let configError = config.error;
  const hooks = {
    blocks: [] as Block[],
    configHooks: [] as FoundHook[],
    strayHooks: [] as FoundHook[],
    upstreamHooks: [] as FoundHook[],
    invalidHookKeys: [] as string[],
  };
  if (config.text !== undefined) {
    const parsed = parseToml(config.text);
    const found = findBlocks(config.text);
    if (!parsed.ok) configError = parsed.error;
    else if (!found.ok) configError = found.error;
    else {
      const outside = parseToml(withoutBlocks(config.text, found.blocks));
      const loose = outside.ok ? hooksOf(outside.value) : [];
      Object.assign(hooks, {
        blocks: found.blocks,
        configHooks: hooksOf(parsed.value),
        invalidHookKeys: invalidHookKeys(parsed.value),
        strayHooks: loose.filter((h) => isOurHookCommand(h.command)),
        upstreamHooks: loose.filter((h) => isUpstreamHookCommand(h.command)),
      });
    }
  }
  const mcp = await read(paths.mcp);
  let [mcpError, mcpOwner] = [mcp.error, classifyMcpEntry(undefined)];
  if (mcp.text?.trim()) {
    const parsed = parseJson(mcp.text);
    if (!parsed.ok || !isRecord(parsed.value)) mcpError = parsed.ok ? "not a JSON object" : parsed.error;
    else {
      const servers = parsed.value.mcpServers;
      mcpOwner = classifyMcpEntry(isRecord(servers) ? servers[MCP_SERVER_NAME] : undefined);
    }
  }
  const registry = await read(paths.registry);
  const parsed = parseRegistry(registry.text);
  const record = parsed.ok && !registry.error ? findRecord(parsed.value) : undefined;
  let plugin;
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
    const owner: ReturnType<typeof classifyManifest> | "missing" = manifest
      ? classifyManifest(manifest)
      : "missing";
    // `mcpDisabled`: the record disabled our MCP server (`capabilities.mcpServers.openviking.enabled === false`).
    const mcpDisabled = isRecord(caps[MCP_SERVER_NAME]) && caps[MCP_SERVER_NAME].enabled === false;
    plugin = { record, root, enabled: record.enabled !== false, owner, manifest, mcpDisabled };
  }
  return {
    paths,
    homeExists: await Deno.stat(home).then((s) => s.isDirectory, () => false),
    configText: config.text,
    configError,
    ...hooks,
    mcpText: mcp.text,
    mcpError,
    mcpOwner,
    registryText: registry.text,
    registryError: registry.error ?? (parsed.ok ? undefined : parsed.error),
    plugin,
    unreadable,
  };
}
