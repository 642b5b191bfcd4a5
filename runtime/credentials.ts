/**
 * Connection and identity — server URL, MCP URL, API key, account, user, actor peer — resolved from the
 * environment, ovcli.conf and ov.conf by the rules OpenViking's other plugins follow (its shared plugin
 * runtime). Pure: the files are read by config.ts.
 */

import { withoutUserinfo } from "./reply.ts";
import { asRecord } from "./record.ts";
import type { Env } from "./paths.ts";

/** Default server address, the same as every other OpenViking client. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:1933";

/** How credentials were chosen. */
export type CredentialMode = "env" | "cli" | "auto";

/** Connection and identity. */
export interface Credentials {
  baseUrl: string;
  mcpUrl: string;
  apiKey: string;
  account: string;
  user: string;
  /** Explicit actor peer id; empty means "derive from the workspace". */
  peerId: string;
  credentialMode: CredentialMode;
  /** Which source supplied the connection: "env", "ovcli.conf", "ov.conf" or "default". */
  credentialSource: string;
  /** Which source supplied the API key ("none" when there is none). */
  apiKeySource: string;
  cliConfigPath: string;
  ovConfigPath: string;
}

/** What credentials are resolved from. */
export interface CredentialSources {
  env: Env;
  /** Parsed ovcli.conf, if it exists and parses. */
  ovcli?: unknown;
  cliConfigPath: string;
  /** Parsed ov.conf, if it exists and parses. */
  ovconf?: unknown;
  ovConfigPath: string;
}

const ENV_CREDENTIAL_VARS = [
  "OPENVIKING_URL",
  "OPENVIKING_BASE_URL",
  "OPENVIKING_MCP_URL",
  "OPENVIKING_BEARER_TOKEN",
  "OPENVIKING_API_KEY",
  "OPENVIKING_ACCOUNT",
  "OPENVIKING_USER",
  "OPENVIKING_PEER_ID",
];
const OVCLI_CREDENTIAL_KEYS = [
  "url",
  "api_key",
  "account",
  "account_id",
  "user",
  "user_id",
  "actor_peer_id",
  "peer_id",
];

const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");
const first = (...values: unknown[]): string => {
  for (const v of values) if (str(v)) return str(v);
  return "";
};

/** Credential mode from `OPENVIKING_CREDENTIAL_SOURCE` (alias `OPENVIKING_CREDENTIALS_SOURCE`). */
export function credentialMode(env: Env): CredentialMode {
  const raw = (env.OPENVIKING_CREDENTIAL_SOURCE ?? env.OPENVIKING_CREDENTIALS_SOURCE ?? "").trim()
    .toLowerCase();
  if (raw === "env" || raw === "environment") return "env";
  if (["cli", "ovcli", "file", "config"].includes(raw)) return "cli";
  return "auto";
}

/** Whether a parsed ov.conf is really an ovcli.conf (the back-compat rule for `OPENVIKING_CONFIG_FILE`). */
export function looksLikeOvcli(value: unknown): boolean {
  const o = asRecord(value);
  if (o.server !== undefined && typeof o.server === "object") return false;
  return OVCLI_CREDENTIAL_KEYS.some((k) => typeof o[k] === "string");
}

