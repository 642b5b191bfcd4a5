/**
 * Configuration: connection and identity — server URL, MCP URL, API key, account, user, actor peer — resolved
 * from the environment, ovcli.conf and ov.conf by the rules OpenViking's other plugins follow (their shared
 * plugin runtime), and every behaviour knob (knobs.ts); read from the environment, the credential files
 * (`~/.openviking/ovcli.conf`, `ov.conf`) and the workspace's `.openviking/config*.json` — anyone's
 * repository: it may make memory stricter (each knob's rule, knobs.ts), never set where data goes or who we
 * are. Resolution is pure; only `loadConfig` reads files.
 */

import { settled } from "../lib/fs.ts";
import { resolveSettings, type Settings, type SettingSources, type WorkspaceFile } from "./knobs.ts";
import { asRecord, type JsonRecord } from "../lib/parsed.ts";
import { withoutUserinfo } from "../lib/scrub.ts";
import {
  absoluteOverride,
  type Env,
  ignoredOverrides,
  isAbsolutePath,
  joinPath,
  noHomeReason,
  openVikingHome,
  orNoHome,
} from "../lib/paths.ts";
import { USER_AGENT } from "../lib/version.ts";
import { commandName } from "../lib/self.ts";

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
  /**
   * The origin the key was saved for, when it came from a file ("" for one from the environment, given for
   * whatever address this run uses, or for no key): {@link keyFor} sends it there only.
   */
  apiKeyOrigin: string;
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
        }); it is ignored: save the key with \`${commandName()} install --api-key-stdin\` instead`,
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

/** The credential files as resolution reads them, and whether ovcli.conf alone decides. */
interface Files {
  env: Env;
  mode: CredentialMode;
  cli: JsonRecord;
  ovServer: JsonRecord;
  /** ov.conf's client sections (`codex`, then `kimicode`). */
  ovClient: JsonRecord;
  useCli: boolean;
}

/** The server URL and where it came from: env, ovcli.conf, ov.conf's server (URL, or host and port), default. */
function baseUrlOf(f: Files, warnings: string[]): { baseUrl: string; source: string } {
  const { env, mode, cli, ovServer } = f;
  let url = "";
  let source = "default";
  const envUrl = first(env.OPENVIKING_URL, env.OPENVIKING_BASE_URL);
  if (mode !== "cli" && envUrl) [url, source] = [envUrl, "env"];
  else if (mode !== "env" && str(cli.url)) [url, source] = [str(cli.url), "ovcli.conf"];
  else if (str(ovServer.url)) [url, source] = [str(ovServer.url), "ov.conf"];
  else if (ovServer.host !== undefined || ovServer.port !== undefined) {
    const host = str(ovServer.host) === "0.0.0.0" || !str(ovServer.host) ? "127.0.0.1" : str(ovServer.host);
    const port = typeof ovServer.port === "number" || str(ovServer.port) ? String(ovServer.port) : "1933";
    [url, source] = [`http://${host}:${port}`, "ov.conf"];
  }
  const normalized = url ? normalizeUrl(url, warnings, `OpenViking URL from ${source}`) : undefined;
  return normalized ? { baseUrl: normalized, source } : { baseUrl: DEFAULT_BASE_URL, source: "default" };
}

/** The origin of `url` ("" when it is not a URL). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

/** The key of `c` for a request to `url`: none when the key was saved for another origin. */
export function keyFor(c: Pick<Credentials, "apiKey" | "apiKeyOrigin">, url: string): string {
  return c.apiKeyOrigin === "" || c.apiKeyOrigin === originOf(url) ? c.apiKey : "";
}

/**
 * The API key for `baseUrl` and where it came from ("none" when there is none). A key saved in a file
 * belongs to the server that file names — ovcli.conf's key to the address the files give (its `url`, else
 * ov.conf's server, else the default), ov.conf's client key to ov.conf's server — and is never sent to
 * another origin (an `OPENVIKING_URL` elsewhere): `warnings` says so. ov.conf's `server.root_api_key` is
 * never a client's key: OpenViking refuses it on data routes, and it administers the whole server.
 */
