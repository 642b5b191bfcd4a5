/**
 * Pure text splicing of our marked block in Kimi's config.toml, plus the proof that a splice keeps the
 * meaning of every key the user wrote.
 *
 * Placement: a new block goes at the very end of the file, so no key of the user's can ever follow one of
 * our `[[hooks]]` headers (TOML would read such a key as part of our table). A block that is already there is
 * replaced in place. The file's trailing-newline state is kept: a file that ended without a newline gets
 * `<newline><block>` (block last, no newline after it); otherwise `<block><newline>`. Removal undoes exactly
 * that, so install → uninstall gives back the same bytes. Every result is parsed with smol-toml and compared
 * with the user's own document before anyone writes it.
 */

import { parse } from "smol-toml";
import {
  ALLOWED_HOOK_KEYS,
  BLOCK_BEGIN,
  BLOCK_END,
  type HookEntry,
  isOurHookCommand,
  isUpstreamHookCommand,
} from "./spec.ts";
import { VERSION } from "../runtime/version.ts";
import { isRecord } from "../runtime/record.ts";

/** A line ending. */
export type Eol = "\n" | "\r\n";

/** A marked block found in the text: `[start, end)` covers the begin marker line through the end marker (no EOL). */
export interface BlockRange {
  start: number;
  end: number;
  /** The text of the block, markers included. */
  text: string;
}

/** Outcome of parsing TOML. */
export type ParseResult = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** Parses TOML with smol-toml without throwing. */
export function parseToml(text: string): ParseResult {
  try {
    return { ok: true, value: parse(text) as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: (error as Error).message.split("\n")[0] };
  }
}

/** The file's line ending: CRLF if its first line ends so, else LF. */
export function detectEol(text: string): Eol {
  const i = text.indexOf("\n");
  return i > 0 && text[i - 1] === "\r" ? "\r\n" : "\n";
}

/** A TOML basic string. */
export function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** The comment line that records that install created config.toml (so uninstall deletes it again). */
export const CREATED_LINE =
  "# openviking-kimi created this file: uninstall deletes it when nothing else is left.";

/** Renders our block (markers included, no trailing line ending). */
export function renderBlock(entries: readonly HookEntry[], eol: Eol, createdFile = false): string {
  const lines = [
    BLOCK_BEGIN,
    `# Written by openviking-kimi ${VERSION}; \`openviking-kimi uninstall\` removes it. Edits inside are replaced.`,
    ...(createdFile ? [CREATED_LINE] : []),
  ];
  for (const e of entries) {
    lines.push("[[hooks]]", `event = ${tomlString(e.event)}`);
    if (e.matcher !== undefined) lines.push(`matcher = ${tomlString(e.matcher)}`);
    lines.push(`command = ${tomlString(e.command)}`, `timeout = ${e.timeout}`);
  }
  lines.push(BLOCK_END);
  return lines.join(eol);
}

function isMarker(line: string, marker: string): boolean {
  return line.replace(/\r$/, "").trim() === marker;
}

/** Finds our marked blocks, or explains why the markers are unusable. */
export function findBlocks(text: string): { blocks: BlockRange[] } | { error: string } {
  const blocks: BlockRange[] = [];
  let open: number | undefined;
  let pos = 0;
  let lineNo = 0;
  while (pos <= text.length) {
    const nl = text.indexOf("\n", pos);
    const lineEnd = nl < 0 ? text.length : nl;
    const line = text.slice(pos, lineEnd);
    const contentEnd = line.endsWith("\r") ? lineEnd - 1 : lineEnd;
    lineNo++;
    if (isMarker(line, BLOCK_BEGIN)) {
      if (open !== undefined) {
        return { error: `config.toml line ${lineNo}: a second "${BLOCK_BEGIN}" before the block was closed` };
      }
      open = pos;
    } else if (isMarker(line, BLOCK_END)) {
      if (open === undefined) {
        return { error: `config.toml line ${lineNo}: "${BLOCK_END}" without a matching begin line` };
      }
      blocks.push({ start: open, end: contentEnd, text: text.slice(open, contentEnd) });
      open = undefined;
    }
    if (nl < 0) break;
    pos = nl + 1;
  }
  if (open !== undefined) return { error: `config.toml: "${BLOCK_BEGIN}" is never closed by "${BLOCK_END}"` };
  return { blocks };
}

