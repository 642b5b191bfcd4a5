/**
 * Configuration: credentials (env → ovcli.conf → ov.conf, the rules OpenViking's other plugins follow) and
 * every behaviour knob (env → workspace files → ovcli.conf `plugin` section → default), validated by one zod
 * schema. A bad value never crashes anything: it is reported as a warning and replaced by its default.
 */

import * as z from "zod/mini";
import { issueText } from "./issue.ts";
import { asRecord, type JsonRecord as Obj } from "./record.ts";
import { withoutUserinfo } from "./reply.ts";
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

/** Default server address, the same as every other OpenViking client. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:1933";

const BOOL_TRUE = new Set(["1", "true", "yes", "on"]);
const BOOL_FALSE = new Set(["0", "false", "no", "off"]);

/** A boolean knob: accepts real booleans and the strings 1/0, true/false, yes/no, on/off. */
const boolKnob = z.pipe(
  z.transform((v: unknown) => {
    if (typeof v !== "string") return v;
    const s = v.trim().toLowerCase();
    return BOOL_TRUE.has(s) ? true : BOOL_FALSE.has(s) ? false : v;
  }),
  z.boolean(),
);

/** A numeric knob within [min, max]; strings are parsed. */
function numKnob(min: number, max: number, int = true) {
  const base = int ? z.int() : z.number();
  return z.pipe(
    z.transform((v: unknown) => (typeof v === "string" && v.trim() !== "" ? Number(v.trim()) : v)),
    base.check(z.minimum(min), z.maximum(max)),
  );
}

/** An enumerated knob; matching is case-insensitive. */
function enumKnob<const T extends readonly [string, ...string[]]>(values: T) {
  return z.pipe(
    z.transform((v: unknown) => (typeof v === "string" ? v.trim().toLowerCase() : v)),
    z.enum(values),
  );
}

/** A list knob: a comma-separated string or an array of strings. */
const listKnob = z.pipe(
  z.transform((
    v: unknown,
  ) => (typeof v === "string" ? v.split(",").map((s) => s.trim()).filter(Boolean) : v)),
  z.array(z.string()),
);

const pathKnob = z.string().check(z.minLength(1));

/** Every knob: its environment variable, its schema and its default. The single source of truth. */
export const KNOBS = {
  enabled: { env: "OPENVIKING_MEMORY_ENABLED", schema: boolKnob, default: true },
  autoRecall: { env: "OPENVIKING_AUTO_RECALL", schema: boolKnob, default: true },
  autoCapture: { env: "OPENVIKING_AUTO_CAPTURE", schema: boolKnob, default: true },
  workspacePeer: { env: "OPENVIKING_WORKSPACE_PEER", schema: boolKnob, default: true },
  peerSource: { env: "OPENVIKING_PEER_SOURCE", schema: enumKnob(["git", "cwd", "none"]), default: "git" },
  bypassSession: { env: "OPENVIKING_BYPASS_SESSION", schema: boolKnob, default: false },
  bypassSessionPatterns: {
    env: "OPENVIKING_BYPASS_SESSION_PATTERNS",
    schema: listKnob,
    default: [] as string[],
  },
  recallLimit: { env: "OPENVIKING_RECALL_LIMIT", schema: numKnob(1, 100), default: 10 },
  recallTokenBudget: { env: "OPENVIKING_RECALL_TOKEN_BUDGET", schema: numKnob(200, 100_000), default: 2000 },
  recallMaxContentChars: {
    env: "OPENVIKING_RECALL_MAX_CONTENT_CHARS",
    schema: numKnob(50, 100_000),
    default: 500,
  },
  scoreThreshold: { env: "OPENVIKING_SCORE_THRESHOLD", schema: numKnob(0, 1, false), default: 0.35 },
  recallPreferAbstract: { env: "OPENVIKING_RECALL_PREFER_ABSTRACT", schema: boolKnob, default: true },
  recallPeerScope: {
    env: "OPENVIKING_RECALL_PEER_SCOPE",
    schema: enumKnob(["all", "actor"]),
    default: "all",
  },
  recallDedupTurns: { env: "OPENVIKING_RECALL_DEDUP_TURNS", schema: numKnob(0, 20), default: 5 },
  recallMaxTokens: {
    env: "OPENVIKING_RECALL_MAX_TOKENS",
    schema: numKnob(64, 32_000),
    default: undefined as number | undefined,
  },
  recallQueryExpansion: {
    env: "OPENVIKING_RECALL_QUERY_EXPANSION",
    schema: enumKnob(["off", "auto"]),
    default: undefined as "off" | "auto" | undefined,
  },
  minQueryLength: { env: "OPENVIKING_MIN_QUERY_LENGTH", schema: numKnob(0, 10_000), default: 3 },
  timeoutMs: { env: "OPENVIKING_TIMEOUT_MS", schema: numKnob(1000, 600_000), default: 15_000 },
  promptBudgetMs: { env: "OPENVIKING_PROMPT_BUDGET_MS", schema: numKnob(500, 600_000), default: 17_000 },
  interruptBudgetMs: { env: "OPENVIKING_INTERRUPT_BUDGET_MS", schema: numKnob(200, 600_000), default: 2000 },
  replayBudgetMs: { env: "OPENVIKING_REPLAY_BUDGET_MS", schema: numKnob(200, 600_000), default: 10_000 },
  captureWaitMs: { env: "OPENVIKING_CAPTURE_WAIT_MS", schema: numKnob(0, 600_000), default: 10_000 },
  profileTokenBudget: {
    env: "OPENVIKING_PROFILE_TOKEN_BUDGET",
    schema: numKnob(500, 100_000),
    default: 6000,
  },
  commitTurnThreshold: { env: "OPENVIKING_COMMIT_TURN_THRESHOLD", schema: numKnob(1, 100_000), default: 1 },
  captureMaxLength: {
    env: "OPENVIKING_CAPTURE_MAX_LENGTH",
    schema: numKnob(100, 10_000_000),
    default: 24_000,
  },
  redact: { env: "OPENVIKING_REDACT", schema: boolKnob, default: true },
  writePathAsync: { env: "OPENVIKING_WRITE_PATH_ASYNC", schema: boolKnob, default: true },
  pendingReplayLimit: { env: "OPENVIKING_PENDING_REPLAY_LIMIT", schema: numKnob(1, 100_000), default: 50 },
  pendingMaxRetries: { env: "OPENVIKING_PENDING_MAX_RETRIES", schema: numKnob(1, 1000), default: 3 },
  pendingTtlDays: { env: "OPENVIKING_PENDING_TTL_DAYS", schema: numKnob(1, 3650), default: 7 },
  debug: { env: "OPENVIKING_DEBUG", schema: boolKnob, default: false },
  debugLogPath: { env: "OPENVIKING_DEBUG_LOG", schema: pathKnob, default: undefined as string | undefined },
} as const;