function apiKeyOf(
  f: Files,
  baseUrl: string,
  warnings: string[],
): { apiKey: string; source: string; origin: string } {
  const filesUrl = (files: Files) => originOf(baseUrlOf({ ...files, mode: "cli" }, []).baseUrl);
  const candidates: [unknown, string, string][] = [
    [f.env.OPENVIKING_BEARER_TOKEN, "env OPENVIKING_BEARER_TOKEN", ""],
    [f.env.OPENVIKING_API_KEY, "env OPENVIKING_API_KEY", ""],
    [f.cli.api_key, "ovcli.conf", filesUrl(f)],
    [f.ovClient.apiKey, "ov.conf", filesUrl({ ...f, cli: {} })],
  ];
  for (const [value, source, origin] of f.useCli ? candidates.slice(2, 3) : candidates) {
    if (!str(value)) continue;
    if (origin === "" || origin === originOf(baseUrl)) return { apiKey: str(value), source, origin };
    warnings.push(
      `the API key in ${source} was saved for ${origin}; it is not sent to ${baseUrl}: give that server's ` +
        `key in OPENVIKING_API_KEY, or save it with \`${commandName()} install --url URL --api-key-stdin\``,
    );
  }
  return { apiKey: "", source: "none", origin: "" };
}

/** Account, user and explicit actor peer: ovcli.conf alone, or env before the files. */
function identityOf(f: Files): { account: string; user: string; peerId: string } {
  const { env, cli, ovClient } = f;
  if (f.useCli) {
    return {
      account: first(cli.account, cli.account_id),
      user: first(cli.user, cli.user_id),
      peerId: first(cli.actor_peer_id, cli.peer_id),
    };
  }
  return {
    account: first(env.OPENVIKING_ACCOUNT, cli.account, cli.account_id, ovClient.accountId),
    user: first(env.OPENVIKING_USER, cli.user, cli.user_id, ovClient.userId),
    peerId: first(env.OPENVIKING_PEER_ID, cli.actor_peer_id, cli.peer_id, ovClient.peerId, ovClient.peer_id),
  };
}

/** Resolves connection and identity exactly as OpenViking's shared plugin runtime does. */
export function resolveCredentials(sources: CredentialSources, warnings: string[] = []): Credentials {
  const { env } = sources;
  const mode = credentialMode(env);
  const cli = asRecord(sources.ovcli);
  const ov = asRecord(sources.ovconf);
  const envSet = ENV_CREDENTIAL_VARS.some((k) => str(env[k]));
  const cliHasCreds = OVCLI_CREDENTIAL_KEYS.some((k) => str(cli[k]));
  const files: Files = {
    env,
    mode,
    cli,
    ovServer: asRecord(ov.server),
    ovClient: { ...asRecord(ov.codex), ...asRecord(ov.kimicode) },
    useCli: mode === "cli" || (mode === "auto" && !envSet && cliHasCreds),
  };
  const { baseUrl, source } = baseUrlOf(files, warnings);
  const key = apiKeyOf(files, baseUrl, warnings);
  let mcpUrl = `${baseUrl}/mcp`;
  if (mode !== "cli" && str(env.OPENVIKING_MCP_URL)) {
    mcpUrl = normalizeUrl(str(env.OPENVIKING_MCP_URL), warnings, "OPENVIKING_MCP_URL") ?? mcpUrl;
  }
  if (key.apiKey && !keyFor({ apiKey: key.apiKey, apiKeyOrigin: key.origin }, mcpUrl)) {
    warnings.push(`the API key in ${key.source} was saved for ${key.origin}; it is not sent to ${mcpUrl}`);
  }
  return {
    baseUrl,
    mcpUrl,
    apiKey: key.apiKey,
    ...identityOf(files),
    credentialMode: mode,
    credentialSource: files.useCli ? "ovcli.conf" : source,
    apiKeySource: key.source,
    apiKeyOrigin: key.origin,
    cliConfigPath: sources.cliConfigPath,
    ovConfigPath: sources.ovConfigPath,
  };
}

/** Everything a command needs. */
export interface Config extends Credentials, Settings {
  userAgent: string;
}

/** Raw inputs to resolution, so the rules are pure and testable. */
export type ConfigSources = CredentialSources & SettingSources;

/** The result of resolution: the config and what was wrong with the inputs. */
export interface Resolved {
  config: Config;
  warnings: string[];
}

/**
 * Connection fields a workspace file may never set: where data goes (server, MCP URL) and who we are (keys,
 * account, user, peer). The knobs say for themselves what a workspace may do with them (the log path and the
 * MCP tools offered: nothing).
 */