/** The exact range a block occupies together with the line ending that install added for it. */
function removalRange(text: string, b: BlockRange): [number, number] {
  if (text.startsWith("\r\n", b.end)) return [b.start, b.end + 2];
  if (text.startsWith("\n", b.end)) return [b.start, b.end + 1];
  if (b.start >= 2 && text.slice(b.start - 2, b.start) === "\r\n") return [b.start - 2, b.end];
  if (b.start >= 1 && text[b.start - 1] === "\n") return [b.start - 1, b.end];
  return [b.start, b.end];
}

/** Removes the given blocks (as install placed them). */
function removeRanges(text: string, blocks: readonly BlockRange[]): string {
  let out = text;
  for (const b of [...blocks].reverse()) {
    const [s, e] = removalRange(out, b);
    out = out.slice(0, s) + out.slice(e);
  }
  return out;
}

/** Removes every marked block; text without blocks is returned unchanged. */
export function removeBlocks(text: string): string {
  const found = findBlocks(text);
  if ("error" in found) throw new Error(found.error);
  return removeRanges(text, found.blocks);
}

/** Puts `block` into `text`: in place of the first existing block (dropping the others), else at the end. */
export function spliceBlock(text: string, block: string): string {
  const found = findBlocks(text);
  if ("error" in found) throw new Error(found.error);
  const [first, ...rest] = found.blocks;
  if (first) {
    const kept = removeRanges(text, rest);
    return kept.slice(0, first.start) + block + kept.slice(first.end);
  }
  const eol = detectEol(text);
  if (text === "" || text.endsWith("\n")) return text + block + eol;
  return text + eol + block;
}

/** Structural equality of parsed TOML values (prototype-agnostic; dates by value). */
export function tomlEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && String(a) === String(b) &&
      Object.is(a.getTime(), b.getTime());
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((x, i) => tomlEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return tomlEqual(ka, kb) && ka.every((k) => tomlEqual(a[k], b[k]));
  }
  return false;
}

/** The document without one occurrence of each given hook entry (`hooks` dropped if that empties it). */
export function withoutHooks(
  doc: Record<string, unknown>,
  entries: readonly unknown[],
): Record<string, unknown> {
  const hooks = doc.hooks;
  if (!Array.isArray(hooks) || entries.length === 0) return doc;
  const rest = [...hooks];
  for (const e of entries) {
    const i = rest.findIndex((h) => tomlEqual(h, e));
    if (i >= 0) rest.splice(i, 1);
  }
  const out: Record<string, unknown> = { ...doc };
  if (rest.length === 0) delete out.hooks;
  else out.hooks = rest;
  return out;
}

/** The first top-level key (or `hooks[i]`) whose value differs, for messages. */
export function firstDifference(a: Record<string, unknown>, b: Record<string, unknown>): string {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  for (const k of keys) {
    if (tomlEqual(a[k], b[k])) continue;
    const x = a[k];
    const y = b[k];
    if (Array.isArray(x) && Array.isArray(y)) {
      const n = Math.max(x.length, y.length);
      for (let i = 0; i < n; i++) if (!tomlEqual(x[i], y[i])) return `${k}[${i}]`;
    }
    if (isRecord(x) && isRecord(y)) return `${k}.${firstDifference(x, y)}`;
    return k;
  }
  return "(none)";
}

/** A hook entry as found in a parsed config. */
export interface FoundHook {
  index: number;
  value: Record<string, unknown>;
  command: string;
}

/** The `[[hooks]]` entries of a parsed config (entries that are not tables are skipped). */
export function hooksOf(doc: Record<string, unknown>): FoundHook[] {
  const hooks = doc.hooks;
  if (!Array.isArray(hooks)) return [];
  return hooks.flatMap((h, index) =>
    isRecord(h) ? [{ index, value: h, command: typeof h.command === "string" ? h.command : "" }] : []
  );
}

