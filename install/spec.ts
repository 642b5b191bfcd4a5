/**
 * What openviking-kimi registers in Kimi Code (names, hook entries, the plugin's manifest and memory files), how to
 * tell whose a registration is, how this process runs, and where the program and the PATH command go.
 */

import * as z from "zod/mini";
import { HOOKS } from "../kimi/hooks.ts";
import { isRecord } from "../lib/parsed.ts";
import type { TreeFile } from "./transaction.ts";
import { sha256Hex } from "../lib/hash.ts";
import { commandDir, type Env, integrationDir, isAbsolutePath, joinPath, orNoHome } from "../lib/paths.ts";
import { checkoutRoot, copyDir, isCompiled } from "../lib/self.ts";
import { VERSION } from "../lib/version.ts";
import { PLUGIN_TEXTS, SYSTEM_PROMPT_FILE } from "../memory/system-prompt.ts";

/** Plugin id (OpenViking's own Kimi plugin has it too, so the two are never enabled side by side). */
export const PLUGIN_ID = "openviking-memory";
/** Key of our server in `mcp.json` and in the manifest's `mcpServers`. */
export const MCP_SERVER_NAME = "openviking";
export const BLOCK_BEGIN = "# >>> openviking kimicode integration";
export const BLOCK_END = "# <<< openviking kimicode integration";
export const EXECUTABLE_NAME = "openviking-kimi";
/** Why not, in words that say what to do. */
export type Refusal = { ok: false; error: string };
/** `T`, or why not. */
export type Result<T> = ({ ok: true } & T) | Refusal;
/** A planned text of one file (`after` undefined: the file goes, or stays absent) and whether it changes. */
export type Edit<T = unknown> = Result<{ after: string | undefined; changed: boolean } & T>;
/** A planned edit of one of Kimi's files, and what to warn of. */
export type EditPlan = Edit<{ warnings: string[] }>;

/** The keys Kimi accepts in a `[[hooks]]` entry; one more key makes Kimi drop every hook. */
export const ALLOWED_HOOK_KEYS: readonly string[] = ["event", "matcher", "command", "timeout"];

/** A `[[hooks]]` entry or manifest hook, exactly the keys Kimi allows. */
export type HookEntry = { event: string; matcher?: string; command: string; timeout: number };

/** The hook entries running `<prefix> hook <event>`. */
export function hookEntries(prefix: string): HookEntry[] {
  return HOOKS.map((h) => ({
    event: h.event,
    ...("matcher" in h ? { matcher: h.matcher } : {}),
    command: `${prefix} hook ${h.cli}`,
    timeout: h.timeout,
  }));
}

const OUR_HOOK = new RegExp(
  `openviking-kimi(?:\\.exe|\\.cmd)?['"]?\\s+hook\\s+(?:${HOOKS.map((h) => h.cli).join("|")})\\s*$`,
);

/** Whether a hook command is ours: `… openviking-kimi[.exe|.cmd] hook <event>`. */
export function isOurHookCommand(command: string): boolean {
  return OUR_HOOK.test(command);
}

/** Whether a hook command belongs to OpenViking's own (Node) Kimi plugin. */
export function isUpstreamHookCommand(command: string): boolean {
  return /kimicode-hook\.mjs|uri-guard\.mjs|agent-integrations[\\/]kimicode[\\/]scripts[\\/]hook\.mjs/.test(
    command,
  );
}

const EntrySchema = z.looseObject({
  command: z.optional(z.string()),
  args: z.optional(z.array(z.string())),
  env: z.optional(z.record(z.string(), z.unknown())),
});

/** Who wrote an `mcpServers.openviking` entry: us (`openviking-kimi mcp`), OpenViking's Node proxy, someone else, or none. */
export function classifyMcpEntry(entry: unknown): "ours" | "upstream" | "foreign" | "absent" {
  if (entry === undefined) return "absent";
  const parsed = EntrySchema.safeParse(entry);
  if (!parsed.success) return "foreign";
  const { command = "", args = [], env = {} } = parsed.data;
  if (args.some((a) => /mcp-proxy\.mjs$/.test(a)) || "OPENVIKING_INTEGRATION_ID" in env) return "upstream";
  const base = command.split(/[\\/]/).pop() ?? "";
  if (/^openviking-kimi(\.exe|\.cmd)?$/.test(base) && args.length === 1 && args[0] === "mcp") return "ours";
  return "foreign";
}

