/**
 * The marked block an older config-mode install left in config.toml: found, told apart from OpenViking's, and
 * taken out only when the user's document keeps its meaning. Pure.
 */

import { parse } from "smol-toml";
import { deepEqual, isRecord } from "../lib/parsed.ts";
import {
  ALLOWED_HOOK_KEYS,
  BLOCK_BEGIN,
  BLOCK_END,
  type EditPlan,
  isOurHookCommand,
  isUpstreamHookCommand,
  type Result,
} from "./spec.ts";

/** A marked block: `[start, end)` covers its begin marker line through the end marker (no line ending). */
type BlockRange = { start: number; end: number; text: string };

/** TOML parsed, or the first line of why not. */
export function parseToml(text: string): Result<{ value: Record<string, unknown> }> {
  try {
    return { ok: true, value: parse(text) as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: (error as Error).message.split("\n")[0] };
  }
}

/** The comment line saying install created config.toml (uninstall deletes it again when nothing else is left). */
export const CREATED_LINE =
  "# openviking-kimi created this file: uninstall deletes it when nothing else is left.";

/** Our marked blocks, or why the markers are unusable. */
export function findBlocks(text: string): { blocks: BlockRange[] } | { error: string } {
  const blocks: BlockRange[] = [];
  let open: number | undefined;
  let pos = 0;
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const [start, end] = [pos, pos + line.length];
    pos += raw.length + 1;
    if (line.trim() === BLOCK_BEGIN) {
      if (open !== undefined) {
        return { error: `config.toml line ${i + 1}: a second "${BLOCK_BEGIN}" before the block was closed` };
      }
      open = start;
    } else if (line.trim() === BLOCK_END) {
      if (open === undefined) {
        return { error: `config.toml line ${i + 1}: "${BLOCK_END}" without a matching begin line` };
      }
      blocks.push({ start: open, end, text: text.slice(open, end) });
      open = undefined;
    }
  }
  if (open !== undefined) return { error: `config.toml: "${BLOCK_BEGIN}" is never closed by "${BLOCK_END}"` };
  return { blocks };
}

/** `text` without `blocks`, each with the line ending install added for it. */
function removeRanges(text: string, blocks: readonly BlockRange[]): string {
  let out = text;
  for (const b of [...blocks].reverse()) {
    const after = /^\r?\n/.exec(out.slice(b.end))?.[0].length ?? 0;
    const before = after ? 0 : /\r?\n$/.exec(out.slice(0, b.start))?.[0].length ?? 0;
    out = out.slice(0, b.start - before) + out.slice(b.end + after);
  }
  return out;
}

/** `text` without any marked block. */
export function removeBlocks(text: string): string {
  const found = findBlocks(text);
  if ("error" in found) throw new Error(found.error);
  return removeRanges(text, found.blocks);
}

/** A `[[hooks]]` entry as found in a parsed config. */
export type FoundHook = { index: number; value: Record<string, unknown>; command: string };

/** The `[[hooks]]` entries of a parsed config (entries that are not tables skipped). */
export function hooksOf(doc: Record<string, unknown>): FoundHook[] {
  if (!Array.isArray(doc.hooks)) return [];
  return doc.hooks.flatMap((h, index) =>
    isRecord(h) ? [{ index, value: h, command: typeof h.command === "string" ? h.command : "" }] : []
  );
}

/** The document without one occurrence of each of `entries` (`hooks` dropped when that empties it). */
export function withoutHooks(
  doc: Record<string, unknown>,
  entries: readonly unknown[],
): Record<string, unknown> {
  if (!Array.isArray(doc.hooks) || entries.length === 0) return doc;
  const rest = [...doc.hooks];
  for (const e of entries) {
    const i = rest.findIndex((h) => deepEqual(h, e));
    if (i >= 0) rest.splice(i, 1);
  }
  const { hooks: _, ...out } = doc;
  return rest.length ? { ...out, hooks: rest } : out;
}

/** The one advice for settings written after our block, which TOML reads as part of its last `[[hooks]]`. */
export const SETTINGS_AFTER_BLOCK =
  "move the settings written after the openviking block above it, or under their own [table] header";