/** Messages about `[[hooks]]` entries with keys Kimi rejects (one such key makes Kimi drop every hook). */
export function invalidHookKeys(doc: Record<string, unknown>): string[] {
  return hooksOf(doc).flatMap((h) => {
    const bad = Object.keys(h.value).filter((k) => !ALLOWED_HOOK_KEYS.includes(k));
    return bad.length
      ? [
        `hooks[${h.index}] has ${bad.map((k) => `"${k}"`).join(", ")} (Kimi allows only ${
          ALLOWED_HOOK_KEYS.join(", ")
        }), so Kimi ignores every [[hooks]] entry, ours included; remove ${
          bad.length > 1 ? "those keys" : "that key"
        }`,
      ]
      : [];
  });
}

/** Who wrote a marked block. */
export type BlockOwner = "ours" | "upstream";

/** The hook entries inside a block and who wrote them (OpenViking's Node plugin used the same markers). */
export function blockInfo(block: BlockRange): { owner: BlockOwner; entries: Record<string, unknown>[] } {
  const parsed = parseToml(block.text);
  const entries = parsed.ok ? hooksOf(parsed.value).map((h) => h.value) : [];
  const upstream = entries.some((e) => typeof e.command === "string" && isUpstreamHookCommand(e.command));
  return { owner: upstream ? "upstream" : "ours", entries };
}

/** Result of planning a change to config.toml. */
export type ConfigPlan =
  | {
    ok: true;
    /** The new text (`undefined`: the file should not exist, i.e. it was absent and stays empty). */
    after: string | undefined;
    changed: boolean;
    /** What was found and replaced. */
    replaced: BlockOwner | "none";
    warnings: string[];
  }
  | { ok: false; error: string };

const FIX_PARSE =
  "Fix the file (`kimi doctor config` shows the problem, or restore config.toml.bak) and run again";

/** Plans install: our block with `entries`, placed so that no user key changes meaning. */
export function planConfigInstall(
  current: string | undefined,
  entries: readonly HookEntry[],
  options: { replaceUpstream?: boolean } = {},
): ConfigPlan {
  const before = current ?? "";
  const parsedBefore = parseToml(before);
  if (!parsedBefore.ok) {
    return {
      ok: false,
      error: `config.toml does not parse (${parsedBefore.error}). ${FIX_PARSE}; nothing was changed.`,
    };
  }
  const found = findBlocks(before);
  if ("error" in found) {
    return { ok: false, error: `${found.error}. Remove the stray marker line and run again.` };
  }
  const owners = found.blocks.map((b) => blockInfo(b).owner);
  const replaced: BlockOwner | "none" = owners.includes("upstream")
    ? "upstream"
    : owners.length
    ? "ours"
    : "none";
  if (replaced === "upstream" && !options.replaceUpstream) {
    return {
      ok: false,
      error:
        "config.toml has the block written by OpenViking's own Kimi plugin installer (node …/kimicode-hook.mjs). " +
        "Two memory integrations would capture every turn twice. Either remove it (OpenViking's " +
        "`install.sh --harness kimicode --uninstall --yes`) and run install again, or run install again with " +
        "--yes to let openviking-kimi replace that block.",
    };
  }
  const user = removeRanges(before, found.blocks);
  const parsedUser = parseToml(user);
  if (!parsedUser.ok) {
    return {
      ok: false,
      error:
        `config.toml does not parse without the openviking block (${parsedUser.error}): settings after the ` +
        "block depend on it. Move the block to the end of the file (or delete it) and run again.",
    };
  }
  const strays = hooksOf(parsedUser.value).filter((h) => isOurHookCommand(h.command));
  if (strays.length) {
    return {
      ok: false,
      error: `config.toml has openviking-kimi [[hooks]] outside the marked block (${
        strays.map((h) => `hooks[${h.index}]: ${h.command}`).join("; ")
      }); Kimi may have rewritten the file. Delete those [[hooks]] tables and run install again.`,
    };
  }
  const upstreamOutside = hooksOf(parsedUser.value).filter((h) => isUpstreamHookCommand(h.command));
  if (upstreamOutside.length) {
    return {
      ok: false,
      error: `config.toml has [[hooks]] of OpenViking's own Kimi plugin (${
        upstreamOutside.map((h) => h.command).join("; ")
      }). Two memory integrations would capture every turn twice: delete those [[hooks]] tables (or run ` +
        "OpenViking's `install.sh --harness kimicode --uninstall --yes`) and run install again.",
    };
  }
  const createdFile = current === undefined ||
    found.blocks.some((b) => b.text.split("\n").some((l) => l.replace(/\r$/, "") === CREATED_LINE));
  const after = spliceBlock(before, renderBlock(entries, detectEol(before), createdFile));
  const parsedAfter = parseToml(after);
  if (!parsedAfter.ok) {
    return {
      ok: false,
      error:
        `adding [[hooks]] would make config.toml invalid (${parsedAfter.error}); "hooks" must be an array ` +
        "of tables ([[hooks]]) for Kimi Code. Fix that key and run again; nothing was changed.",
    };
  }
  const stripped = withoutHooks(parsedAfter.value, entries as unknown as Record<string, unknown>[]);
  if (!tomlEqual(stripped, parsedUser.value)) {
    return {
      ok: false,
      error: `installing would change the meaning of "${firstDifference(stripped, parsedUser.value)}" in ` +
        "config.toml (settings after the openviking block would belong to its last [[hooks]] table). Move " +
        "those settings above the block or under their own [table] header, then run again; nothing was changed.",
    };
  }
  return {
    ok: true,
    after,
    changed: after !== before,
    replaced,
    warnings: invalidHookKeys(parsedAfter.value),
  };
}

