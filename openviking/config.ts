/** Connection and identity from env, ovcli.conf and ov.conf, and every knob; only `loadConfig` reads files. */

import { parseJsonOrUndefined, readRegularTextSync, settled, SMALL_FILE_MAX_BYTES } from "../lib/fs.ts";
import { asRecord, type JsonRecord } from "../lib/parsed.ts";
import { withoutUserinfo } from "../lib/redact.ts";
import * as paths from "../lib/paths.ts";
import type { Env } from "../lib/paths.ts";
import { USER_AGENT } from "../lib/version.ts";
import { commandName } from "../lib/self.ts";

/** Default server address, as every OpenViking client's. */
export const DEFAULT_BASE_URL = "http://127.0.0.1:1933";
/** Connection and identity; `apiKeyOrigin`: the origin a file's key was saved for ("" = any). */
type Credentials = ReturnType<typeof resolveCredentials>;
/** Raw inputs to resolution: parsed files, workspace files nearest first. */
export interface ConfigSources {
  env: Env;
  ovcli?: unknown;
  cliConfigPath: string;
  ovconf?: unknown;
  ovConfigPath: string;
  workspace?: { path: string; value: unknown }[];
}

const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");

/** Variables of earlier versions, no longer read (README's Configuration says what replaced each). */
const REMOVED = ("CREDENTIALS_SOURCE BEARER_TOKEN PEER_SOURCE RECALL_FORMAT RECALL_TOKEN_BUDGET " +
  "RECALL_MAX_CONTENT_CHARS RECALL_LIMIT RECALL_PREFER_ABSTRACT LEDGER_MAX_BYTES LEDGER_MAX_AGE_DAYS " +
  "RECALL_DEDUP_TURNS RECALL_MAX_TOKENS RECALL_QUERY_EXPANSION PENDING_MAX_RETRIES PENDING_REPLAY_LIMIT")
  .split(" ").map((name) => `OPENVIKING_${name}`);

function normalizeUrl(raw: string, warnings: string[], what: string): string | undefined {
  const url = URL.parse(raw);
  const shown = withoutUserinfo(raw);
  if (url?.protocol !== "http:" && url?.protocol !== "https:") {
    warnings.push(`${what} "${shown}" is not an http(s) URL; using the default ${DEFAULT_BASE_URL}`);
    return undefined;
  }
  if (!url.username && !url.password) return raw.replace(/\/+$/, "");
  const fix = `save the key with \`${commandName()} install --api-key-stdin\` instead`;
  warnings.push(`${what} carries a user name or password (${shown}); it is ignored: ${fix}`);
  url.username = url.password = "";
  return url.toString().replace(/\/+$/, "");
}

/** The origin of `url` ("" when it is not a URL). */
export function originOf(url: string): string {
  return URL.parse(url)?.origin ?? "";
}

/** The key of `c` for a request to `url`: none when the key was saved for another origin. */
export function keyFor(c: Pick<Credentials, "apiKey" | "apiKeyOrigin">, url: string): string {
  return c.apiKeyOrigin === "" || c.apiKeyOrigin === originOf(url) ? c.apiKey : "";
}

/** The origin a file's key is saved for: its URL's, or the default server's when that is not http(s). */
function fileOrigin(url: string): string {
  const u = URL.parse(url);
  return u?.protocol === "http:" || u?.protocol === "https:" ? u.origin : originOf(DEFAULT_BASE_URL);
}

