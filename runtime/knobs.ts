/**
 * Every behaviour knob, defined once: its environment variable, its schema and its default. A knob's value
 * comes from the environment, then the workspace files, then ovcli.conf's `plugin.kimicode` section, then its
 * `plugin` section, then the default. The knobs together are one zod/mini object schema, parsed once per
 * resolution; a bad value never crashes anything: it is reported as a warning and replaced by its default.
 */

import * as z from "zod/mini";
import { asRecord, issueText, type JsonRecord } from "./parsed.ts";
import { absoluteOverride, type Env, joinPath, openVikingHome, orNoHome } from "./paths.ts";

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

/** A knob with a default: its field of the settings schema, carrying its variable, schema and default. */
function knob<S extends z.ZodMiniType>(
  env: string,
  schema: S,
  fallback: z.core.util.NoUndefined<z.output<S>>,
) {
  return Object.assign(z._default(schema, fallback), { env, schema, default: fallback });
}

/** A knob that is unset unless configured. */
function optionalKnob<S extends z.ZodMiniType>(env: string, schema: S) {
  return Object.assign(z.optional(schema), { env, schema, default: undefined });
}

/** Every knob: its environment variable, its schema and its default. The single source of truth. */
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
  promptBudgetMs: knob("OPENVIKING_PROMPT_BUDGET_MS", numKnob(500, 600_000), 17_000),
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
  debug: knob("OPENVIKING_DEBUG", boolKnob, false),
  debugLogPath: optionalKnob("OPENVIKING_DEBUG_LOG", pathKnob),
};

/** The one schema of the knobs: each field the knob's value, or its default when it is not given. */
const SettingsSchema = z.object(KNOBS);

/** Resolved knob values. */
export type Settings = Omit<z.output<typeof SettingsSchema>, "debugLogPath"> & {
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
 * default. One parse of the chosen values; when some are invalid, each is named in `warnings` and the
 * others are parsed again without them (their defaults apply).
 */
export function resolveSettings(sources: SettingSources, warnings: string[] = []): Settings {
  const { values, from } = chosenValues(sources);
  let parsed = SettingsSchema.safeParse(values);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0]);
      if (!(name in values)) continue;
      const shown = JSON.stringify(values[name]) ?? String(values[name]);
      warnings.push(`${from.get(name)}: invalid value ${shown} (${issueText(issue)}); using the default`);
      delete values[name];
    }
    parsed = SettingsSchema.safeParse(values);
  }
  const settings = parsed.success ? parsed.data : SettingsSchema.parse({});
  return {
    ...settings,
    debugLogPath: debugLogPath(settings.debugLogPath, sources.env, warnings),
    recallLimitConfigured: "recallLimit" in values,
    recallDedupTurnsConfigured: "recallDedupTurns" in values,
  };
}

/** The log path: the knob if it is absolute (`~` expanded), else `~/.openviking/logs/…`; "" = no log (no home). */
function debugLogPath(knob: string | undefined, env: Env, warnings: string[]): string {
  const explicit = absoluteOverride(knob, env);
  if (knob && !explicit) warnings.push(`debug log path "${knob}" is not an absolute path; using the default`);
  return explicit ?? orNoHome(() => joinPath(openVikingHome(env), "logs", "kimicode-hooks.log")) ?? "";
}