/** Plans uninstall: removes our block (an upstream block only with `removeUpstream`). */
export function planConfigUninstall(
  current: string | undefined,
  options: { removeUpstream?: boolean } = {},
): ConfigPlan {
  if (current === undefined) {
    return { ok: true, after: undefined, changed: false, replaced: "none", warnings: [] };
  }
  const parsedBefore = parseToml(current);
  if (!parsedBefore.ok) {
    return {
      ok: false,
      error: `config.toml does not parse (${parsedBefore.error}). ${FIX_PARSE}; nothing was changed.`,
    };
  }
  const found = findBlocks(current);
  if ("error" in found) {
    return { ok: false, error: `${found.error}. Remove the stray marker line and run again.` };
  }
  const infos = found.blocks.map((b) => ({ block: b, ...blockInfo(b) }));
  const removable = infos.filter((i) => i.owner === "ours" || options.removeUpstream);
  const warnings = infos.filter((i) => i.owner === "upstream" && !options.removeUpstream).map(() =>
    "config.toml has a block written by OpenViking's own Kimi plugin installer; it was left in place " +
    "(remove it with OpenViking's `install.sh --harness kimicode --uninstall --yes`)."
  );
  if (removable.length === 0) return { ok: true, after: current, changed: false, replaced: "none", warnings };
  const after = removeRanges(current, removable.map((i) => i.block));
  const parsedAfter = parseToml(after);
  const expected = withoutHooks(parsedBefore.value, removable.flatMap((i) => i.entries));
  if (!parsedAfter.ok || !tomlEqual(parsedAfter.value, expected)) {
    return {
      ok: false,
      error:
        "removing the openviking block would change the meaning of settings written after it (TOML reads " +
        "them as part of its last [[hooks]] table). Move those settings above the block or under their own " +
        "[table] header, then run uninstall again; nothing was changed.",
    };
  }
  const replaced = removable.some((i) => i.owner === "upstream") ? "upstream" : "ours";
  return {
    ok: true,
    after: after === "" && removable.some((i) => i.block.text.includes(CREATED_LINE)) ? undefined : after,
    changed: true,
    replaced,
    warnings,
  };
}