/** One source of URL, key, account, user and peer id (`record` at `keys`); its key goes to `origin` ("": any). */
function layer(source: string, keySource: string, origin: string, record: JsonRecord, keys: string) {
  const [url, key, account, user, peerId] = keys.split(" ").map((k) => str(record[k]));
  return { source, keySource, origin, url, key, account, user, peerId };
}
type Layer = ReturnType<typeof layer>;
/** Connection and identity as OpenViking's shared plugin runtime resolves them (README: Configuration). */
function resolveCredentials(sources: ConfigSources, warnings: string[]) {
  const { env } = sources;
  const [cli, ov] = [asRecord(sources.ovcli), asRecord(sources.ovconf)];
  const [server, client] = [asRecord(ov.server), asRecord(ov.kimicode)];
  const host = str(server.host) === "0.0.0.0" || !str(server.host) ? "127.0.0.1" : str(server.host);
  const port = typeof server.port === "number" || str(server.port) ? String(server.port) : "1933";
  const ovUrl = str(server.url) ||
    (server.host === undefined && server.port === undefined ? "" : `http://${host}:${port}`);
  const envUrl = str(env.OPENVIKING_URL) || str(env.OPENVIKING_BASE_URL);
  const ids = "OPENVIKING_API_KEY OPENVIKING_ACCOUNT OPENVIKING_USER OPENVIKING_PEER_ID";
  const fromEnv = layer("env", "env OPENVIKING_API_KEY", "", { ...env, url: envUrl }, `url ${ids}`);
  const cliOrigin = fileOrigin(str(cli.url) || ovUrl);
  const fromCli = layer("ovcli.conf", "ovcli.conf", cliOrigin, cli, "url api_key account user actor_peer_id");
  const ovKeys = "url apiKey accountId userId peerId";
  const fromOv = layer("ov.conf", "ov.conf", fileOrigin(ovUrl), { ...client, url: ovUrl }, ovKeys);
  const given = (l: Layer) => [l.url, l.key, l.account, l.user, l.peerId].some(Boolean);
  const envSet = given(fromEnv) || str(env.OPENVIKING_MCP_URL) !== "";
  const useCli = !envSet && given(fromCli);
  const urlLayer = [fromEnv, fromCli, fromOv].find((l) => l.url);
  const normalized = urlLayer &&
    normalizeUrl(urlLayer.url, warnings, `OpenViking URL from ${urlLayer.source}`);
  const baseUrl = normalized ?? DEFAULT_BASE_URL;
  const layers = useCli ? [fromCli] : [fromEnv, fromCli, fromOv];
  const keyed = layers.find((l) => {
    if (!l.key || l.origin === "" || l.origin === originOf(baseUrl)) return l.key !== "";
    warnings.push(
      `the API key in ${l.keySource} was saved for ${l.origin}; it is not sent to ${baseUrl}: give that server's ` +
        `key in OPENVIKING_API_KEY, or save it with \`${commandName()} install --url URL --api-key-stdin\``,
    );
  });
  let mcpUrl = `${baseUrl}/mcp`;
  if (str(env.OPENVIKING_MCP_URL)) {
    mcpUrl = normalizeUrl(str(env.OPENVIKING_MCP_URL), warnings, "OPENVIKING_MCP_URL") ?? mcpUrl;
  }
  if (keyed && !keyFor({ apiKey: keyed.key, apiKeyOrigin: keyed.origin }, mcpUrl)) {
    warnings.push(
      `the API key in ${keyed.keySource} was saved for ${keyed.origin}; it is not sent to ${mcpUrl}`,
    );
  }
  const firstOf = (field: "account" | "user" | "peerId") => layers.find((l) => l[field])?.[field] ?? "";
  return {
    baseUrl,
    mcpUrl,
    apiKey: keyed?.key ?? "",
    account: firstOf("account"),
    user: firstOf("user"),
    peerId: firstOf("peerId"),
    credentialSource: useCli ? "ovcli.conf" : normalized ? urlLayer!.source : "default",
    apiKeySource: keyed?.keySource ?? "none",
    apiKeyOrigin: keyed?.origin ?? "",
    cliConfigPath: sources.cliConfigPath,
    ovConfigPath: sources.ovConfigPath,
  };
}

type Parser<T> = (value: unknown) => T;
const refuse = (reason: string): never => {
  throw new Error(reason);
};
const BOOL_WORDS = new Map(["1", "true", "yes", "on", "0", "false", "no", "off"].map((w, i) => [w, i < 4]));
const boolKnob: Parser<boolean> = (raw) => {
  const v = typeof raw === "string" ? BOOL_WORDS.get(raw.trim().toLowerCase()) : raw;
  return typeof v === "boolean" ? v : refuse("expected boolean");
};

