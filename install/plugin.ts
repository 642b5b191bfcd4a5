/**
 * The native Kimi plugin: its manifest (`kimi.plugin.json`, hook and MCP commands as `./` paths because Kimi
 * runs plugin hooks in the plugin root and rejects absolute MCP commands), and the atomic placement of the
 * plugin directory under `$KIMI_CODE_HOME/plugins/managed`. Its `bin/` holds the compiled binary, or the
 * launcher of a program copy (install/launcher.ts).
 */

import { VERSION } from "../lib/version.ts";
import { joinPath } from "../lib/paths.ts";
import { EXECUTABLE_NAME, hookEntries, type HookEntry, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import type { OsFamily } from "./placement.ts";
import { memoryManifestFields } from "./memory-layout.ts";

/** A plugin manifest as we write it. */
export interface Manifest {
  name: string;
  version: string;
  description: string;
  keywords: string[];
  interface: { displayName: string; shortDescription: string };
  hooks: HookEntry[];
  mcpServers: Record<string, { command: string; args: string[] }>;
  /** The memory files (install/memory-files.ts): the system prompt, the skill, the commands. */
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
