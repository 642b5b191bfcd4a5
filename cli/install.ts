/**
 * `openviking-kimi install` / `uninstall`: the parsed flags handed to the run (install/install.ts). The API key is taken here, at the edge: stdin, the environment, or a hidden prompt.
 */

import { defaultContext, fail } from "../install/transaction.ts";
import { runInstall, runUninstall } from "../install/install.ts";
import { askHiddenOnTerminal, chooseApiKey } from "../install/ovcli.ts";

/** Flags of `openviking-kimi install`, as cli/commands.ts parses them. */
export interface InstallFlags {
  mode: "config" | "plugin";
  kimiHome: string | undefined;
  url: string | undefined;
  apiKey: string | undefined;
  apiKeyStdin: boolean;
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
  const { url, apiKey, apiKeyStdin, account, user, ...rest } = flags;
  const ctx = await defaultContext();
  const key = await chooseApiKey({ apiKey, apiKeyStdin, url, dryRun: flags.dryRun }, {
    env: ctx.env,
    stdinIsTerminal: () => Deno.stdin.isTerminal(),
    readStdin: () => new Response(Deno.stdin.readable).bytes(),
    askHidden: askHiddenOnTerminal,
    warn: (line) => ctx.out.error(line),
  });
  if (!key.ok) return fail(ctx.out, "install", key.error);
  return await runInstall(ctx, {
    ...rest,
    credentials: { url, apiKey: key.apiKey, apiKeyFrom: key.from, account, user },
    purge: false,
  });
}

/** `openviking-kimi uninstall …` */
export async function uninstallCommand(flags: UninstallFlags): Promise<number> {
  return await runUninstall(await defaultContext(), { ...flags, credentials: {} });
}
