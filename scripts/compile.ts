/**
 * `deno task compile [--target T]… [--out DIR]`: builds the standalone executable for every target Deno can
 * compile to, with the permission flags of deno.json's `cli` task (defined once, parsed like runtime/self.ts
 * does), plus the plugin directory of each target (`kimi.plugin.json` + `bin/openviking-kimi[.exe]` + the memory
 * files: `system-prompt.md`, `skills/`, `commands/`) that the
 * release workflow zips.
 *
 * Output: `<out>/openviking-kimi-<target>[.exe]` and `<out>/plugin/<target>/…` (default out: `dist`).
 * `deno compile` downloads its base runtime (denort) from dl.deno.land; without access it fails, and this
 * script says so (set DENORT_BIN to a local denort of the target to build offline).
 */

import { checkoutRoot, flagsFromTask } from "../lib/self.ts";
import { joinPath } from "../lib/paths.ts";
import { EXECUTABLE_NAME, manifestText, pluginMemoryFiles } from "../install/spec.ts";

/** Every target `deno compile --target` accepts (Deno 2.9). */
export const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
  "x86_64-pc-windows-msvc",
  "aarch64-pc-windows-msvc",
] as const;

/** A compile target. */
export type Target = (typeof TARGETS)[number];

/** Whether a target builds a Windows executable. */
export function isWindowsTarget(target: string): boolean {
  return target.includes("windows");
}

/** The file name of a target's executable in the output directory. */
export function artifactName(target: string): string {
  return `${EXECUTABLE_NAME}-${target}${isWindowsTarget(target) ? ".exe" : ""}`;
}

/** The flags the compiled binary gets: the `cli` task's, without `--quiet` (a console flag, not a permission). */
export async function compileFlags(root: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(joinPath(root, "deno.json"))) as {
    tasks?: Record<string, string>;
  };
  if (!config.tasks?.cli) throw new Error(`${root}/deno.json has no "cli" task`);
  return flagsFromTask(config.tasks.cli).filter((f) => f !== "--quiet" && f !== "-q");
}

/** The `deno compile` arguments for one target. */
export function compileArgs(
  flags: readonly string[],
  target: string,
  output: string,
  root: string,
): string[] {
  return [
    "compile",
    ...flags,
    "--target",
    target,
    "--output",
    output,
    "--config",
    joinPath(root, "deno.json"),
    joinPath(root, "main.ts"),
  ];
}

/** Explains a failed compile; recognises the unreachable dl.deno.land download. */
export function explainFailure(target: string, stderr: string): string {
  // deno-lint-ignore no-control-regex
  const plain = stderr.replace(/\u001b\[[0-9;]*m/g, "");
  const cause = plain.split("\n").map((l) => l.trim()).filter((l) => /^\d+:|error:/.test(l)).slice(0, 3).join(
    " / ",
  );
  if (/dl\.deno\.land|Setting up base binary|denort/i.test(plain)) {
    return `deno compile could not get its base runtime (denort) for ${target} from dl.deno.land` +
      `${
        cause ? ` (${cause})` : ""
      }. This machine cannot reach dl.deno.land: build where it can (the release ` +
      "workflow on a tag does), or set DENORT_BIN to a denort binary of that target and run again.";
  }
  return `deno compile failed for ${target}${cause ? `: ${cause}` : ""}`;
}

function parseArgs(args: string[]): { targets: string[]; out: string } {
  const targets: string[] = [];
  let out = "dist";
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--target") targets.push(args[++i] ?? "");
    else if (args[i] === "--out") out = args[++i] ?? out;
    else {throw new Error(
        `unknown argument "${args[i]}" (usage: deno task compile [--target T]… [--out DIR])`,
      );}
  }
  for (const t of targets) {
    if (!(TARGETS as readonly string[]).includes(t)) {
      throw new Error(`unknown target "${t}"; known: ${TARGETS.join(", ")}`);
    }
  }
  return { targets: targets.length ? targets : [...TARGETS], out };
}

/** Builds one target and its plugin directory; returns an error message or undefined. */
async function build(
  target: string,
  flags: string[],
  root: string,
  out: string,
): Promise<string | undefined> {
  const exe = joinPath(out, artifactName(target));
  console.error(`compile ${target} → ${exe}`);
  const result = await new Deno.Command(Deno.execPath(), {
    args: compileArgs(flags, target, exe, root),
    stdout: "inherit",
    stderr: "piped",
    stdin: "null",
  }).output();
  if (!result.success) return explainFailure(target, new TextDecoder().decode(result.stderr));
  const pluginDir = joinPath(out, "plugin", target);
  const binName = isWindowsTarget(target) ? `${EXECUTABLE_NAME}.exe` : EXECUTABLE_NAME;
  await Deno.remove(pluginDir, { recursive: true }).catch(() => {});
  await Deno.mkdir(joinPath(pluginDir, "bin"), { recursive: true });
  await Deno.writeTextFile(
    joinPath(pluginDir, "kimi.plugin.json"),
    manifestText(isWindowsTarget(target) ? "windows" : "posix"),
  );
  await Deno.copyFile(exe, joinPath(pluginDir, "bin", binName));
  if (Deno.build.os !== "windows") await Deno.chmod(joinPath(pluginDir, "bin", binName), 0o755);
  await writeMemoryFiles(pluginDir);
  return undefined;
}

/** The plugin's memory files (system prompt, skill, commands) under `pluginDir`, as install places them. */
async function writeMemoryFiles(pluginDir: string): Promise<void> {
  for (const f of pluginMemoryFiles()) {
    const path = joinPath(pluginDir, f.path);
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    if (typeof f.content === "string") await Deno.writeTextFile(path, f.content, { mode: f.mode });
  }
}

/** Runs the build; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed: { targets: string[]; out: string };
  try {
    parsed = parseArgs(args);
  } catch (error) {
    console.error(`compile: ${(error as Error).message}`);
    return 2;
  }
  const root = checkoutRoot();
  const out = parsed.out.startsWith("/") ? parsed.out : joinPath(root, parsed.out);
  const flags = await compileFlags(root);
  console.error(`permission flags (from deno.json's cli task): ${flags.join(" ")}`);
  await Deno.mkdir(out, { recursive: true });
  const failures: string[] = [];
  for (const target of parsed.targets) {
    const failure = await build(target, flags, root, out);
    if (failure) {
      console.error(`compile: ${failure}`);
      failures.push(target);
      // Without dl.deno.land no other target can build either; stop at the first such failure.
      if (/dl\.deno\.land/.test(failure)) break;
    }
  }
  if (failures.length) {
    console.error(
      `compile: FAILED (${failures.join(", ")}); nothing usable was produced for ${
        failures.length === 1 ? "it" : "them"
      }.`,
    );
    return 1;
  }
  console.error(`compile: built ${parsed.targets.length} target(s) into ${out}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