function normalizeUrl(raw: string, warnings: string[], what: string): string | undefined {
  try {
    const url = new URL(raw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
    if (url.username || url.password) {
      // fetch refuses such URLs, and they would put the secret on screen: the key belongs in ovcli.conf.
      warnings.push(
        `${what} carries a user name or password (${
          withoutUserinfo(raw)
        }); it is ignored: save the key with ` +
          "`openviking-kimi install --api-key-stdin` instead",
      );
      url.username = "";
      url.password = "";
      return url.toString().replace(/\/+$/, "");
    }
    return raw.replace(/\/+$/, "");
  } catch {
    warnings.push(
      `${what} "${withoutUserinfo(raw)}" is not an http(s) URL; using the default ${DEFAULT_BASE_URL}`,
    );
    return undefined;
  }
}

/** Resolves connection and identity exactly as OpenViking's shared plugin runtime does. */
export function resolveCredentials(sources: CredentialSources, warnings: string[] = []): Credentials {
  const { env } = sources;
  const mode = credentialMode(env);
  const cli = asRecord(sources.ovcli);
  const ov = asRecord(sources.ovconf);
  const ovServer = asRecord(ov.server);
  const ovClient = { ...asRecord(ov.codex), ...asRecord(ov.kimicode) };
  const envSet = ENV_CREDENTIAL_VARS.some((k) => str(env[k]));
  const cliHasCreds = OVCLI_CREDENTIAL_KEYS.some((k) => str(cli[k]));
  const useCli = mode === "cli" || (mode === "auto" && !envSet && cliHasCreds);

  let baseUrl = "";
  let credentialSource = "default";
  const envUrl = first(env.OPENVIKING_URL, env.OPENVIKING_BASE_URL);
  if (mode !== "cli" && envUrl) [baseUrl, credentialSource] = [envUrl, "env"];
  else if (mode !== "env" && str(cli.url)) [baseUrl, credentialSource] = [str(cli.url), "ovcli.conf"];
  else if (str(ovServer.url)) [baseUrl, credentialSource] = [str(ovServer.url), "ov.conf"];
  else if (ovServer.host !== undefined || ovServer.port !== undefined) {
    const host = str(ovServer.host) === "0.0.0.0" || !str(ovServer.host) ? "127.0.0.1" : str(ovServer.host);
    const port = typeof ovServer.port === "number" || str(ovServer.port) ? String(ovServer.port) : "1933";
    [baseUrl, credentialSource] = [`http://${host}:${port}`, "ov.conf"];
  }
  const normalized = baseUrl
    ? normalizeUrl(baseUrl, warnings, `OpenViking URL from ${credentialSource}`)
    : undefined;
  if (normalized) baseUrl = normalized;
  else [baseUrl, credentialSource] = [DEFAULT_BASE_URL, "default"];

  let apiKey: string;
  let apiKeySource = "none";
  if (useCli) {
    apiKey = str(cli.api_key);
    if (apiKey) apiKeySource = "ovcli.conf";
  } else {
    const candidates: [unknown, string][] = [
      [env.OPENVIKING_BEARER_TOKEN, "env OPENVIKING_BEARER_TOKEN"],
      [env.OPENVIKING_API_KEY, "env OPENVIKING_API_KEY"],
      [cli.api_key, "ovcli.conf"],
      [ovClient.apiKey, "ov.conf"],
      [ovServer.root_api_key, "ov.conf"],
    ];
    const hit = candidates.find(([v]) => str(v));
    apiKey = hit ? str(hit[0]) : "";
    if (hit) apiKeySource = hit[1];
  }

  const account = useCli
    ? first(cli.account, cli.account_id)
    : first(env.OPENVIKING_ACCOUNT, cli.account, cli.account_id, ovClient.accountId);
  const user = useCli
    ? first(cli.user, cli.user_id)
    : first(env.OPENVIKING_USER, cli.user, cli.user_id, ovClient.userId);
  const peerId = useCli
    ? first(cli.actor_peer_id, cli.peer_id)
    : first(env.OPENVIKING_PEER_ID, cli.actor_peer_id, cli.peer_id, ovClient.peerId, ovClient.peer_id);

  let mcpUrl = `${baseUrl}/mcp`;
  if (mode !== "cli" && str(env.OPENVIKING_MCP_URL)) {
    mcpUrl = normalizeUrl(str(env.OPENVIKING_MCP_URL), warnings, "OPENVIKING_MCP_URL") ?? mcpUrl;
  }

  return {
    baseUrl,
    mcpUrl,
    apiKey,
    account,
    user,
    peerId,
    credentialMode: mode,
    credentialSource: useCli ? "ovcli.conf" : credentialSource,
    apiKeySource,
    cliConfigPath: sources.cliConfigPath,
    ovConfigPath: sources.ovConfigPath,
  };
}
