/**
 * Every behaviour knob, defined once: its environment variable, its parser, its default, and what a workspace
 * file may do with it. A knob's value comes from the environment, then the workspace files, then ovcli.conf's
 * `plugin.kimicode` section, then its `plugin` section, then the default. A bad value never crashes
 * anything: it is reported as a warning and replaced by its default.
 *
 * A workspace file (`<repo>/.openviking/config*.json`) is anyone's repository: it may make memory stricter
 * (capture or recall off, a shorter capture or retention, redaction on), never weaker, and never choose where
 * data goes or who we are. Its value is taken only when its knob's rule allows it against the user's own
 * value (environment, ovcli.conf, or the default); else it is named in a warning and ignored.
 *
 * The parsers are small hand checks, not zod schemas: the table is resolved on every hook run, and building
 * ~40 zod/mini schemas at import was ~4 ms of the prompt hook's start in a lazily compiled bundle (0–1.5 ms
 * once the program copy compiles up front: docs/BENCHMARKS.md). Their words are the ones parsed.ts gives
 * zod's issues ("expected number", "must be at most 100"); tests/runtime/knobs_test.ts pins them.
 */

import { asRecord, type JsonRecord } from "../lib/parsed.ts";
import { absoluteOverride, defaultLogPath, type Env, orNoHome } from "../lib/paths.ts";

/** What a knob's parser made of a configured value: the value, or why it is unusable, in a few words. */
export type KnobParse<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A knob's parser: any configured value (a string from the environment, any JSON value from a file). */
type Parser<T> = (value: unknown) => KnobParse<T>;

const ok = <T>(value: T): KnobParse<T> => ({ ok: true, value });
const bad = (reason: string): KnobParse<never> => ({ ok: false, reason });

const BOOL_WORDS = new Map([
  ...["1", "true", "yes", "on"].map((w): [string, boolean] => [w, true]),
  ...["0", "false", "no", "off"].map((w): [string, boolean] => [w, false]),
]);

/** A boolean knob: accepts real booleans and the strings 1/0, true/false, yes/no, on/off. */
const boolKnob: Parser<boolean> = (raw) => {
  const v = typeof raw === "string" ? BOOL_WORDS.get(raw.trim().toLowerCase()) : raw;
  return typeof v === "boolean" ? ok(v) : bad("expected boolean");
};

/** A numeric knob within [min, max] (an integer unless `int` is false); strings are parsed. */
function numKnob(min: number, max: number, int = true): Parser<number> {
  return (raw) => {
    const v = typeof raw === "string" && raw.trim() !== "" ? Number(raw.trim()) : raw;
    if (typeof v !== "number" || !Number.isFinite(v)) return bad("expected number");
    if (int && !Number.isInteger(v)) return bad("expected int");
    if (int && v > Number.MAX_SAFE_INTEGER) return bad(`must be at most ${Number.MAX_SAFE_INTEGER}`);
    if (int && v < Number.MIN_SAFE_INTEGER) return bad(`must be at least ${Number.MIN_SAFE_INTEGER}`);
    if (v < min) return bad(`must be at least ${min}`);
    if (v > max) return bad(`must be at most ${max}`);
    return ok(v);
  };
}

/** An enumerated knob; matching is case-insensitive. */
function enumKnob<const T extends readonly [string, ...string[]]>(values: T): Parser<T[number]> {
  const words = `must be ${values.map((v) => JSON.stringify(v)).join(" or ")}`;
  return (raw) => {
    const v = typeof raw === "string" ? raw.trim().toLowerCase() : raw;
    return values.includes(v as string) ? ok(v as T[number]) : bad(words);
  };
}

/** A list knob: a comma-separated string or an array of strings. */
const listKnob: Parser<string[]> = (raw) => {
  if (typeof raw === "string") return ok(raw.split(",").map((s) => s.trim()).filter(Boolean));
  if (!Array.isArray(raw)) return bad("expected array");
  return raw.every((s) => typeof s === "string") ? ok([...raw]) : bad("expected string");
};

/** A path knob: a non-empty string. */
const pathKnob: Parser<string> = (raw) =>
  typeof raw !== "string" ? bad("expected string") : raw ? ok(raw) : bad("needs at least 1 character");

