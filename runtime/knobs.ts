/**
 * Every behaviour knob, defined once: its environment variable, its parser and its default. A knob's value
 * comes from the environment, then the workspace files, then ovcli.conf's `plugin.kimicode` section, then its
 * `plugin` section, then the default. A bad value never crashes anything: it is reported as a warning and
 * replaced by its default.
 *
 * The parsers are small hand checks, not zod schemas: the table is resolved on every hook run, and building
 * ~40 zod/mini schemas at import was ~4 ms of the prompt hook's start in a lazily compiled bundle (0–1.5 ms
 * once the program copy compiles up front: docs/BENCHMARKS.md). Their words are the ones parsed.ts gives
 * zod's issues ("expected number", "must be at most 100"); tests/runtime/knobs_test.ts pins them.
 */

import { asRecord, type JsonRecord } from "./parsed.ts";
import { absoluteOverride, defaultLogPath, type Env, orNoHome } from "./paths.ts";

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

/** One knob: its environment variable, its parser and its default (undefined: unset unless configured). */
export interface Knob<T, D extends T | undefined = T> {
  env: string;
  parse: Parser<T>;
  default: D;
}

/** A knob with a default. */
function knob<T>(env: string, parse: Parser<T>, fallback: T): Knob<T, T> {
  return { env, parse, default: fallback };
}

/** A knob that is unset unless configured. */
function optionalKnob<T>(env: string, parse: Parser<T>): Knob<T, undefined> {
  return { env, parse, default: undefined };
}

