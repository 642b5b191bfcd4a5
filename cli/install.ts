/** `openviking-kimi install` / `uninstall`: the parsed flags handed to the run; the API key taken here, at the edge. */

import { defaultContext, fail, type InstallOptions } from "../install/transaction.ts";
import { runInstall, runUninstall } from "../install/install.ts";
import { askHiddenOnTerminal, chooseApiKey, type CredentialArgs, serverNeedsKey } from "../install/ovcli.ts";

/** Flags of `openviking-kimi install`, as cli/mod.ts parses them. */
export type InstallFlags =
  & Omit<InstallOptions, "credentials" | "purge">
  & Omit<CredentialArgs, "apiKeyFrom">
  & { apiKeyStdin: boolean; mode: string };

/** What `install --mode config` says: the mode is gone, and plain `install` moves such a home to the plugin. */
export const CONFIG_MODE_GONE =
  "openviking-kimi install: config mode is gone; `install` installs the plugin and moves a config-mode home to it.";

/** `openviking-kimi install …`: the plugin (a config-mode registration taken out); `--mode config` exits 2. */
export async function installCommand(flags: InstallFlags): Promise<number> {
  const { url, apiKey, apiKeyStdin, account, user, mode, ...rest } = flags;
  const ctx = await defaultContext();
  if (mode === "config") {
    ctx.out.error(CONFIG_MODE_GONE);
    return 2;
  }
  const key = await chooseApiKey({ apiKey, apiKeyStdin, url, dryRun: flags.dryRun }, {
    env: ctx.env,
    stdinIsTerminal: () => Deno.stdin.isTerminal(),
    readStdin: () => new Response(Deno.stdin.readable).bytes(),
    askHidden: askHiddenOnTerminal,
    needsKey: (at) => serverNeedsKey(at, ctx.fetch),
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
export async function uninstallCommand(flags: Omit<InstallOptions, "credentials">): Promise<number> {
  return await runUninstall(await defaultContext(), { ...flags, credentials: {} });
}
