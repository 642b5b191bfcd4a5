/**
 * The one rule for `.bak` copies of Kimi's files: a change keeps the previous bytes in `<file>.bak` — a
 * deletion too — unless everything in the file is ours, i.e. taking our part out of it would delete the file
 * (install created it and nobody added to it since). So an upgrade or an uninstall leaves no `.bak` of bytes
 * install wrote, and whatever of the user's or another tool's was in a file is kept.
 */

import { planConfigUninstall } from "./toml-config.ts";
import { planMcpUninstall } from "./mcp-json.ts";
import { planRegistryUninstall } from "./registry.ts";

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
  const out = file === "config"
    ? planConfigUninstall(before)
    : file === "mcp"
    ? planMcpUninstall(before)
    : planRegistryUninstall(before);
  return out.ok && out.changed && out.after === undefined ? "none" : "bak";
}
