/**
 * What config.toml means, and the plans of our block in it: a splice is kept only when the document without
 * our hook entries parses to exactly the user's own document (every key the user wrote keeps its meaning),
 * an existing block of OpenViking's own plugin is replaced only when asked, and hooks of ours or of
 * OpenViking's plugin outside a block are refused (they would run twice). Pure.
 */

import { deepEqual, isRecord } from "../lib/parsed.ts";
import { ALLOWED_HOOK_KEYS, type HookEntry, isOurHookCommand, isUpstreamHookCommand } from "./spec.ts";
import {
  type BlockRange,
  CREATED_LINE,
  detectEol,
  findBlocks,
  parseToml,
  removeRanges,
  renderBlock,
  spliceBlock,
} from "./toml-block.ts";

/** The document without one occurrence of each given hook entry (`hooks` dropped if that empties it). */
export function withoutHooks(
  doc: Record<string, unknown>,
  entries: readonly unknown[],
): Record<string, unknown> {
  const hooks = doc.hooks;
  if (!Array.isArray(hooks) || entries.length === 0) return doc;
  const rest = [...hooks];
  for (const e of entries) {
    const i = rest.findIndex((h) => deepEqual(h, e));
    if (i >= 0) rest.splice(i, 1);
  }
  const out: Record<string, unknown> = { ...doc };
  if (rest.length === 0) delete out.hooks;
  else out.hooks = rest;
  return out;
}

