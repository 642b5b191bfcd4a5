/**
 * `openviking-kimi install` / `uninstall`: the parsed flags (cli/commands.ts parses them) handed to the run
 * (install.ts, uninstall.ts: a planner per mode; run.ts: the plan checked first, so every refusal comes before
 * the first write, printed by `--dry-run`, carried out all or nothing).
 */

import { defaultContext } from "./run.ts";
import { runInstall } from "./install.ts";
import { runUninstall } from "./uninstall.ts";

export type { Context, InstallOptions } from "./run.ts";
export { runInstall } from "./install.ts";
export { runUninstall } from "./uninstall.ts";

/** Flags of `openviking-kimi install`, as cli/commands.ts parses them. */
export interface InstallFlags {
  mode: "config" | "plugin";
  kimiHome: string | undefined;
  url: string | undefined;
  apiKey: string | undefined;
  account: string | undefined;
  user: string | undefined;
  dryRun: boolean;
  yes: boolean;
}

/** Flags of `openviking-kimi uninstall`, as cli/commands.ts parses them (no mode: both). */
export interface UninstallFlags {
  mode: "config" | "plugin" | undefined;
  kimiHome: string | undefined;
  purge: boolean;
  dryRun: boolean;
  yes: boolean;
}

/** `openviking-kimi install …` */
export async function installCommand(flags: InstallFlags): Promise<number> {
  const { url, apiKey, account, user, ...rest } = flags;
  return await runInstall(await defaultContext(), {
    ...rest,
    credentials: { url, apiKey, account, user },
    purge: false,
  });
}

/** `openviking-kimi uninstall …` */
export async function uninstallCommand(flags: UninstallFlags): Promise<number> {
  return await runUninstall(await defaultContext(), { ...flags, credentials: {} });
}
