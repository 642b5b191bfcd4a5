/** The local ledger: one JSON line per hook run that did something, per Kimi session (`<session>.jsonl`). */

import * as z from "zod/mini";
import type { Config } from "../openviking/config.ts";
import { causeOf, CauseSchema } from "../openviking/advice.ts";
import type { OvFailure } from "../openviking/client.ts";
import { isRecord, tolerant } from "../lib/parsed.ts";
import {
  ensurePrivateDir,
  listDir,
  openAppendSync,
  parseJsonOrUndefined,
  readTextIfExists,
  removeAged,
} from "../lib/fs.ts";
import { stillAtPath } from "../lib/lock.ts";
import { cutText } from "../lib/neutralize.ts";
import { dirName, type Env, joinPath, ledgerDir, orNoHome, safeId } from "../lib/paths.ts";
import { hasTrait } from "../kimi/hooks.ts";
import type { HookContext, HookResult } from "./context.ts";
import { ShownSchema } from "./memory.ts";

const SNIPPET_CHARS = 80;
/** Most memories listed per prompt entry (the rest are counted). */
const MAX_LISTED = 20;
const SESSION_SHARE = 1 / 32;
const MIN_SESSION_BYTES = 64 * 1024;

const Run = { at: z.number(), ms: z.number() };
/** Lenient fields: what a handler's report leaves out (or a line holds of another shape) reads as empty. */
const num = z.catch(z.number(), 0);
const Cause = tolerant(CauseSchema);
const Counts = { rejected: num, cause: Cause };
const CommitTasks = z.array(z.object({ sessionId: z.string(), taskId: z.string() }));
const Delivered = z.array(z.object({ sessionId: z.string(), messages: z.number() }));
/** The server a run's writes went to, and whose (`account/user` as configured, `""`: the key's own). */
export const OriginSchema = z.object({ url: z.string(), who: z.string() });
export type Origin = z.infer<typeof OriginSchema>;

const PromptEntrySchema = z.object({
  kind: z.literal("prompt"),
  ...Run,
  prompt: z.string(),
  /** The recall stage that answered: context, reused, paused, none (nothing asked, or failed) or skipped. */
  path: z.string(),
  injected: z.array(ShownSchema),
  suppressed: z.array(z.string()),
  more: z.optional(z.number()),
  printedChars: z.number(),
  failure: z.optional(CauseSchema),
});
export type PromptEntry = z.infer<typeof PromptEntrySchema>;

const CaptureEntrySchema = z.object({
  kind: z.literal("capture"),
  ...Run,
  ...Counts,
  event: z.string(),
  turns: num,
  sent: num,
  queued: num,
  commit: z.catch(z.string(), "none"),
  taskId: tolerant(z.string()),
  origin: tolerant(OriginSchema),
});
export type CaptureEntry = z.infer<typeof CaptureEntrySchema>;

/** What one queue replay did for this session (or, in the `_replay` file, for every session). */
const ReplayEntrySchema = z.object({
  kind: z.literal("replay"),
  ...Run,
  ...Counts,
  replayed: num,
  messages: num,
  commitTasks: z.catch(CommitTasks, []),
  delivered: tolerant(Delivered),
  origin: tolerant(OriginSchema),
});
export type ReplayEntry = z.infer<typeof ReplayEntrySchema>;

export const LedgerEntrySchema = z.discriminatedUnion("kind", [
  PromptEntrySchema,
  CaptureEntrySchema,
  ReplayEntrySchema,
]);
export type LedgerEntry = z.infer<typeof LedgerEntrySchema>;

/** Where replays that span sessions are recorded (a name no session id can have). */
export const REPLAY_FILE = "_replay";

/** The ledger's bounds: all sessions' bytes together (each at most 1/32), and the age a file is dropped at. */
const LEDGER_LIMITS = { ledgerMaxBytes: 8 * 1024 * 1024, ledgerMaxAgeDays: 30 };
type LedgerLimits = typeof LEDGER_LIMITS;

type Writer = Pick<Config, "baseUrl" | "account" | "user">;

/** The origin of the writes made with `config`. */
export const originOf = (config: Writer): Origin => ({
  url: config.baseUrl,
  who: config.account || config.user ? `${config.account}/${config.user}` : "",
});