/** What to say of `[[hooks]]` entries with keys Kimi rejects (one makes Kimi drop every hook), each with its fix. */
export function invalidHookKeys(doc: Record<string, unknown>): string[] {
  return hooksOf(doc).flatMap((h) => {
    const bad = Object.keys(h.value).filter((k) => !ALLOWED_HOOK_KEYS.includes(k));
    if (!bad.length) return [];
    const keys = bad.map((k) => `"${k}"`).join(", ");
    const drop = `(Kimi allows only ${ALLOWED_HOOK_KEYS.join(", ")}), so Kimi ignores every [[hooks]] entry`;
    return [
      isOurHookCommand(h.command)
        ? `hooks[${h.index}], the openviking block's last, has ${keys}: written after the block, TOML reads ` +
          `${bad.length > 1 ? "them" : "it"} as part of that [[hooks]] table ${drop}; ${SETTINGS_AFTER_BLOCK}`
        : `hooks[${h.index}] has ${keys} ${drop}, ours included; remove ${
          bad.length > 1 ? "those keys" : "that key"
        }`,
    ];
  });
}

/** A block's hook entries and who wrote them (OpenViking's Node plugin used the same markers). */
export function blockInfo(
  block: BlockRange,
): { owner: "ours" | "upstream"; entries: Record<string, unknown>[] } {
  const parsed = parseToml(block.text);
  const entries = parsed.ok ? hooksOf(parsed.value).map((h) => h.value) : [];
  const upstream = entries.some((e) => typeof e.command === "string" && isUpstreamHookCommand(e.command));
  return { owner: upstream ? "upstream" : "ours", entries };
}

/** Why `[[hooks]]` outside any block (ours, or OpenViking's plugin's) stand in the way, or "". */
export function outsideHooksProblem(strays: FoundHook[], upstream: FoundHook[]): string {
  if (strays.length) {
    return `config.toml has openviking-kimi [[hooks]] outside the marked block (${
      strays.map((h) => `hooks[${h.index}]: ${h.command}`).join("; ")
    }); Kimi may have rewritten the file. Delete those [[hooks]] tables and run install again.`;
  }
  if (upstream.length) {
    return `config.toml has [[hooks]] of OpenViking's own Kimi plugin (${
      upstream.map((h) => h.command).join("; ")
    }). ` +
      "Two memory integrations would capture every turn twice: delete those [[hooks]] tables (or run " +
      "OpenViking's `install.sh --harness kimicode --uninstall --yes`) and run install again.";
  }
  return "";
}

/** The document and our blocks, or why the file cannot be changed. */
function load(text: string): Result<{ doc: Record<string, unknown>; blocks: BlockRange[] }> {
  const parsed = parseToml(text);
  if (!parsed.ok) {
    return {
      ok: false,
      error: `config.toml does not parse (${parsed.error}). Fix the file (\`kimi doctor config\` shows the ` +
        "problem, or restore config.toml.bak) and run again; nothing was changed.",
    };
  }
  const found = findBlocks(text);
  if ("error" in found) {
    return { ok: false, error: `${found.error}. Remove the stray marker line and run again.` };
  }
  return { ok: true, doc: parsed.value, blocks: found.blocks };
}

/** Plans uninstall: our block out (OpenViking's stays). */
export function planConfigUninstall(current: string | undefined): EditPlan {
  if (current === undefined) return { ok: true, after: undefined, changed: false, warnings: [] };
  const loaded = load(current);
  if (!loaded.ok) return loaded;
  const infos = loaded.blocks.map((block) => ({ block, ...blockInfo(block) }));
  const removable = infos.filter((i) => i.owner === "ours");
  const warnings = infos.filter((i) => !removable.includes(i)).map(() =>
    "config.toml has a block written by OpenViking's own Kimi plugin installer; it was left in place " +
    "(remove it with OpenViking's `install.sh --harness kimicode --uninstall --yes`)."
  );
  if (removable.length === 0) return { ok: true, after: current, changed: false, warnings };
  const after = removeRanges(current, removable.map((i) => i.block));
  const parsed = parseToml(after);
  if (!parsed.ok || !deepEqual(parsed.value, withoutHooks(loaded.doc, removable.flatMap((i) => i.entries)))) {
    return {
      ok: false,
      error: "removing the openviking block would change the meaning of settings written after it (TOML " +
        `reads them as part of its last [[hooks]] table): ${SETTINGS_AFTER_BLOCK}, then run uninstall again; ` +
        "nothing was changed.",
    };
  }
  const created = removable.some((i) => i.block.text.includes(CREATED_LINE));
  return { ok: true, after: after === "" && created ? undefined : after, changed: true, warnings };
}