/** The first top-level key (or `hooks[i]`) whose value differs, for messages. */
function firstDifference(a: Record<string, unknown>, b: Record<string, unknown>): string {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  for (const k of keys) {
    if (deepEqual(a[k], b[k])) continue;
    const x = a[k];
    const y = b[k];
    if (Array.isArray(x) && Array.isArray(y)) {
      const n = Math.max(x.length, y.length);
      for (let i = 0; i < n; i++) if (!deepEqual(x[i], y[i])) return `${k}[${i}]`;
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

/**
 * What to do with settings written after our block, which TOML reads as part of its last `[[hooks]]` table:
 * the one advice install, uninstall and doctor give (the settings are the user's: never "remove them").
 */
export const SETTINGS_AFTER_BLOCK =
  "move the settings written after the openviking block above it, or under their own [table] header";

/**
 * Messages about `[[hooks]]` entries with keys Kimi rejects (one such key makes Kimi drop every hook), each
 * with its fix: a key in one of ours is a setting written after our block; one in the user's table is removed.
 */
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

/** config.toml as a plan starts from: its document and our marked blocks, or why it cannot be changed. */
function loadConfig(
  text: string,
): { ok: true; doc: Record<string, unknown>; blocks: BlockRange[] } | { ok: false; error: string } {
  const parsed = parseToml(text);
  if (!parsed.ok) {
    return {
      ok: false,
      error: `config.toml does not parse (${parsed.error}). ${FIX_PARSE}; nothing was changed.`,
    };
  }
  const found = findBlocks(text);
  if ("error" in found) {
    return { ok: false, error: `${found.error}. Remove the stray marker line and run again.` };
  }
  return { ok: true, doc: parsed.value, blocks: found.blocks };
}

const UPSTREAM_BLOCK =
  "config.toml has the block written by OpenViking's own Kimi plugin installer (node …/kimicode-hook.mjs). " +
  "Two memory integrations would capture every turn twice. Either remove it (OpenViking's " +
  "`install.sh --harness kimicode --uninstall --yes`) and run install again, or run install again with " +
  "--yes to let openviking-kimi replace that block.";

/** Why hook entries outside any block stand in the way (ours, or OpenViking's plugin's), or "". */
function hooksOutsideProblem(user: Record<string, unknown>): string {
  const hooks = hooksOf(user);
  return outsideHooksProblem(
    hooks.filter((h) => isOurHookCommand(h.command)),
    hooks.filter((h) => isUpstreamHookCommand(h.command)),
  );
}

/**
 * Why [[hooks]] outside any block stand in the way of either mode, or "": ours (Kimi may have rewritten the
 * file) or OpenViking's own plugin's — with ours beside them every turn would be captured twice. `--yes`
 * replaces blocks, never loose tables: the user deletes them.
 */
export function outsideHooksProblem(strays: FoundHook[], upstream: FoundHook[]): string {
  if (strays.length) {
    return `config.toml has openviking-kimi [[hooks]] outside the marked block (${
      strays.map((h) => `hooks[${h.index}]: ${h.command}`).join("; ")
    }); Kimi may have rewritten the file. Delete those [[hooks]] tables and run install again.`;
  }
  if (upstream.length) {
    return `config.toml has [[hooks]] of OpenViking's own Kimi plugin (${
      upstream.map((h) => h.command).join("; ")
    }). Two memory integrations would capture every turn twice: delete those [[hooks]] tables (or run ` +
      "OpenViking's `install.sh --harness kimicode --uninstall --yes`) and run install again.";
  }
  return "";
}

/** `after` (the user's text with our block) parsed, or why it changes what the user wrote. */
function checkMeaning(
  after: string,
  entries: readonly HookEntry[],
  user: Record<string, unknown>,
): { ok: true; doc: Record<string, unknown> } | { ok: false; error: string } {
  const parsedAfter = parseToml(after);
  if (!parsedAfter.ok) {
    return {
      ok: false,
      error: `adding [[hooks]] would make config.toml invalid (${parsedAfter.error}); "hooks" must be an ` +
        "array of tables ([[hooks]]) for Kimi Code. Fix that key and run again; nothing was changed.",
    };
  }
  const stripped = withoutHooks(parsedAfter.value, entries);
  if (deepEqual(stripped, user)) return { ok: true, doc: parsedAfter.value };
  return {
    ok: false,
    error: `installing would change the meaning of "${firstDifference(stripped, user)}" in ` +
      "config.toml (settings after the openviking block would belong to its last [[hooks]] table): " +
      `${SETTINGS_AFTER_BLOCK}, then run again; nothing was changed.`,
  };
}

/** Plans install: our block with `entries`, placed so that no user key changes meaning. */
export function planConfigInstall(
  current: string | undefined,
  entries: readonly HookEntry[],
  options: { replaceUpstream?: boolean } = {},
): ConfigPlan {
  const before = current ?? "";
  const loaded = loadConfig(before);
  if (!loaded.ok) return loaded;
  const owners = loaded.blocks.map((b) => blockInfo(b).owner);
  const replaced = owners.includes("upstream") ? "upstream" : owners.length ? "ours" : "none";
  if (replaced === "upstream" && !options.replaceUpstream) return { ok: false, error: UPSTREAM_BLOCK };
  const parsedUser = parseToml(removeRanges(before, loaded.blocks));
  if (!parsedUser.ok) {
    return {
      ok: false,
      error:
        `config.toml does not parse without the openviking block (${parsedUser.error}): settings after the ` +
        "block depend on it. Move the block to the end of the file (or delete it) and run again.",
    };
  }
  const outside = hooksOutsideProblem(parsedUser.value);
  if (outside) return { ok: false, error: outside };
  const createdFile = current === undefined ||
    loaded.blocks.some((b) => b.text.split("\n").some((l) => l.replace(/\r$/, "") === CREATED_LINE));
  const after = spliceBlock(before, renderBlock(entries, detectEol(before), createdFile));
  const checked = checkMeaning(after, entries, parsedUser.value);
  if (!checked.ok) return checked;
  return { ok: true, after, changed: after !== before, replaced, warnings: invalidHookKeys(checked.doc) };
}

/** Plans uninstall: removes our block (an upstream block only with `removeUpstream`). */
export function planConfigUninstall(
  current: string | undefined,
  options: { removeUpstream?: boolean } = {},
): ConfigPlan {
  if (current === undefined) {
    return { ok: true, after: undefined, changed: false, replaced: "none", warnings: [] };
  }
  const loaded = loadConfig(current);
  if (!loaded.ok) return loaded;
  const infos = loaded.blocks.map((b) => ({ block: b, ...blockInfo(b) }));
  const removable = infos.filter((i) => i.owner === "ours" || options.removeUpstream);
  const warnings = infos.filter((i) => i.owner === "upstream" && !options.removeUpstream).map(() =>
    "config.toml has a block written by OpenViking's own Kimi plugin installer; it was left in place " +
    "(remove it with OpenViking's `install.sh --harness kimicode --uninstall --yes`)."
  );
  if (removable.length === 0) return { ok: true, after: current, changed: false, replaced: "none", warnings };
  const after = removeRanges(current, removable.map((i) => i.block));
  const parsedAfter = parseToml(after);
  const expected = withoutHooks(loaded.doc, removable.flatMap((i) => i.entries));
  if (!parsedAfter.ok || !deepEqual(parsedAfter.value, expected)) {
    return {
      ok: false,
      error: "removing the openviking block would change the meaning of settings written after it (TOML " +
        `reads them as part of its last [[hooks]] table): ${SETTINGS_AFTER_BLOCK}, then run uninstall again; ` +
        "nothing was changed.",
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
