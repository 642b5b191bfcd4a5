/**
 * Configuration: connection and identity (credentials.ts) and every behaviour knob (knobs.ts), resolved from
 * the environment, the credential files (`~/.openviking/ovcli.conf`, `ov.conf`) and the workspace's
 * `.openviking/config*.json`, which may choose knobs but never where data goes or who we are.
 */

import {
  type Credentials,
  type CredentialSources,
  looksLikeOvcli,
  resolveCredentials,
} from "./credentials.ts";
import { resolveSettings, type Settings, type SettingSources } from "./knobs.ts";
import { asRecord, type JsonRecord } from "./record.ts";
import {
  absoluteOverride,
  type Env,
  ignoredOverrides,
  isAbsolutePath,
  joinPath,
  noHomeReason,
  openVikingHome,
  orNoHome,
} from "./paths.ts";
import { USER_AGENT } from "./version.ts";

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
 * Fields a workspace file may never set: where data goes (server, MCP URL, log path) and who we are (keys,
 * account, user, peer). A repository chooses knobs, never a destination or an identity.
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
  "debugLogPath",
];

/** Removes connection fields from a workspace settings object (workspace files may not redirect credentials). */
function sanitizeWorkspace(value: unknown, where: string, warnings: string[]): JsonRecord {
  const o = { ...asRecord(value) };
  for (const k of WORKSPACE_FORBIDDEN) {
    if (k in o) {
      warnings.push(`${where}: "${k}" is ignored; put connection settings in ~/.openviking/ovcli.conf`);
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

async function readJsonFile(path: string, warnings: string[]): Promise<unknown> {
  if (!path) return undefined;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
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
async function readWorkspace(cwd: string | undefined, warnings: string[]): Promise<unknown[]> {
  if (!cwd || !isAbsolutePath(cwd)) return [];
  const out: unknown[] = [];
  for (const name of ["config.local.json", "config.json"]) {
    const path = joinPath(cwd, ".openviking", name);
    const value = await readJsonFile(path, warnings);
    if (value !== undefined) out.push(sanitizeWorkspace(value, path, warnings));
  }
  return out;
}

/**
 * Reads the credential files (and workspace files of `cwd`) and resolves the config. Without a home
 * (HOME unset or relative, no absolute OPENVIKING_HOME) no file is read but those the environment names by
 * absolute path: no workspace file, nothing relative to the cwd.
 */
export async function loadConfig(env: Env, cwd?: string): Promise<Resolved> {
  const warnings: string[] = ignoredOverrides(env).map((o) => `${o} is not an absolute path; ignored`);
  const noHome = noHomeReason(env);
  const paths = credentialFilePaths(env);
  let cliPath = paths.cli;
  let ovcli: unknown = await readJsonFile(paths.cli, warnings);
  let ovconf: unknown = await readJsonFile(paths.ov, warnings);
  if (env.OPENVIKING_CONFIG_FILE && !env.OPENVIKING_CLI_CONFIG_FILE && looksLikeOvcli(ovconf)) {
    [ovcli, cliPath, ovconf] = [ovconf, paths.ov, undefined];
  }
  const workspace = noHome ? [] : await readWorkspace(cwd, warnings);
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