/** Every knob: its environment variable, its parser and its default. The single source of truth. */
export const KNOBS = {
  enabled: knob("OPENVIKING_MEMORY_ENABLED", boolKnob, true),
  autoRecall: knob("OPENVIKING_AUTO_RECALL", boolKnob, true),
  autoCapture: knob("OPENVIKING_AUTO_CAPTURE", boolKnob, true),
  workspacePeer: knob("OPENVIKING_WORKSPACE_PEER", boolKnob, true),
  peerSource: knob("OPENVIKING_PEER_SOURCE", enumKnob(["git", "cwd", "none"]), "git"),
  bypassSession: knob("OPENVIKING_BYPASS_SESSION", boolKnob, false),
  bypassSessionPatterns: knob("OPENVIKING_BYPASS_SESSION_PATTERNS", listKnob, []),
  recallLimit: knob("OPENVIKING_RECALL_LIMIT", numKnob(1, 100), 10),
  recallTokenBudget: knob("OPENVIKING_RECALL_TOKEN_BUDGET", numKnob(200, 100_000), 2000),
  recallMaxContentChars: knob("OPENVIKING_RECALL_MAX_CONTENT_CHARS", numKnob(50, 100_000), 500),
  scoreThreshold: knob("OPENVIKING_SCORE_THRESHOLD", numKnob(0, 1, false), 0.35),
  recallPreferAbstract: knob("OPENVIKING_RECALL_PREFER_ABSTRACT", boolKnob, true),
  recallPeerScope: knob("OPENVIKING_RECALL_PEER_SCOPE", enumKnob(["all", "actor"]), "all"),
  recallDedupTurns: knob("OPENVIKING_RECALL_DEDUP_TURNS", numKnob(0, 20), 5),
  recallMaxTokens: optionalKnob("OPENVIKING_RECALL_MAX_TOKENS", numKnob(64, 32_000)),
  recallQueryExpansion: optionalKnob("OPENVIKING_RECALL_QUERY_EXPANSION", enumKnob(["off", "auto"])),
  recallFormat: knob("OPENVIKING_RECALL_FORMAT", enumKnob(["digest", "full"]), "digest"),
  recallDigestLimit: knob("OPENVIKING_RECALL_DIGEST_LIMIT", numKnob(1, 50), 5),
  recallDigestChars: knob("OPENVIKING_RECALL_DIGEST_CHARS", numKnob(300, 32_000), 1200),
  minQueryLength: knob("OPENVIKING_MIN_QUERY_LENGTH", numKnob(0, 10_000), 3),
  timeoutMs: knob("OPENVIKING_TIMEOUT_MS", numKnob(1000, 600_000), 15_000),
  promptBudgetMs: knob("OPENVIKING_PROMPT_BUDGET_MS", numKnob(500, 600_000), 8000),
  interruptBudgetMs: knob("OPENVIKING_INTERRUPT_BUDGET_MS", numKnob(200, 600_000), 2000),
  replayBudgetMs: knob("OPENVIKING_REPLAY_BUDGET_MS", numKnob(200, 600_000), 10_000),
  captureWaitMs: knob("OPENVIKING_CAPTURE_WAIT_MS", numKnob(0, 600_000), 10_000),
  profileTokenBudget: knob("OPENVIKING_PROFILE_TOKEN_BUDGET", numKnob(500, 100_000), 6000),
  commitTurnThreshold: knob("OPENVIKING_COMMIT_TURN_THRESHOLD", numKnob(1, 100_000), 1),
  captureMaxLength: knob("OPENVIKING_CAPTURE_MAX_LENGTH", numKnob(100, 10_000_000), 24_000),
  redact: knob("OPENVIKING_REDACT", boolKnob, true),
  writePathAsync: knob("OPENVIKING_WRITE_PATH_ASYNC", boolKnob, true),
  pendingReplayLimit: knob("OPENVIKING_PENDING_REPLAY_LIMIT", numKnob(1, 100_000), 50),
  pendingMaxRetries: knob("OPENVIKING_PENDING_MAX_RETRIES", numKnob(1, 1000), 3),
  pendingTtlDays: knob("OPENVIKING_PENDING_TTL_DAYS", numKnob(1, 3650), 7),
  /** The local ledger (what hook runs did, for `status`): all sessions' files together, and their age. */
  ledgerMaxBytes: knob("OPENVIKING_LEDGER_MAX_BYTES", numKnob(64 * 1024, 1024 ** 3), 8 * 1024 * 1024),
  ledgerMaxAgeDays: knob("OPENVIKING_LEDGER_MAX_AGE_DAYS", numKnob(1, 3650), 30),
  /** The MCP tools offered to the model beyond memory's (`all`: every tool); a workspace file cannot set it. */
  mcpTools: knob("OPENVIKING_MCP_TOOLS", listKnob, ["memory"]),
  debug: knob("OPENVIKING_DEBUG", boolKnob, false),
  debugLogPath: optionalKnob("OPENVIKING_DEBUG_LOG", pathKnob),
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

/** Where knob values come from besides the environment. */
export interface SettingSources {
  env: Env;
  /** Parsed ovcli.conf, if it exists and parses. */
  ovcli?: unknown;
  /** Workspace settings objects, highest precedence first (`config.local.json`, then `config.json`). */
  workspace?: unknown[];
}

/** Each knob's configured value (the first layer that has one) and where it came from, for messages. */
function chosenValues(sources: SettingSources): { values: JsonRecord; from: Map<string, string> } {
  const plugin = asRecord(asRecord(sources.ovcli).plugin);
  const layers: [string, JsonRecord][] = [
    ...(sources.workspace ?? []).map((
      w,
      i,
    ): [string, JsonRecord] => [`workspace config #${i + 1}`, asRecord(w)]),
    ["ovcli.conf plugin.kimicode", asRecord(plugin.kimicode)],
    ["ovcli.conf plugin", plugin],
  ];
  const values: JsonRecord = {};
  const from = new Map<string, string>();
  const choose = (name: string, value: unknown, where: string) => {
    values[name] = value;
    from.set(name, where);
  };
  for (const [name, { env }] of Object.entries(KNOBS)) {
    const envValue = sources.env[env];
    const layer = layers.find(([, l]) => l[name] !== undefined && l[name] !== null);
    if (envValue !== undefined && envValue.trim() !== "") choose(name, envValue, env);
    else if (layer) choose(name, layer[1][name], `${layer[0]} "${name}"`);
  }
  return { values, from };
}

/**
 * Resolves every knob: env, then workspace files, then ovcli.conf `plugin.kimicode`, then `plugin`, then
 * default. Each chosen value is parsed by its knob; an invalid one is named in `warnings` (in the table's
 * order) and its default applies.
 */
export function resolveSettings(sources: SettingSources, warnings: string[] = []): Settings {
  const { values, from } = chosenValues(sources);
  const settings: JsonRecord = {};
  for (const [name, knob] of Object.entries(KNOBS) as [string, Knob<unknown, unknown>][]) {
    const parsed = name in values ? knob.parse(values[name]) : undefined;
    if (parsed && !parsed.ok) {
      const shown = JSON.stringify(values[name]) ?? String(values[name]);
      warnings.push(`${from.get(name)}: invalid value ${shown} (${parsed.reason}); using the default`);
      delete values[name];
    }
    const value = parsed?.ok ? parsed.value : Array.isArray(knob.default) ? [...knob.default] : knob.default;
    if (value !== undefined) settings[name] = value;
  }
  const knobs = settings as KnobValues;
  return {
    ...knobs,
    debugLogPath: debugLogPath(knobs.debugLogPath, sources.env, warnings),
    recallLimitConfigured: "recallLimit" in values,
    recallDedupTurnsConfigured: "recallDedupTurns" in values,
  };
}

/** The log path: the knob if it is absolute (`~` expanded), else `~/.openviking/logs/…`; "" = no log (no home). */
function debugLogPath(knob: string | undefined, env: Env, warnings: string[]): string {
  const explicit = absoluteOverride(knob, env);
  if (knob && !explicit) warnings.push(`debug log path "${knob}" is not an absolute path; using the default`);
  return explicit ?? orNoHome(() => defaultLogPath(env)) ?? "";
}
