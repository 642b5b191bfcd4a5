/**
 * The marked block an older config-mode install left in config.toml: the lines between our markers, taken out
 * only when what TOML reads of the rest is unchanged (one parse-equal check). Pure.
 */

import { parse } from "smol-toml";
import { deepEqual, isRecord } from "../lib/parsed.ts";
import {
  ALLOWED_HOOK_KEYS,
  BLOCK_BEGIN,
  BLOCK_END,
  type EditPlan,
  isUpstreamHookCommand,
  type Result,
} from "./spec.ts";

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

/** A `[[hooks]]` entry as found in a parsed config. */
export type FoundHook = { index: number; value: Record<string, unknown>; command: string };

/** The `[[hooks]]` entries of a parsed config (entries that are not tables skipped). */
export function hooksOf(doc: Record<string, unknown>): FoundHook[] {
  if (!Array.isArray(doc.hooks)) return [];
  return doc.hooks.flatMap((h, index) =>
    isRecord(h) ? [{ index, value: h, command: typeof h.command === "string" ? h.command : "" }] : []
  );
}

/** A marked block: lines `first`–`last` (0-based, markers included), its hook entries and who wrote them. */
export type Block = { first: number; last: number; owner: "ours" | "upstream"; entries: FoundHook[] };

const linesOf = (text: string) => text.split(/(?<=\n)/);

/** The marked blocks (OpenViking's Node plugin used the same markers), or which marker line is unusable. */
export function findBlocks(text: string): Result<{ blocks: Block[] }> {
  const lines = linesOf(text);
  const blocks: Block[] = [];
  let open: number | undefined;
  const bad = (why: string): Result<never> => ({ ok: false, error: `config.toml ${why}` });
  for (const [i, line] of lines.entries()) {
    const mark = line.trim();
    if (mark === BLOCK_BEGIN && open !== undefined) {
      return bad(`line ${i + 1}: a second "${BLOCK_BEGIN}" before the block was closed`);
    } else if (mark === BLOCK_BEGIN) open = i;
    else if (mark === BLOCK_END && open === undefined) {
      return bad(`line ${i + 1}: "${BLOCK_END}" without a matching begin line`);
    } else if (mark === BLOCK_END && open !== undefined) {
      const parsed = parseToml(lines.slice(open, i + 1).join(""));
      const entries = parsed.ok ? hooksOf(parsed.value) : [];
      const upstream = entries.some((e) => isUpstreamHookCommand(e.command));
      blocks.push({ first: open, last: i, owner: upstream ? "upstream" : "ours", entries });
      open = undefined;
    }
  }
  if (open !== undefined) return bad(`line ${open + 1}: "${BLOCK_BEGIN}" is never closed by "${BLOCK_END}"`);
  return { ok: true, blocks };
}

/** `text` without the lines of `blocks`; a block ending the file unterminated takes the line ending before it. */
export function withoutBlocks(text: string, blocks: readonly Block[]): string {
  const lines = linesOf(text);
  for (const b of [...blocks].reverse()) {
    const [gone] = lines.splice(b.first, b.last - b.first + 1).slice(-1);
    if (!gone.endsWith("\n") && b.first > 0) lines[b.first - 1] = lines[b.first - 1].replace(/\r?\n$/, "");
  }
  return lines.join("");
}

/** What to say of `[[hooks]]` entries with keys Kimi rejects (one makes Kimi drop every hook), each with its fix. */
export function invalidHookKeys(doc: Record<string, unknown>): string[] {
  return hooksOf(doc).flatMap((h) => {
    const bad = Object.keys(h.value).filter((k) => !ALLOWED_HOOK_KEYS.includes(k));
    return bad.length
      ? [
        `hooks[${h.index}] has ${bad.map((k) => `"${k}"`).join(", ")} (Kimi allows only ${
          ALLOWED_HOOK_KEYS.join(", ")
        }), so Kimi ignores every [[hooks]] entry: a setting written after a [[hooks]] table belongs to it ` +
        "(move it above, or under its own [table] header); any other key, remove",
      ]
      : [];
  });
}

/** Plans uninstall: our blocks out (OpenViking's stays), refused when the rest would read differently. */
export function planConfigUninstall(current: string | undefined): EditPlan {
  if (current === undefined) return { ok: true, after: undefined, changed: false, warnings: [] };
  const before = parseToml(current);
  if (!before.ok) {
    return {
      ok: false,
      error: `config.toml does not parse (${before.error}). Fix the file (\`kimi doctor config\` shows the ` +
        "problem, or restore config.toml.bak) and run again; nothing was changed.",
    };
  }
  const found = findBlocks(current);
  if (!found.ok) return { ok: false, error: `${found.error}. Remove the stray marker line and run again.` };
  const ours = found.blocks.filter((b) => b.owner === "ours");
  const warnings = found.blocks.filter((b) => b.owner === "upstream").map(() =>
    "config.toml has a block written by OpenViking's own Kimi plugin installer; it was left in place " +
    "(remove it with OpenViking's `install.sh --harness kimicode --uninstall --yes`)."
  );
  if (ours.length === 0) return { ok: true, after: current, changed: false, warnings };
  const after = withoutBlocks(current, ours);
  const { hooks, ...rest } = before.value;
  const kept = Array.isArray(hooks) ? [...hooks] : [];
  for (const e of ours.flatMap((b) => b.entries)) {
    const i = kept.findIndex((h) => deepEqual(h, e.value));
    if (i >= 0) kept.splice(i, 1);
  }
  const expected = !Array.isArray(hooks) ? before.value : kept.length ? { ...rest, hooks: kept } : rest;
  const parsed = parseToml(after);
  if (!parsed.ok || !deepEqual(parsed.value, expected)) {
    return {
      ok: false,
      error: `taking out the openviking block (config.toml ${
        ours.map((b) => `lines ${b.first + 1}–${b.last + 1}`).join(", ")
      }) would change what TOML reads of the rest: settings written after a [[hooks]] table belong to it. ` +
        "Move them above the block or under their own [table] header, then run again; nothing was changed.",
    };
  }
  const lines = linesOf(current);
  const created = ours.some((b) => lines.slice(b.first, b.last).some((l) => l.trim() === CREATED_LINE));
  return { ok: true, after: after === "" && created ? undefined : after, changed: true, warnings };
}