/**
 * What a workspace file may do with a knob: whether its value `asked` is allowed against the user's own
 * value, and the words for it (README's table and the warning for a value it does not allow say them).
 */
export interface WorkspaceRule {
  allows: (asked: unknown, user: unknown) => boolean;
  /** What a workspace file may do with the knob: "set it", "turn it off", "lower it"…; "" = nothing. */
  may: string;
}

/** Any value: the knob shapes what is shown, not what is kept, sent or to whom. */
const ANY: WorkspaceRule = { allows: () => true, may: "set it" };
/** No value: the knob decides who we are, where data goes, what the model may do, or when the user's data is dropped. */
const NEVER: WorkspaceRule = { allows: () => false, may: "" };
/** A value no higher than the user's: a shorter capture, retention or wait. */
const LOWER: WorkspaceRule = { allows: (asked, user) => Number(asked) <= Number(user), may: "lower it" };
/** A list holding every item of the user's: more sessions left alone. */
const ADD: WorkspaceRule = {
  allows: (asked, user) => (user as string[]).every((item) => (asked as string[]).includes(item)),
  may: "add to it",
};
/** The user's value, or `strict`: a switch only toward off (or on), a scope only toward the narrower. */
const toward = (strict: unknown, may: string): WorkspaceRule => ({
  allows: (asked, user) => asked === strict || asked === user,
  may,
});
const OFF = toward(false, "turn it off");
const ON = toward(true, "turn it on");

/** One knob: its environment variable, its parser, its default (undefined: unset unless configured), its rule. */
export interface Knob<T, D extends T | undefined = T> {
  env: string;
  parse: Parser<T>;
  default: D;
  workspace: WorkspaceRule;
}

/** A knob with a default. */
function knob<T>(env: string, parse: Parser<T>, fallback: T, workspace: WorkspaceRule): Knob<T, T> {
  return { env, parse, default: fallback, workspace };
}

/** A knob that is unset unless configured. */
function optionalKnob<T>(env: string, parse: Parser<T>, workspace: WorkspaceRule): Knob<T, undefined> {
  return { env, parse, default: undefined, workspace };
}

/**
 * Every knob: its environment variable, its parser, its default and what a workspace file may do with it.
 * The single source of truth.
 */
