/**
 * What openviking-kimi registers in Kimi Code, defined once: the hook entries (made from the hook table of
 * hooks/events.ts: event, CLI event name, matcher, timeout), the names of the plugin, the MCP server and the
 * config.toml marker block. Config mode, plugin mode, the repository's kimi.plugin.json, the release zips and
 * doctor all read these.
 */

import { HOOKS } from "../kimi/hooks.ts";

/** Plugin id (same as OpenViking's own Kimi plugin, so the two can never be enabled side by side). */
export const PLUGIN_ID = "openviking-memory";

/** Key of our server in `mcp.json` / the manifest's `mcpServers`. */
export const MCP_SERVER_NAME = "openviking";

/** First line of the block we own in config.toml. */
export const BLOCK_BEGIN = "# >>> openviking kimicode integration";

/** Last line of the block we own in config.toml. */
export const BLOCK_END = "# <<< openviking kimicode integration";

/** Executable name (without `.exe`). */
export const EXECUTABLE_NAME = "openviking-kimi";

/** The keys Kimi accepts in a `[[hooks]]` entry; one more key makes Kimi drop every hook. */
export const ALLOWED_HOOK_KEYS: readonly string[] = ["event", "matcher", "command", "timeout"];

/** A `[[hooks]]` entry / manifest hook object, exactly the keys Kimi allows. */
export interface HookEntry {
  event: string;
  matcher?: string;
  command: string;
  timeout: number;
}

/** Builds the hook entries for a command prefix (`<prefix> hook <event>`). */
export function hookEntries(prefix: string): HookEntry[] {
  return HOOKS.map((h) => ({
    event: h.event,
    ...("matcher" in h ? { matcher: h.matcher } : {}),
    command: `${prefix} hook ${h.cli}`,
    timeout: h.timeout,
  }));
}

/**
 * Whether a hook command string is one of ours (`… openviking-kimi[.exe|.cmd] hook <event>`: the binary or a
 * program copy's launcher, or `… main.ts hook <event>` from before program copies).
 */
export function isOurHookCommand(command: string): boolean {
  const events = HOOKS.map((h) => h.cli).join("|");
  const re = new RegExp(
    `(?:openviking-kimi(?:\\.exe|\\.cmd)?|main\\.ts)['"]?\\s+hook\\s+(?:${events})\\s*$`,
  );
  return re.test(command);
}

/** Whether a hook command string belongs to OpenViking's own (Node) Kimi plugin. */
export function isUpstreamHookCommand(command: string): boolean {
  return /kimicode-hook\.mjs|uri-guard\.mjs|agent-integrations[\\/]kimicode[\\/]scripts[\\/]hook\.mjs/.test(
    command,
  );
}
