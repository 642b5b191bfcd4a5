/**
 * A Kimi home registered in config mode, written as an older openviking-kimi (≤ 0.x, before plugin mode became
 * the only install) left it: the marked `[[hooks]]` block at the end of `config.toml`, our `mcp.json` entry and
 * the memory skill in Kimi's user skills. Install takes it out; uninstall removes it; doctor names it.
 */

import { stringify } from "smol-toml";
import { BLOCK_BEGIN, BLOCK_END, hookEntries } from "../../install/spec.ts";

/** The version the written block says made it. */
export const OLDER_VERSION = "0.9.0";

/** The block an older config-mode install appended for `program` (its hook commands run `<program> hook …`). */
export function olderConfigBlock(program: string, eol = "\n", createdFile = false): string {
  const lines = [
    BLOCK_BEGIN,
    `# Written by openviking-kimi ${OLDER_VERSION}; \`openviking-kimi uninstall\` removes it. Edits inside are replaced.`,
    ...(createdFile
      ? ["# openviking-kimi created this file: uninstall deletes it when nothing else is left."]
      : []),
  ];
  for (const e of hookEntries(`'${program}'`)) {
    lines.push("[[hooks]]", ...stringify({ ...e }).trimEnd().split("\n"));
  }
  return [...lines, BLOCK_END].join(eol);
}

/** `config.toml` text `before` (undefined: no file) with the block an older install appended, as it placed it. */
export function withOlderBlock(before: string | undefined, program = DEFAULT_PROGRAM): string {
  const text = before ?? "";
  const eol = /^[^\n]*\r\n/.test(text) ? "\r\n" : "\n";
  const block = olderConfigBlock(program, eol, before === undefined);
  return text === "" || text.endsWith("\n") ? `${text}${block}${eol}` : `${text}${eol}${block}`;
}

/** `mcp.json` text `before` (undefined: no file) with the entry an older install wrote, 2-space JSON. */
export function withOlderMcpEntry(before: string | undefined, program = DEFAULT_PROGRAM): string {
  const json = JSON.parse(before ?? "{}");
  json.mcpServers = { ...json.mcpServers, openviking: { command: program, args: ["mcp"] } };
  return `${JSON.stringify(json, null, 2)}\n`;
}

const DEFAULT_PROGRAM = "/opt/openviking-kimi/bin/openviking-kimi";

/**
 * Registers `program` in config mode in Kimi home `kimi` as an older install did (the user's `config.toml`, and
 * `mcp.json` when there, kept around our part); returns what it wrote.
 */
export async function writeConfigModeHome(
  kimi: string,
  program = DEFAULT_PROGRAM,
): Promise<{ config: string; mcp: string; skill: string }> {
  await Deno.mkdir(`${kimi}/skills/openviking-memory`, { recursive: true });
  const config = withOlderBlock(
    await Deno.readTextFile(`${kimi}/config.toml`).catch(() => undefined),
    program,
  );
  await Deno.writeTextFile(`${kimi}/config.toml`, config);
  const mcp = withOlderMcpEntry(await Deno.readTextFile(`${kimi}/mcp.json`).catch(() => undefined), program);
  await Deno.writeTextFile(`${kimi}/mcp.json`, mcp);
  const skill = await Deno.readTextFile(new URL("../../skills/openviking-memory/SKILL.md", import.meta.url));
  await Deno.writeTextFile(`${kimi}/skills/openviking-memory/SKILL.md`, skill);
  return { config, mcp, skill };
}
