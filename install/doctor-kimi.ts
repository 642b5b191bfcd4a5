/**
 * Doctor's checks of Kimi's side: its home is there, config.toml parses with [[hooks]] Kimi accepts, the
 * plugin registry reads, and what is registered — every hook event once (config block or plugin, ours or
 * OpenViking's own), none of ours outside the block, the MCP server once.
 */

import type { Check } from "./check.ts";
import { HOOKS } from "../kimi/hooks.ts";
import { isOurHookCommand, isUpstreamHookCommand, MCP_SERVER_NAME, PLUGIN_ID } from "./spec.ts";
import type { KimiState } from "./detect.ts";
import { isRecord } from "../lib/parsed.ts";
import { commandName } from "../lib/self.ts";

/** The fix when our hooks or MCP server are not (all) registered. */
function installFix(): string {
  return `run \`${commandName()} install\` (or \`install --mode plugin\`)`;
}

/** Where each event is registered (config block, plugin, OpenViking's own plugin). */
export function registrations(state: KimiState): Map<string, string[]> {
  const byEvent = new Map<string, string[]>(HOOKS.map((h) => [h.event, []]));
  const add = (event: unknown, where: string) => {
    if (typeof event === "string" && byEvent.has(event)) byEvent.get(event)!.push(where);
  };
  const configLive = state.configError === undefined && state.invalidHookKeys.length === 0;
  if (configLive) {
    for (const h of state.configHooks) {
      if (isOurHookCommand(h.command)) add(h.value.event, "config.toml");
      else if (isUpstreamHookCommand(h.command)) add(h.value.event, "config.toml (OpenViking's Node plugin)");
    }
  }
  const p = state.plugin;
  if (p && p.enabled && p.manifest && Array.isArray(p.manifest.hooks)) {
    const where = p.owner === "ours"
      ? `plugin ${PLUGIN_ID}`
      : `plugin ${PLUGIN_ID} (OpenViking's Node plugin)`;
    for (const h of p.manifest.hooks) if (isRecord(h)) add(h.event, where);
  }
  return byEvent;
}

/** The hooks check: every event registered exactly once, and our plugin enabled. */
function hookCheck(state: KimiState): Check {
  const regs = registrations(state);
  const missing = [...regs].filter(([, w]) => w.length === 0).map(([e]) => e);
  const twice = [...regs].filter(([, w]) => w.length > 1);
  const detail = [...regs].map(([e, w]) => `${e}: ${w.length ? w.join(" + ") : "not registered"}`);
  if (state.plugin?.owner === "ours" && !state.plugin.enabled) {
    return {
      id: "hooks",
      status: "fail",
      summary: `the ${PLUGIN_ID} plugin is disabled in Kimi`,
      detail,
      fix: `in Kimi run \`/plugins enable ${PLUGIN_ID}\` (or run \`${commandName()} install --mode plugin\`)`,
    };
  }
  if (twice.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: `hooks registered more than once (${
        twice.map(([e, w]) => `${e} ×${w.length}`).join(", ")
      }): ` +
        "every turn would be captured twice",
      detail,
      fix: `run \`${commandName()} install\` in the mode you want (it replaces its own other mode), or ` +
        `\`${commandName()} uninstall --mode config|plugin\`; remove OpenViking's Node plugin with \`/plugins remove ` +
        `${PLUGIN_ID}\` or its \`install.sh --harness kimicode --uninstall --yes\``,
    };
  }
  if (missing.length === HOOKS.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: "no openviking hook is registered",
      detail,
      fix: installFix(),
    };
  }
  if (missing.length) {
    return {
      id: "hooks",
      status: "fail",
      summary: `not registered: ${missing.join(", ")}`,
      detail,
      fix: `${installFix()} again to restore every hook`,
    };
  }
  return { id: "hooks", status: "ok", summary: `all ${HOOKS.length} hooks registered once`, detail };
}