/** A number within [min, max] (an integer unless `int` is false). */
function numKnob(min: number, max: number, int = true): Parser<number> {
  return (raw) => {
    const v = typeof raw === "string" && raw.trim() !== "" ? Number(raw.trim()) : raw;
    if (typeof v !== "number" || !Number.isFinite(v)) return refuse("expected number");
    if (int && !Number.isInteger(v)) return refuse("expected int");
    if (v < min) return refuse(`must be at least ${min}`);
    return v > max ? refuse(`must be at most ${max}`) : v;
  };
}

function enumKnob<const T extends readonly [string, ...string[]]>(values: T): Parser<T[number]> {
  const words = `must be ${values.map((v) => JSON.stringify(v)).join(" or ")}`;
  return (raw) => {
    const v = typeof raw === "string" ? raw.trim().toLowerCase() : raw;
    return values.includes(v as string) ? v as T[number] : refuse(words);
  };
}

const listKnob: Parser<string[]> = (raw) => {
  if (typeof raw === "string") return raw.split(",").map((s) => s.trim()).filter(Boolean);
  if (!Array.isArray(raw)) return refuse("expected array");
  return raw.every((s) => typeof s === "string") ? [...raw] : refuse("expected string");
};

const pathKnob: Parser<string> = (raw) =>
  typeof raw !== "string" ? refuse("expected string") : raw || refuse("needs at least 1 character");
/** What a workspace file may do with a knob, against the user's value; `may` words it ("" = nothing). */
type WorkspaceRule = { may: string; allows: (asked: unknown, user: unknown) => boolean };
const rule = (may: string, allows: WorkspaceRule["allows"]): WorkspaceRule => ({ may, allows });
const NEVER = rule("", () => false);
const LOWER = rule("lower it", (asked, user) => Number(asked) <= Number(user));
const ADD = rule(
  "add to it",
  (asked, user) => (user as string[]).every((x) => (asked as unknown[]).includes(x)),
);
const OFF = rule("turn it off", (asked, user) => asked === false || asked === user);
const ON = rule("turn it on", (asked, user) => asked === true || asked === user);
/** Recall scopes, widest first: a workspace may only narrow. */
const SCOPES = ["all", "actor", "strict"] as const;
const NARROWER = rule(
  `set it to ${SCOPES.slice(1).map((v) => `"${v}"`).join(" or ")}`,
  (asked, user) => SCOPES.indexOf(asked as "all") >= SCOPES.indexOf(user as "all"),
);

function knob<T>(env: string, parse: Parser<T>, fallback: NoInfer<T>, workspace: WorkspaceRule) {
  return { env, parse, default: fallback, workspace };
}

/** The commit policies, cheapest last. */
export const COMMIT_POLICIES = ["every-turn", "balanced", "session-end"] as const;
/** Every knob: variable, parser, default, workspace rule (NEVER where it reaches other projects). */
export const KNOBS = {
  enabled: knob("OPENVIKING_MEMORY_ENABLED", boolKnob, true, OFF),
  autoRecall: knob("OPENVIKING_AUTO_RECALL", boolKnob, true, OFF),
  autoCapture: knob("OPENVIKING_AUTO_CAPTURE", boolKnob, true, OFF),
  workspacePeer: knob("OPENVIKING_WORKSPACE_PEER", boolKnob, true, NEVER),
  bypassSession: knob("OPENVIKING_BYPASS_SESSION", boolKnob, false, ON),
  bypassSessionPatterns: knob("OPENVIKING_BYPASS_SESSION_PATTERNS", listKnob, [], ADD),
  recallPeerScope: knob("OPENVIKING_RECALL_PEER_SCOPE", enumKnob(SCOPES), "all", NARROWER),
  timeoutMs: knob("OPENVIKING_TIMEOUT_MS", numKnob(1000, 600_000), 15_000, NEVER),
  promptBudgetMs: knob("OPENVIKING_PROMPT_BUDGET_MS", numKnob(500, 600_000), 8000, NEVER),
  captureWaitMs: knob("OPENVIKING_CAPTURE_WAIT_MS", numKnob(0, 600_000), 10_000, LOWER),
  commitPolicy: knob("OPENVIKING_COMMIT_POLICY", enumKnob(COMMIT_POLICIES), "balanced", NEVER),
  idleCommitSeconds: knob("OPENVIKING_IDLE_COMMIT_SECONDS", numKnob(0.1, 86_400, false), 300, NEVER),
  redact: knob("OPENVIKING_REDACT", boolKnob, true, ON),
  writePathAsync: knob("OPENVIKING_WRITE_PATH_ASYNC", boolKnob, true, NEVER),
  debug: knob("OPENVIKING_DEBUG", boolKnob, false, OFF),
  debugLogPath: knob("OPENVIKING_DEBUG_LOG", pathKnob, "", NEVER),
};