/** Name of a knob. */
export type KnobName = keyof typeof KNOBS;

/** Resolved knob values. */
export type Settings =
  & { -readonly [K in KnobName]: (typeof KNOBS)[K]["default"] | z.output<(typeof KNOBS)[K]["schema"]> }
  & {
    debugLogPath: string;
    /** The recall limit was set by the user (only then does recall send quotas, like the other plugins). */
    recallLimitConfigured: boolean;
  };

/** The one zod schema of the settings object, derived from the knob table. */
export const SettingsSchema = z.object(
  Object.fromEntries(Object.entries(KNOBS).map(([k, knob]) => [k, z.optional(knob.schema)])) as {
    [K in KnobName]: z.ZodMiniOptional<(typeof KNOBS)[K]["schema"]>;
  },
);

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

/** Everything a command needs. */
export interface Config extends Credentials, Settings {
  userAgent: string;
}

/** Raw inputs to resolution, so the rules are pure and testable. */
export interface ConfigSources {
  env: Env;
  /** Parsed ovcli.conf, if it exists and parses. */
  ovcli?: unknown;
  cliConfigPath: string;
  /** Parsed ov.conf, if it exists and parses. */
  ovconf?: unknown;
  ovConfigPath: string;
  /** Workspace settings objects, highest precedence first (`config.local.json`, then `config.json`). */
  workspace?: unknown[];
}

/** The result of resolution: the config and what was wrong with the inputs. */
export interface Resolved {
  config: Config;
  warnings: string[];
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
export function resolveCredentials(sources: ConfigSources, warnings: string[] = []): Credentials {
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

/** Resolves every knob: env, then workspace files, then ovcli.conf `plugin.kimicode`, then `plugin`, then default. */
export function resolveSettings(sources: ConfigSources, warnings: string[] = []): Settings {
  const { env } = sources;
  const plugin = asRecord(asRecord(sources.ovcli).plugin);
  const layers: [string, Obj][] = [
    ...(sources.workspace ?? []).map((w, i): [string, Obj] => [`workspace config #${i + 1}`, asRecord(w)]),
    ["ovcli.conf plugin.kimicode", asRecord(plugin.kimicode)],
    ["ovcli.conf plugin", plugin],
  ];
  const out: Record<string, unknown> = {};
  let configured = false;
  for (const [name, knob] of Object.entries(KNOBS) as [KnobName, (typeof KNOBS)[KnobName]][]) {
    let raw: unknown = undefined;
    let from = "";
    const envValue = env[knob.env];
    if (envValue !== undefined && envValue.trim() !== "") [raw, from] = [envValue, knob.env];
    else {
      for (const [layerName, layer] of layers) {
        if (layer[name] !== undefined && layer[name] !== null) {
          [raw, from] = [layer[name], `${layerName} "${name}"`];
          break;
        }
      }
    }
    if (raw === undefined) {
      out[name] = knob.default;
      continue;
    }
    const parsed = knob.schema.safeParse(raw);
    if (parsed.success) {
      out[name] = parsed.data;
      if (name === "recallLimit") configured = true;
    } else {
      const shown = JSON.stringify(raw) ?? String(raw);
      warnings.push(
        `${from}: invalid value ${shown} (${issueText(parsed.error.issues[0])}); using the default`,
      );
      out[name] = knob.default;
    }
  }
  const settings = { ...SettingsSchema.parse(out), recallLimitConfigured: configured } as Settings;
  settings.debugLogPath = debugLogPath(settings.debugLogPath, env, warnings);
  return settings;
}

/** The log path: the knob if it is absolute (`~` expanded), else `~/.openviking/logs/…`; "" = no log (no home). */
function debugLogPath(knob: string | undefined, env: Env, warnings: string[]): string {
  const explicit = absoluteOverride(knob, env);
  if (knob && !explicit) warnings.push(`debug log path "${knob}" is not an absolute path; using the default`);
  return explicit ?? orNoHome(() => joinPath(openVikingHome(env), "logs", "kimicode-hooks.log")) ?? "";
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
export function sanitizeWorkspace(value: unknown, where: string, warnings: string[]): Obj {
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