/** The MCP check: our server registered exactly once (mcp.json or the plugin), and mcp.json valid. */
function mcpCheck(state: KimiState): Check {
  const where: string[] = [];
  if (state.mcpOwner === "ours") where.push("mcp.json");
  if (state.mcpOwner === "upstream") where.push("mcp.json (OpenViking's Node proxy)");
  const p = state.plugin;
  if (
    p && p.enabled && p.manifest && isRecord(p.manifest.mcpServers) &&
    MCP_SERVER_NAME in p.manifest.mcpServers
  ) {
    if (!p.mcpDisabled) where.push(`plugin ${PLUGIN_ID}`);
  }
  if (state.mcpError) {
    return {
      id: "mcp",
      status: "fail",
      summary: `mcp.json is not valid JSON (${state.mcpError})`,
      fix: `fix mcp.json or restore mcp.json.bak, then run \`${commandName()} install\``,
    };
  }
  if (where.length === 0) {
    const fix = p?.owner === "ours" && p.mcpDisabled
      ? `in Kimi run \`/plugins mcp enable ${PLUGIN_ID} ${MCP_SERVER_NAME}\``
      : installFix();
    return { id: "mcp", status: "fail", summary: "the OpenViking MCP server is not registered", fix };
  }
  if (where.length > 1) {
    return {
      id: "mcp",
      status: "warn",
      summary: `MCP server registered ${where.length} times (${
        where.join(" + ")
      }): the model sees every tool twice`,
      fix: `run \`${commandName()} install\` in one mode; it removes the other`,
    };
  }
  const note = state.mcpOwner === "foreign"
    ? ` (mcp.json also has a foreign "${MCP_SERVER_NAME}" entry)`
    : "";
  return { id: "mcp", status: note ? "warn" : "ok", summary: `registered in ${where[0]}${note}` };
}

/** Whether Kimi's home is there, and whether config.toml parses with [[hooks]] Kimi accepts. */
export function kimiChecks(home: string, state: KimiState): Check[] {
  const checks: Check[] = [
    state.homeExists ? { id: "kimi-home", status: "ok", summary: `Kimi Code home ${home}` } : {
      id: "kimi-home",
      status: "fail",
      summary: `Kimi Code home ${home} does not exist`,
      fix:
        "install Kimi Code (`npm install -g @moonshot-ai/kimi-code`) and run it once, or set KIMI_CODE_HOME",
    },
  ];
  if (state.configError?.startsWith("cannot be read")) {
    checks.push({
      id: "config",
      status: "fail",
      summary: `${state.paths.config} ${state.configError}`,
      fix: "make it a readable UTF-8 file again (or restore config.toml.bak); Kimi cannot read it either",
    });
  } else if (state.configError) {
    checks.push({
      id: "config",
      status: "fail",
      summary: `config.toml does not parse: ${state.configError}`,
      fix: "fix it (`kimi doctor config` shows where) or restore config.toml.bak",
    });
  } else if (state.invalidHookKeys.length) {
    checks.push({
      id: "config",
      status: "fail",
      summary: "config.toml has [[hooks]] entries Kimi rejects, so Kimi ignores all of them",
      detail: state.invalidHookKeys,
      fix: "do what each line above says",
    });
  } else {
    checks.push({
      id: "config",
      status: "ok",
      summary: state.configText === undefined ? "no config.toml (nothing to parse)" : "config.toml parses",
    });
  }
  if (state.registryError && state.registryText !== undefined) {
    checks.push({ id: "plugins", status: "fail", summary: state.registryError });
  }
  return checks;
}

/** What is registered: the hooks (and any of ours outside the block), the MCP server. */
export function registrationChecks(state: KimiState): Check[] {
  const checks = [hookCheck(state)];
  if (state.strayHooks.length) {
    checks.push({
      id: "hooks-outside-block",
      status: "warn",
      summary:
        "openviking-kimi [[hooks]] found outside the marked block (Kimi may have rewritten config.toml)",
      detail: state.strayHooks.map((h) => `hooks[${h.index}]: ${h.command}`),
      fix: `uninstall cannot remove these: delete them by hand, then run \`${commandName()} install\``,
    });
  }
  checks.push(mcpCheck(state));
  return checks;
}