/** Resolved knob values; `debugLogPath` "" = no log (no home). */
export type Settings = { [K in keyof typeof KNOBS]: ReturnType<(typeof KNOBS)[K]["parse"]> };
const shown = (value: unknown) => JSON.stringify(value) ?? String(value);
/** The first of `layers` that sets `name` (null counts as unset). */
function firstSetting(layers: [string, JsonRecord][], name: string) {
  const layer = layers.find(([, l]) => l[name] !== undefined && l[name] !== null);
  return layer && { value: layer[1][name], where: `${layer[0]} "${name}"` };
}

/** Every knob: env, else ovcli.conf `plugin.kimicode`, else default; then a workspace file's, as allowed. */
export function resolveSettings(
  sources: Pick<ConfigSources, "env" | "ovcli" | "workspace">,
  warnings: string[] = [],
): Settings {
  const shared = asRecord(asRecord(sources.ovcli).plugin);
  const userLayers: [string, JsonRecord][] = [
    ["ovcli.conf plugin.kimicode", asRecord(shared.kimicode)],
    ["ovcli.conf plugin", stricterOnly(shared, warnings)],
  ];
  const workspace = (sources.workspace ?? []).map((w): [string, JsonRecord] => [w.path, asRecord(w.value)]);
  const settings: JsonRecord = {};
  for (const [name, k] of Object.entries(KNOBS) as [string, ReturnType<typeof knob<unknown>>][]) {
    const env = sources.env[k.env]?.trim() ? { value: sources.env[k.env], where: k.env } : undefined;
    const user = env ?? firstSetting(userLayers, name);
    const asked = env ? undefined : firstSetting(workspace, name);
    let value = Array.isArray(k.default) ? [...k.default] : k.default;
    for (const [layer, bad] of [[user, "using the default"], [asked, "ignored"]] as const) {
      if (!layer) continue;
      let parsed;
      try {
        parsed = k.parse(layer.value);
      } catch (error) {
        const why = `invalid value ${shown(layer.value)} (${(error as Error).message}); ${bad}`;
        warnings.push(`${layer.where}: ${why}`);
        continue;
      }
      if (layer === asked && !k.workspace.allows(parsed, value)) {
        const may = k.workspace.may ? `may only ${k.workspace.may}` : "may not set it";
        warnings.push(`${asked.where}: ${shown(asked.value)} is ignored: a workspace file ${may}`);
      } else value = parsed;
    }
    settings[name] = value;
  }
  const knobs = settings as Settings;
  return { ...knobs, debugLogPath: debugLogPath(knobs.debugLogPath, sources.env, warnings) };
}

/** The switches ovcli.conf's shared `plugin` section turns off (stricter is always allowed); each knob a warning. */
function stricterOnly(shared: JsonRecord, warnings: string[]): JsonRecord {
  const kept: JsonRecord = {};
  for (const [name, value] of Object.entries(shared)) {
    if (!(name in KNOBS)) continue;
    const off = ["enabled", "autoRecall", "autoCapture"].includes(name) &&
      (value === false ||
        (typeof value === "string" && BOOL_WORDS.get(value.trim().toLowerCase()) === false));
    if (off) kept[name] = false;
    const fate = off ? "its false is honoured (stricter)" : "ignored";
    warnings.push(`ovcli.conf plugin "${name}" is read from plugin.kimicode only: move it there (${fate})`);
  }
  return kept;
}