const WORKSPACE_FORBIDDEN = [
  "url",
  "api_key",
  "apiKey",
  "baseUrl",
  "mcpUrl",
  "account",
  "user",
  "peerId",
];

/** Removes connection fields from a workspace settings object (workspace files may not redirect credentials). */
function sanitizeWorkspace(value: unknown, where: string, warnings: string[]): JsonRecord {
  const o = { ...asRecord(value) };
  for (const k of WORKSPACE_FORBIDDEN) {
    if (k in o) {
      warnings.push(
        `${where}: "${k}" is ignored (a workspace file may not set it); put it in ~/.openviking/ovcli.conf`,
      );
      delete o[k];
    }
  }
  return o;
}

/** Pure resolution of the full config from its sources. */
export function resolveConfig(sources: ConfigSources): Resolved {
  const warnings: string[] = [];
  const credentials = resolveCredentials(sources, warnings);
  const settings = resolveSettings(sources, warnings);
  return { config: { ...credentials, ...settings, userAgent: USER_AGENT }, warnings };
}

/**
 * Paths of ovcli.conf and ov.conf: the override variables when they are absolute, else under OpenViking's
 * home; "" when neither exists (no home): then there is no such file, never one relative to the cwd.
 */
export function credentialFilePaths(env: Env): { cli: string; ov: string } {
  const inHome = (name: string) => orNoHome(() => joinPath(openVikingHome(env), name)) ?? "";
  return {
    cli: absoluteOverride(env.OPENVIKING_CLI_CONFIG_FILE, env) ?? inHome("ovcli.conf"),
    ov: absoluteOverride(env.OPENVIKING_CONFIG_FILE, env) ?? inHome("ov.conf"),
  };
}

/** A JSON file's value; undefined when it is missing, unreadable (a warning) or not JSON (a warning). */
function readJsonFile(path: string, warnings: string[]): unknown {
  if (!path) return undefined;
  let text: string;
  try {
    text = Deno.readTextFileSync(path); // small files: a synchronous read spares a trip through the thread pool
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      warnings.push(`cannot read ${path}: ${(error as Error).message}`);
    }
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    warnings.push(`${path} is not valid JSON; ignoring it`);
    return undefined;
  }
}

/**
 * Workspace settings files for `cwd`, nearest first: `.openviking/config.local.json`, `.openviking/config.json`
 * (none for a relative cwd: it would resolve against this process's directory, not the workspace).
 */
function readWorkspace(cwd: string | undefined, warnings: string[]): WorkspaceFile[] {
  if (!cwd || !isAbsolutePath(cwd)) return [];
  const out: WorkspaceFile[] = [];
  for (const name of ["config.local.json", "config.json"]) {
    const path = joinPath(cwd, ".openviking", name);
    const value = readJsonFile(path, warnings);
    if (value !== undefined) out.push({ path, value: sanitizeWorkspace(value, path, warnings) });
  }
  return out;
}

/**
 * Reads the credential files (and workspace files of `cwd`) and resolves the config. Without a home
 * (HOME unset or relative, no absolute OPENVIKING_HOME) no file is read but those the environment names by
 * absolute path: no workspace file, nothing relative to the cwd.
 */
export function loadConfig(env: Env, cwd?: string): Promise<Resolved> {
  return settled(() => loadConfigSync(env, cwd));
}

/** {@link loadConfig}, synchronously. */
function loadConfigSync(env: Env, cwd?: string): Resolved {
  const warnings: string[] = ignoredOverrides(env).map((o) => `${o} is not an absolute path; ignored`);
  const noHome = noHomeReason(env);
  const paths = credentialFilePaths(env);
  let cliPath = paths.cli;
  let ovcli: unknown = readJsonFile(paths.cli, warnings);
  let ovconf: unknown = readJsonFile(paths.ov, warnings);
  if (env.OPENVIKING_CONFIG_FILE && !env.OPENVIKING_CLI_CONFIG_FILE && looksLikeOvcli(ovconf)) {
    [ovcli, cliPath, ovconf] = [ovconf, paths.ov, undefined];
  }
  const workspace = noHome ? [] : readWorkspace(cwd, warnings);
  const resolved = resolveConfig({
    env,
    ovcli,
    cliConfigPath: cliPath,
    ovconf,
    ovConfigPath: paths.ov,
    workspace,
  });
  return { config: resolved.config, warnings: [...warnings, ...resolved.warnings] };
}
