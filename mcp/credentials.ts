/**
 * The proxy's view of the configuration (target URL, credentials, identity, what error messages may say) and
 * the credential files it watches: after a 401/403 the files are read again, and only if they changed is the
 * configuration reloaded and the request retried.
 */

import { type Config, keyFor } from "../openviking/config.ts";
import { readTextIfExists } from "../lib/fs.ts";
import { identityOf } from "../openviking/client.ts";
import type { ErrorContext } from "./errors.ts";
import type { UpstreamTarget } from "./upstream.ts";

/** Everything the proxy needs from the configuration. */
export interface ProxySettings {
  target: UpstreamTarget;
  context: ErrorContext;
  /** Limit for response headers of ordinary requests (ms). */
  timeoutMs: number;
}

/**
 * Builds the proxy settings from a loaded config and the resolved actor peer; a key saved for another origin
 * than the MCP URL's is not sent there.
 */
export function proxySettings(config: Config, peerId: string): ProxySettings {
  return {
    target: {
      mcpUrl: config.mcpUrl,
      ...identityOf({ ...config, apiKey: keyFor(config, config.mcpUrl) }, peerId),
    },
    context: {
      mcpUrl: config.mcpUrl,
      credentialSource: config.credentialSource,
      apiKeySource: config.apiKeySource,
      cliConfigPath: config.cliConfigPath,
      ovConfigPath: config.ovConfigPath,
      account: config.account,
      user: config.user,
      secrets: config.apiKey ? [config.apiKey] : [],
    },
    timeoutMs: config.timeoutMs,
  };
}

/** Reads a file's text; `undefined` when absent or unreadable. */
export type TextReader = (path: string) => Promise<string | undefined>;

const safeRead: TextReader = async (path) => {
  try {
    return await readTextIfExists(path);
  } catch {
    return undefined;
  }
};

/** Watches the credential files by content (mtime can stay the same within one tick; content cannot). */
export class CredentialWatcher {
  private seen = new Map<string, string | undefined>();

  constructor(
    private readonly paths: readonly string[],
    private readonly load: () => Promise<ProxySettings>,
    private readonly read: TextReader = safeRead,
  ) {}

  /** Remembers the files' current content (call once the configuration in use was loaded). */
  async snapshot(): Promise<void> {
    for (const path of this.paths) this.seen.set(path, await this.read(path));
  }

  /** New settings when any watched file changed since the last snapshot, else `undefined`. */
  async reloadIfChanged(): Promise<ProxySettings | undefined> {
    let changed = false;
    for (const path of this.paths) {
      const now = await this.read(path);
      if (now !== this.seen.get(path)) changed = true;
      this.seen.set(path, now);
    }
    return changed ? await this.load() : undefined;
  }
}