/** The log path: the knob if absolute, else the default; "" = no home. */
function debugLogPath(knob: string, env: Env, warnings: string[]): string {
  const explicit = paths.absoluteOverride(knob, env);
  if (knob && !explicit) warnings.push(`debug log path "${knob}" is not an absolute path; using the default`);
  return explicit ?? paths.orNoHome(() => paths.defaultLogPath(env)) ?? "";
}

/** Everything a command needs. */
export type Config = Credentials & Settings & { userAgent: string };
type Resolved = { config: Config; warnings: string[] };
const WORKSPACE_FORBIDDEN = ["url", "api_key", "apiKey", "baseUrl", "mcpUrl", "account", "user", "peerId"];
/** Pure resolution of the full config from its sources. */
export function resolveConfig(sources: ConfigSources): Resolved {
  const removed = REMOVED.filter((name) => sources.env[name]?.trim());
  const warnings = removed.length ? [`no longer read (README: Configuration): ${removed.join(", ")}`] : [];
  const credentials = resolveCredentials(sources, warnings);
  const settings = resolveSettings(sources, warnings);
  return { config: { ...credentials, ...settings, userAgent: USER_AGENT }, warnings };
}

/** Paths of ovcli.conf and ov.conf: absolute overrides, else under OpenViking's home ("" = no home). */
export function credentialFilePaths(env: Env): { cli: string; ov: string } {
  const inHome = (name: string) =>
    paths.orNoHome(() => paths.joinPath(paths.openVikingHome(env), name)) ?? "";
  return {
    cli: paths.absoluteOverride(env.OPENVIKING_CLI_CONFIG_FILE, env) ?? inHome("ovcli.conf"),
    ov: paths.absoluteOverride(env.OPENVIKING_CONFIG_FILE, env) ?? inHome("ov.conf"),
  };
}

/** A JSON file's value; undefined when it is missing, unreadable (a warning) or not JSON (a warning). */
function readJsonFile(path: string, warnings: string[]): unknown {
  try {
    const text = path ? readRegularTextSync(path, SMALL_FILE_MAX_BYTES) : undefined;
    const value = parseJsonOrUndefined(text);
    if (text !== undefined && value === undefined) warnings.push(`${path} is not valid JSON; ignoring it`);
    return value;
  } catch (error) {
    warnings.push(`cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Workspace settings files of an absolute `cwd`, nearest first, without connection fields (each warned of). */
function readWorkspace(cwd: string | undefined, warnings: string[]): ConfigSources["workspace"] {
  if (!cwd || !paths.isAbsolutePath(cwd)) return [];
  const out: { path: string; value: unknown }[] = [];
  for (const name of ["config.local.json", "config.json"]) {
    const path = paths.joinPath(cwd, ".openviking", name);
    const value = readJsonFile(path, warnings);
    if (value === undefined) continue;
    const o = { ...asRecord(value) };
    for (const k of WORKSPACE_FORBIDDEN.filter((k) => k in o)) {
      warnings.push(
        `${path}: "${k}" is ignored (a workspace file may not set it); put it in ~/.openviking/ovcli.conf`,
      );
      delete o[k];
    }
    out.push({ path, value: o });
  }
  return out;
}

/** Reads the credential and workspace files and resolves the config; without a home, no workspace file. */
export function loadConfig(env: Env, cwd?: string): Promise<Resolved> {
  return settled(() => {
    const warnings: string[] = paths.ignoredOverrides(env).map((o) =>
      `${o} is not an absolute path; ignored`
    );
    const { cli: cliConfigPath, ov: ovConfigPath } = credentialFilePaths(env);
    const [ovcli, ovconf] = [readJsonFile(cliConfigPath, warnings), readJsonFile(ovConfigPath, warnings)];
    const workspace = paths.noHomeReason(env) ? [] : readWorkspace(cwd, warnings);
    const resolved = resolveConfig({ env, ovcli, cliConfigPath, ovconf, ovConfigPath, workspace });
    return { config: resolved.config, warnings: [...warnings, ...resolved.warnings] };
  });
}
