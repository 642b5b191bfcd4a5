/**
 * `openviking-kimi install` / `uninstall`: argument parsing, then the run (install.ts, uninstall.ts: a
 * planner per mode; run.ts: the plan checked first, so every refusal comes before the first write, printed
 * by `--dry-run`, carried out all or nothing).
 */

import * as z from "zod/mini";
import type { InstallOptions } from "./run.ts";
import { defaultContext } from "./run.ts";
import { runInstall } from "./install.ts";
import { runUninstall } from "./uninstall.ts";

export type { Context, InstallOptions, Output } from "./run.ts";
export { runInstall } from "./install.ts";
export { runUninstall } from "./uninstall.ts";

const VALUE_FLAGS = ["--mode", "--kimi-home", "--url", "--api-key", "--account", "--user"] as const;
const BOOL_FLAGS = ["--dry-run", "--yes", "--purge", "-y"] as const;
const ModeSchema = z.enum(["config", "plugin"]);

/** Parses `args`; `allowed` lists the flags the command accepts. */
export function parseInstallArgs(
  args: readonly string[],
  allowed: readonly string[],
): { ok: true; options: InstallOptions } | { ok: false; error: string } {
  const values: Record<string, string> = {};
  const bools = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (!allowed.includes(name)) return { ok: false, error: `unknown option "${name}"` };
    if ((VALUE_FLAGS as readonly string[]).includes(name)) {
      const value = eq > 0 && arg.startsWith("--") ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) return { ok: false, error: `${name} needs a value` };
      values[name] = value;
    } else if ((BOOL_FLAGS as readonly string[]).includes(name)) bools.add(name === "-y" ? "--yes" : name);
    else return { ok: false, error: `unknown option "${name}"` };
  }
  let mode: "config" | "plugin" | undefined;
  if (values["--mode"] !== undefined) {
    const parsed = ModeSchema.safeParse(values["--mode"]);
    if (!parsed.success) {
      return { ok: false, error: `--mode must be "config" or "plugin", not "${values["--mode"]}"` };
    }
    mode = parsed.data;
  }
  return {
    ok: true,
    options: {
      mode,
      kimiHome: values["--kimi-home"],
      credentials: {
        url: values["--url"],
        apiKey: values["--api-key"],
        account: values["--account"],
        user: values["--user"],
      },
      dryRun: bools.has("--dry-run"),
      yes: bools.has("--yes"),
      purge: bools.has("--purge"),
    },
  };
}

const INSTALL_USAGE = "usage: openviking-kimi install [--mode config|plugin] [--kimi-home DIR] [--url URL] " +
  "[--api-key KEY] [--account A] [--user U] [--dry-run] [--yes]";
const UNINSTALL_USAGE =
  "usage: openviking-kimi uninstall [--mode config|plugin] [--kimi-home DIR] [--purge] [--yes]";

/** `openviking-kimi install …` */
export async function installCommand(args: string[]): Promise<number> {
  const parsed = parseInstallArgs(args, [
    ...VALUE_FLAGS,
    "--dry-run",
    "--yes",
    "-y",
  ]);
  if (!parsed.ok) {
    console.error(`openviking-kimi install: ${parsed.error}\n${INSTALL_USAGE}`);
    return 2;
  }
  return await runInstall(await defaultContext(), parsed.options);
}

/** `openviking-kimi uninstall …` */
export async function uninstallCommand(args: string[]): Promise<number> {
  const parsed = parseInstallArgs(args, ["--mode", "--kimi-home", "--purge", "--yes", "-y", "--dry-run"]);
  if (!parsed.ok) {
    console.error(`openviking-kimi uninstall: ${parsed.error}\n${UNINSTALL_USAGE}`);
    return 2;
  }
  return await runUninstall(await defaultContext(), parsed.options);
}