/** `entry` with the origin of its writes (a capture's or a replay's; a prompt writes nothing). */
const stamped = (entry: LedgerEntry, config: Writer): LedgerEntry =>
  entry.kind === "prompt" ? entry : { ...entry, origin: originOf(config) };

/** The bytes one session's file may hold. */
export const sessionBudget = (limits: LedgerLimits): number =>
  Math.max(MIN_SESSION_BYTES, Math.floor(limits.ledgerMaxBytes * SESSION_SHARE));

/** The path of a session's ledger (`name` already file-name safe). */
export const ledgerFile = (dir: string, name: string): string => joinPath(dir, `${name}.jsonl`);

/** A short, single-line snippet of an (already redacted) prompt. */
export const snippet = (text: string): string =>
  cutText(text.replace(/\s+/g, " ").trim(), SNIPPET_CHARS, "…", "any");

/** The file a session's ledger is renamed to past its budget (the older one replaced). */
const rotatedFile = (dir: string, name: string): string => joinPath(dir, `${name}.1.jsonl`);

/** Appends `entry` to `name`'s ledger, renamed to its `.1` file past its budget; false when it could not write. */
export async function appendLedger(
  dir: string,
  name: string,
  entry: LedgerEntry,
  limits = LEDGER_LIMITS,
): Promise<boolean> {
  const [path, line] = [ledgerFile(dir, name), new TextEncoder().encode(`${JSON.stringify(entry)}\n`)];
  try {
    await ensurePrivateDir(dir);
    const file = openAppendSync(path) ?? openAppendSync(path);
    if (!file) return false;
    try {
      file.writeSync(line); // one O_APPEND write: a line never mixes with another writer's
      if (file.statSync().size > sessionBudget(limits) && stillAtPath(file, path)) {
        Deno.renameSync(path, rotatedFile(dir, name));
      }
    } finally {
      file.close();
    }
    return true;
  } catch {
    return false;
  }
}

/** `name`'s parseable ledger entries, its `.1` file's first (ARCHITECTURE decision 40). */
export async function readLedger(dir: string, name: string): Promise<LedgerEntry[]> {
  const read = (path: string) => readTextIfExists(path, LEDGER_LIMITS.ledgerMaxBytes).catch(() => "");
  const text = `${await read(rotatedFile(dir, name)) ?? ""}\n${await read(ledgerFile(dir, name)) ?? ""}`;
  return text.split("\n").flatMap((line) =>
    LedgerEntrySchema.safeParse(parseJsonOrUndefined(line)).data ?? []
  );
}

/** Whether `name` has a ledger in `dir`: its file, or only its `.1` just after a rotation. */
export async function hasLedger(dir: string, name: string): Promise<boolean> {
  const there = (path: string) => Deno.stat(path).then(() => true, () => false);
  return await there(ledgerFile(dir, name)) || await there(rotatedFile(dir, name));
}

/** The sessions' ledgers in `dir`, newest first: `{name, mtime, size}` (a session's `.1` file counted in). */
export async function ledgerFiles(dir: string) {
  const by = new Map<string, { name: string; mtime: number; size: number }>();
  for (const e of await listDir(dir)) {
    const info = e.isFile && e.name.endsWith(".jsonl")
      ? await Deno.stat(joinPath(dir, e.name)).catch(() => undefined)
      : undefined;
    if (!info) continue;
    const name = e.name.slice(0, -".jsonl".length).replace(/\.1$/, "");
    const { mtime, size } = by.get(name) ?? { mtime: 0, size: 0 };
    by.set(name, { name, mtime: Math.max(mtime, info.mtime?.getTime() ?? 0), size: size + info.size });
  }
  return [...by.values()].sort((a, b) => b.mtime - a.mtime);
}

/** Drops ledger files untouched for `ledgerMaxAgeDays`, then the oldest past `ledgerMaxBytes`; how many. */
export async function pruneLedger(dir: string, limits = LEDGER_LIMITS, now = Date.now()): Promise<number> {
  let removed = await removeAged(
    dir,
    { name: /\.jsonl$/, ageMs: () => limits.ledgerMaxAgeDays * 864e5 },
    now,
  );
  let total = 0;
  for (const f of await ledgerFiles(dir)) {
    if (total + f.size <= limits.ledgerMaxBytes) total += f.size;
    else {
      await Deno.remove(rotatedFile(dir, f.name)).catch(() => {});
      await Deno.remove(ledgerFile(dir, f.name)).then(() => removed++, () => {});
    }
  }
  return removed;
}