/** Who a plugin manifest belongs to: us (`bin/openviking-kimi hook …`), OpenViking's Node plugin, or other. */
export function classifyManifest(manifest: unknown): "ours" | "upstream" | "other" {
  if (!isRecord(manifest) || !Array.isArray(manifest.hooks)) return "other";
  const commands = manifest.hooks.flatMap((h) =>
    isRecord(h) && typeof h.command === "string" ? [h.command] : []
  );
  if (commands.some((c) => /bin[\\/]openviking-kimi(\.exe)?\s+hook\s/.test(c))) return "ours";
  if (commands.some((c) => /\.mjs\b/.test(c))) return "upstream";
  return manifest.name === PLUGIN_ID ? "upstream" : "other";
}

/** The operating-system family that decides file names and command quoting. */
export type OsFamily = "posix" | "windows";

/** How this program is being run: the compiled binary, a checkout, or an installed copy. */
export type Self =
  | { kind: "compiled"; execPath: string }
  | { kind: "checkout"; root: string }
  | { kind: "copy"; dir: string };

/** The OS family of this process. */
export const currentOs = (): OsFamily => Deno.build.os === "windows" ? "windows" : "posix";

/** Describes the running program (compiled binary, installed copy or checkout). */
export function currentSelf(): Promise<Self> {
  if (isCompiled()) return Promise.resolve({ kind: "compiled", execPath: Deno.execPath() });
  const copy = copyDir();
  return Promise.resolve(copy ? { kind: "copy", dir: copy } : { kind: "checkout", root: checkoutRoot() });
}

/** The executable's file name on an OS. */
export const executableFileName = (os: OsFamily): string =>
  os === "windows" ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;

/** Where the compiled executable is kept for the PATH command. */
export const installedBinaryPath = (env: Env, os: OsFamily): string =>
  joinPath(integrationDir(env), "bin", executableFileName(os));

/**
 * The launcher the PATH command links to when what runs is a program copy: the copy's own launcher text, kept
 * outside `versions/` so the command still says what to run when the copies are gone.
 */
export function commandLauncherPath(env: Env): string {
  return joinPath(integrationDir(env), "command", EXECUTABLE_NAME);
}

/** Where install links the `openviking-kimi` the shell finds; none on Windows or without a home. */
export function pathCommand(env: Env, os: OsFamily): string | undefined {
  if (os === "windows") return undefined;
  const dir = orNoHome(() => commandDir(env));
  return dir && joinPath(dir, EXECUTABLE_NAME);
}

type CommandAt = { kind: "absent" } | { kind: "ours"; target: string } | { kind: "other" };

/** What is at `path`: our link is a symlink into our integration directory (whether or not it dangles). */
export async function commandAt(path: string, env: Env): Promise<CommandAt> {
  const info = await Deno.lstat(path).catch(() => undefined);
  if (!info) return { kind: "absent" };
  const target = info.isSymlink ? await Deno.readLink(path).catch(() => "") : "";
  const ours = isAbsolutePath(target) && target.startsWith(`${integrationDir(env)}/`);
  return ours ? { kind: "ours", target } : { kind: "other" };
}

/** Whether two files hold the same bytes (a binary installed again from its download: nothing to copy). */
export async function sameBytes(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([a, b].map((p) => Deno.stat(p).catch(() => undefined)));
  if (!sa?.isFile || !sb?.isFile || sa.size !== sb.size) return false;
  const [ha, hb] = await Promise.all([a, b].map(async (p) => sha256Hex(await Deno.readFile(p))));
  return ha === hb;
}

/** The manifest for a plugin whose executable is `bin/openviking-kimi[.exe]` under the plugin root. */
export function renderManifest(os: OsFamily) {
  const exe = executableFileName(os);
  return {
    name: PLUGIN_ID,
    version: VERSION,
    description:
      "Long-term memory for Kimi Code CLI, backed by OpenViking: relevant memories before each prompt, " +
      "every finished turn captured, and viking:// tools over MCP.",
    keywords: ["memory", "openviking", "mcp", "hooks"],
    interface: {
      displayName: "OpenViking Memory",
      shortDescription: "Recall and capture long-term memory through OpenViking",
    },
    hooks: hookEntries(os === "windows" ? `.\\bin\\${exe}` : `./bin/${exe}`),
    mcpServers: { [MCP_SERVER_NAME]: { command: `./bin/${exe}`, args: ["mcp"] } },
    systemPromptPath: `./${SYSTEM_PROMPT_FILE}`,
    skills: "./skills",
    commands: "./commands",
  };
}

/** The manifest's text (2-space JSON, final newline), as committed at the repository root. */
export const manifestText = (os: OsFamily): string => `${JSON.stringify(renderManifest(os), null, 2)}\n`;

/** The memory files of the plugin directory, as install places them (the profile is filled in after). */
export function pluginMemoryFiles(): TreeFile[] {
  return PLUGIN_TEXTS.map(([path, content]) => ({ path, content, mode: 0o600 }));
}
