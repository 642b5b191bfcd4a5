/**
 * The one rule for `.bak` copies of Kimi's files: a change keeps the previous bytes in `<file>.bak` — a
 * deletion too — unless everything in the file is ours, i.e. taking our part out of it would delete the file
 * (install created it and nobody added to it since). So an upgrade or an uninstall leaves no `.bak` of bytes
 * install wrote, and whatever of the user's or another tool's was in a file is kept.
 */

import { planConfigUninstall } from "./toml-block.ts";
import { planMcpUninstall } from "./json-files.ts";
import { planRegistryUninstall } from "./json-files.ts";

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