const PromptData = z.object({
  recall: z.catch(z.string(), "skipped"),
  injected: z.catch(z.array(ShownSchema), []),
  suppressed: z.catch(z.array(z.string()), []),
  printedChars: z.optional(z.number()),
  failure: Cause,
});

type Timing = { startedAt: number; now: number };

/** The replay entry of a replay's report, or undefined when it sent and met nothing (pure). */
export function replayEntryOf(report: unknown, timing: Timing): LedgerEntry | undefined {
  const r = isRecord(report) ? report : {};
  // A capture's backlog report carries the client's failure as it is.
  const c = r.cause;
  const failed = isRecord(c) && isRecord(c.error) ? causeOf(c as unknown as OvFailure) : c;
  const run = { kind: "replay", at: timing.startedAt, ms: timing.now - timing.startedAt, cause: failed };
  const { cause, ...counts } = ReplayEntrySchema.parse({ ...r, ...run });
  return counts.replayed || counts.rejected || cause ? { ...counts, ...(cause ? { cause } : {}) } : undefined;
}

/** The ledger entry of one hook run, or undefined when it did nothing worth recording (pure). */
export function ledgerEntryOf(
  ctx: { event: string },
  result: HookResult,
  timing: Timing,
): LedgerEntry | undefined {
  const base = { at: timing.startedAt, ms: timing.now - timing.startedAt };
  const data = result.data ?? {};
  if (ctx.event === "user-prompt-submit") {
    if (["duplicate", "recall-off", "probe"].includes(result.outcome)) return undefined;
    const d = PromptData.parse(data);
    const more = Math.max(0, d.injected.length - MAX_LISTED) + Math.max(0, d.suppressed.length - MAX_LISTED);
    return {
      kind: "prompt",
      ...base,
      prompt: snippet(result.query ?? ""),
      path: d.recall,
      injected: d.injected.slice(0, MAX_LISTED),
      suppressed: d.suppressed.slice(0, MAX_LISTED),
      ...(more ? { more } : {}),
      printedChars: d.printedChars ?? (result.stdout ?? "").length,
      ...(d.failure ? { failure: d.failure } : {}),
    };
  }
  if (result.outcome === "replayed") return replayEntryOf(data, timing);
  const fromPrompts = result.outcome === "no-journal" && Number(data.fallback) > 0;
  if (result.outcome !== "captured" && !fromPrompts) return undefined;
  const { cause, ...counts } = CaptureEntrySchema.parse({
    ...data,
    kind: "capture",
    ...base,
    event: ctx.event,
  });
  return { ...counts, ...(cause ? { cause } : {}) };
}

/** Appends a replay's entry to the replay ledger unless it sent and met nothing; false when it could not. */
export async function recordReplay(
  env: Env,
  config: Writer,
  report: unknown,
  startedAt: number,
): Promise<boolean> {
  const entry = replayEntryOf(report, { startedAt, now: Date.now() });
  const dir = orNoHome(() => ledgerDir(env));
  return !entry || (dir !== undefined && await appendLedger(dir, REPLAY_FILE, stamped(entry, config)));
}

/** Appends the run's entry to its session's ledger (a replay's to the replay one); `event`: what it names. */
export async function recordRun(
  ctx: HookContext,
  result: HookResult,
  startedAt: number,
  event: string = ctx.event,
): Promise<void> {
  const entry = ledgerEntryOf({ event }, result, { startedAt, now: Date.now() });
  const dir = orNoHome(() => ledgerDir(ctx.env));
  // A capture's state directory gone since (its run made it): a purge ran meanwhile, nothing more is written.
  const captures = hasTrait(ctx.event, "captures") && ctx.config.autoCapture && ctx.capturePaths;
  const state = captures && dirName(captures.file);
  if (!dir || state && !await Deno.stat(state).then(() => true, () => false)) return;
  const backlog = !result.data?.backlog ||
    await recordReplay(ctx.env, ctx.config, result.data.backlog, startedAt);
  const name = entry?.kind === "replay" ? REPLAY_FILE : ctx.hostSessionId && await safeId(ctx.hostSessionId);
  const written = !entry || !name || await appendLedger(dir, name, stamped(entry, ctx.config));
  if (backlog && written) return;
  ctx.log.stage("ledger-unwritable", { dir });
  await ctx.log.flush();
}
