/**
 * What openviking-kimi registers in Kimi Code, defined once: the hook table (event, CLI event name, matcher,
 * timeout), the names of the plugin, the MCP server and the config.toml marker block. Config mode, plugin
 * mode, the repository's kimi.plugin.json, the release zips and doctor all read this table.
 */

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

/** One hook we register. */
export interface HookSpec {
  /** Kimi's event name. */
  event: string;
  /** Our CLI's event argument (`openviking-kimi hook <cli>`). */
  cli: string;
  /** Kimi `matcher` (a JS RegExp source), when the hook is limited to some tools. */
  matcher?: string;
  /** Kimi `timeout` in whole seconds: the hook's own time budget plus start-up headroom. */
  timeout: number;
}

/**
 * The hooks, in registration order. Timeouts: the prompt hook works inside a 17 s budget (20); interrupt
 * inside 2 s (5); stop / stop-failure / pre-compact / session-end parents return at once and detach a worker,
 * session-start detaches its queue replay (10 is ample for a parent that only spawns, and bounds a stall); the
 * `viking://` guard is local (5). StopFailure is what Kimi fires instead of Stop when a turn fails.
 */
export const HOOKS: readonly HookSpec[] = [
  { event: "SessionStart", cli: "session-start", timeout: 10 },
  { event: "UserPromptSubmit", cli: "user-prompt-submit", timeout: 20 },
  { event: "PreToolUse", cli: "pre-tool-use", matcher: "Read|Glob|Grep", timeout: 5 },
  { event: "Stop", cli: "stop", timeout: 10 },
  { event: "StopFailure", cli: "stop-failure", timeout: 10 },
  { event: "PreCompact", cli: "pre-compact", timeout: 10 },
  { event: "SessionEnd", cli: "session-end", timeout: 10 },
  { event: "Interrupt", cli: "interrupt", timeout: 5 },
];

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
    ...(h.matcher ? { matcher: h.matcher } : {}),
    command: `${prefix} hook ${h.cli}`,
    timeout: h.timeout,
  }));
}

/** Whether a hook command string is one of ours (`… openviking-kimi hook <event>` or `… main.ts hook <event>`). */
export function isOurHookCommand(command: string): boolean {
  const events = HOOKS.map((h) => h.cli).join("|");
  const re = new RegExp(
    `(?:openviking-kimi(?:\\.exe)?|main\\.ts)['"]?\\s+hook\\s+(?:${events})\\s*$`,
  );
  return re.test(command);
}

/** Whether a hook command string belongs to OpenViking's own (Node) Kimi plugin. */
export function isUpstreamHookCommand(command: string): boolean {
  return /kimicode-hook\.mjs|uri-guard\.mjs|agent-integrations[\\/]kimicode[\\/]scripts[\\/]hook\.mjs/.test(
    command,
  );
}