export const KNOBS = {
  enabled: knob("OPENVIKING_MEMORY_ENABLED", boolKnob, true, OFF),
  autoRecall: knob("OPENVIKING_AUTO_RECALL", boolKnob, true, OFF),
  autoCapture: knob("OPENVIKING_AUTO_CAPTURE", boolKnob, true, OFF),
  workspacePeer: knob("OPENVIKING_WORKSPACE_PEER", boolKnob, true, NEVER),
  peerSource: knob("OPENVIKING_PEER_SOURCE", enumKnob(["git", "cwd", "none"]), "git", NEVER),
  bypassSession: knob("OPENVIKING_BYPASS_SESSION", boolKnob, false, ON),
  bypassSessionPatterns: knob("OPENVIKING_BYPASS_SESSION_PATTERNS", listKnob, [], ADD),
  recallLimit: knob("OPENVIKING_RECALL_LIMIT", numKnob(1, 100), 10, ANY),
  recallTokenBudget: knob("OPENVIKING_RECALL_TOKEN_BUDGET", numKnob(200, 100_000), 2000, ANY),
  recallMaxContentChars: knob("OPENVIKING_RECALL_MAX_CONTENT_CHARS", numKnob(50, 100_000), 500, ANY),
  scoreThreshold: knob("OPENVIKING_SCORE_THRESHOLD", numKnob(0, 1, false), 0.35, ANY),
  recallPreferAbstract: knob("OPENVIKING_RECALL_PREFER_ABSTRACT", boolKnob, true, ANY),
  recallPeerScope: knob(
    "OPENVIKING_RECALL_PEER_SCOPE",
    enumKnob(["all", "actor"]),
    "all",
    toward("actor", 'set it to "actor"'),
  ),
  recallDedupTurns: knob("OPENVIKING_RECALL_DEDUP_TURNS", numKnob(0, 20), 5, ANY),
  recallMaxTokens: optionalKnob("OPENVIKING_RECALL_MAX_TOKENS", numKnob(64, 32_000), ANY),
  recallQueryExpansion: optionalKnob("OPENVIKING_RECALL_QUERY_EXPANSION", enumKnob(["off", "auto"]), ANY),
  recallFormat: knob("OPENVIKING_RECALL_FORMAT", enumKnob(["digest", "full"]), "digest", ANY),
  recallDigestLimit: knob("OPENVIKING_RECALL_DIGEST_LIMIT", numKnob(1, 50), 5, ANY),
  recallDigestChars: knob("OPENVIKING_RECALL_DIGEST_CHARS", numKnob(300, 32_000), 1200, ANY),
  minQueryLength: knob("OPENVIKING_MIN_QUERY_LENGTH", numKnob(0, 10_000), 3, ANY),
  timeoutMs: knob("OPENVIKING_TIMEOUT_MS", numKnob(1000, 600_000), 15_000, LOWER),
  promptBudgetMs: knob("OPENVIKING_PROMPT_BUDGET_MS", numKnob(500, 600_000), 8000, LOWER),
  interruptBudgetMs: knob("OPENVIKING_INTERRUPT_BUDGET_MS", numKnob(200, 600_000), 2000, LOWER),
  replayBudgetMs: knob("OPENVIKING_REPLAY_BUDGET_MS", numKnob(200, 600_000), 10_000, LOWER),
  captureWaitMs: knob("OPENVIKING_CAPTURE_WAIT_MS", numKnob(0, 600_000), 10_000, LOWER),
  profileTokenBudget: knob("OPENVIKING_PROFILE_TOKEN_BUDGET", numKnob(500, 100_000), 6000, ANY),
  commitTurnThreshold: knob("OPENVIKING_COMMIT_TURN_THRESHOLD", numKnob(1, 100_000), 1, ANY),
  captureMaxLength: knob("OPENVIKING_CAPTURE_MAX_LENGTH", numKnob(100, 10_000_000), 24_000, LOWER),
  redact: knob("OPENVIKING_REDACT", boolKnob, true, ON),
  writePathAsync: knob("OPENVIKING_WRITE_PATH_ASYNC", boolKnob, true, ANY),
  pendingReplayLimit: knob("OPENVIKING_PENDING_REPLAY_LIMIT", numKnob(1, 100_000), 50, ANY),
  pendingMaxRetries: knob("OPENVIKING_PENDING_MAX_RETRIES", numKnob(1, 1000), 3, NEVER),
  pendingTtlDays: knob("OPENVIKING_PENDING_TTL_DAYS", numKnob(1, 3650), 7, NEVER),
  /** The local ledger (what hook runs did, for `status`): all sessions' files together, and their age. */
  ledgerMaxBytes: knob("OPENVIKING_LEDGER_MAX_BYTES", numKnob(64 * 1024, 1024 ** 3), 8 * 1024 * 1024, LOWER),
  ledgerMaxAgeDays: knob("OPENVIKING_LEDGER_MAX_AGE_DAYS", numKnob(1, 3650), 30, LOWER),
  /** The MCP tools offered to the model beyond memory's (`all`: every tool): a power, not a repository's. */
  mcpTools: knob("OPENVIKING_MCP_TOOLS", listKnob, ["memory"], NEVER),
  debug: knob("OPENVIKING_DEBUG", boolKnob, false, OFF),
  debugLogPath: optionalKnob("OPENVIKING_DEBUG_LOG", pathKnob, NEVER),
};

type Knobs = typeof KNOBS;
/** The knobs that have a default, and those unset unless configured. */
type Defaulted = { [K in keyof Knobs]: Knobs[K]["default"] extends undefined ? never : K }[keyof Knobs];
type Optional = Exclude<keyof Knobs, Defaulted>;
type ValueOf<K extends keyof Knobs> = Knobs[K] extends { parse: Parser<infer T> } ? T : never;

/** Every knob's value: its configured value, else its default (an unset optional knob is absent). */
type KnobValues =
  & { [K in Defaulted]: ValueOf<K> }
  & { [K in Optional]?: ValueOf<K> };

/** Resolved knob values. */
export type Settings = Omit<KnobValues, "debugLogPath"> & {
  /** Where the debug log goes ("" = nowhere: there is no home). */
  debugLogPath: string;
  /** The recall limit was set by the user (only then does recall send quotas, like the other plugins). */
  recallLimitConfigured: boolean;
  /** The server-side dedupe window was set by the user (the digest sends it only then: see recall.ts). */
  recallDedupTurnsConfigured: boolean;
};

/** A workspace settings file: where it is, and its parsed value. */
export interface WorkspaceFile {
  path: string;
  value: unknown;
}

/** Where knob values come from besides the environment. */
export interface SettingSources {
  env: Env;
  /** Parsed ovcli.conf, if it exists and parses. */
  ovcli?: unknown;
  /** Workspace settings files, highest precedence first (`config.local.json`, then `config.json`). */
  workspace?: WorkspaceFile[];
}

/** A configured value and where it came from, for messages. */
interface Configured {
  value: unknown;
  where: string;
}

/** A value as a warning shows it. */
const shown = (value: unknown) => JSON.stringify(value) ?? String(value);

/** The first of `layers` that sets `name` (null counts as unset). */
function firstSetting(layers: [string, JsonRecord][], name: string): Configured | undefined {
  const layer = layers.find(([, l]) => l[name] !== undefined && l[name] !== null);
  return layer && { value: layer[1][name], where: `${layer[0]} "${name}"` };
}

/**
 * Resolves every knob. The user's value: the environment, else ovcli.conf `plugin.kimicode`, else `plugin`,
 * else the default. Then, unless the environment set it, the first workspace file that sets the knob, if
 * the knob's rule allows that value against the user's. Each value is parsed by its knob; an invalid or
 * disallowed one is named in `warnings` (in the table's order) and not used.
 */
export function resolveSettings(sources: SettingSources, warnings: string[] = []): Settings {
  const plugin = asRecord(asRecord(sources.ovcli).plugin);
  const userLayers: [string, JsonRecord][] = [
    ["ovcli.conf plugin.kimicode", asRecord(plugin.kimicode)],
    ["ovcli.conf plugin", plugin],
  ];
  const workspace = (sources.workspace ?? []).map((w): [string, JsonRecord] => [w.path, asRecord(w.value)]);
  const settings: JsonRecord = {};
  const configured = new Set<string>();
  for (const [name, knob] of Object.entries(KNOBS) as [string, Knob<unknown, unknown>][]) {
    const envValue = sources.env[knob.env];
    const fromEnv = envValue !== undefined && envValue.trim() !== "";
    const user = fromEnv ? { value: envValue, where: knob.env } : firstSetting(userLayers, name);
    let value = Array.isArray(knob.default) ? [...knob.default] : knob.default;
    const take = (v: unknown) => {
      value = v;
      configured.add(name);
    };
    const parsed = user && knob.parse(user.value);
    if (parsed?.ok) take(parsed.value);
    else if (user && parsed) {
      warnings.push(
        `${user.where}: invalid value ${shown(user.value)} (${parsed.reason}); using the default`,
      );
    }
    const asked = fromEnv ? undefined : firstSetting(workspace, name);
    const wanted = asked && knob.parse(asked.value);
    if (asked && wanted && !wanted.ok) {
      warnings.push(`${asked.where}: invalid value ${shown(asked.value)} (${wanted.reason}); ignored`);
    } else if (asked && wanted?.ok && !knob.workspace.allows(wanted.value, value)) {
      const may = knob.workspace.may ? `may only ${knob.workspace.may}` : "may not set it";
      warnings.push(`${asked.where}: ${shown(asked.value)} is ignored: a workspace file ${may}`);
    } else if (wanted?.ok) take(wanted.value);
    if (value !== undefined) settings[name] = value;
  }
  const knobs = settings as KnobValues;
  return {
    ...knobs,
    debugLogPath: debugLogPath(knobs.debugLogPath, sources.env, warnings),
    recallLimitConfigured: configured.has("recallLimit"),
    recallDedupTurnsConfigured: configured.has("recallDedupTurns"),
  };
}

/** The log path: the knob if it is absolute (`~` expanded), else `~/.openviking/logs/…`; "" = no log (no home). */
function debugLogPath(knob: string | undefined, env: Env, warnings: string[]): string {
  const explicit = absoluteOverride(knob, env);
  if (knob && !explicit) warnings.push(`debug log path "${knob}" is not an absolute path; using the default`);
  return explicit ?? orNoHome(() => defaultLogPath(env)) ?? "";
}
