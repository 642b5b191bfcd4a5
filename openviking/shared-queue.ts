/**
 * The shared offline queue of OpenViking's plugins (`~/.openviking/pending/`): one file
 * `<sha256 dedupe key>_<retries>.json` per write, `{type, sessionId, payload, createdAt, retries, dedupKey}`.
 * This plugin no longer writes here (its own queue is `pending.ts`); it replays what other plugins and older
 * versions left. Replay claims a file by renaming it to `.processing`, so only one process ever sends an entry;
 * only OpenViking's own rejection drops one, and a failure never spends a retry.
 */

import * as z from "zod/mini";
import { isNotFound } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure, type OvResponse } from "./client.ts";
import { sessionPath } from "./deliver.ts";
import { ABANDONED_AFTER_MS, FUTURE_SLACK_MS } from "./queue-files.ts";

/** One queued write. */
export const SharedEntrySchema = z.object({
  type: z.enum(["addMessage", "commitSession"]),
  sessionId: z.string().check(z.minLength(1)),
  payload: z.unknown(),
  createdAt: z.number(),
  retries: z.catch(z.int().check(z.nonnegative()), 0),
  dedupKey: z.optional(z.string()),
});
export type SharedEntry = z.infer<typeof SharedEntrySchema>;

const ENTRY_NAME = /^([0-9a-f]{64})_(\d+)\.(json|processing)$/;

/** A queued entry as found on disk. */
export interface SharedFile {
  name: string;
  key: string;
  entry: SharedEntry;
}

/** Lists parseable `.json` entries, oldest first. Unparseable files older than a minute are deleted. */
export async function listShared(dir: string): Promise<SharedFile[]> {
  const out: SharedFile[] = [];
  let names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isFile) names.push(e.name);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  names = names.sort();
  for (const name of names) {
    const m = ENTRY_NAME.exec(name);
    if (!m || m[3] !== "json") continue;
    const path = joinPath(dir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(await Deno.readTextFile(path));
    } catch (error) {
      if (isNotFound(error)) continue;
      const info = await Deno.stat(path).catch(() => undefined);
      if (info?.mtime && Date.now() - info.mtime.getTime() > 60_000) await Deno.remove(path).catch(() => {});
      continue;
    }
    const parsed = SharedEntrySchema.safeParse(raw);
    if (!parsed.success) continue;
    out.push({
      name,
      key: m[1],
      entry: { ...parsed.data, retries: Math.max(parsed.data.retries, Number(m[2])) },
    });
  }
  return out.sort((a, b) => a.entry.createdAt - b.entry.createdAt || (a.name < b.name ? -1 : 1));
}

/** Puts `.processing` files abandoned for longer than `ABANDONED_AFTER_MS` back into the queue. */
async function recoverAbandonedShared(dir: string, now = Date.now()): Promise<number> {
  let recovered = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = ENTRY_NAME.exec(e.name);
      if (!m || m[3] !== "processing") continue;
      const path = joinPath(dir, e.name);
      const info = await Deno.stat(path).catch(() => undefined);
      if (!info?.mtime) continue;
      const age = now - info.mtime.getTime();
      if (age <= ABANDONED_AFTER_MS && -age <= FUTURE_SLACK_MS) continue;
      await Deno.rename(path, joinPath(dir, `${m[1]}_${m[2]}.json`)).then(() => recovered++, () => {});
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return recovered;
}

/** Limits of one replay run. */
export interface SharedReplayOptions {
  /** At most this many entries are sent per run. */
  limit: number;
  /** Entries whose retries (spent by other plugins' replays) reached this are dropped. */
  maxRetries: number;
  /** Entries older than this are dropped. */
  ttlDays: number;
  budget: Budget;
  now?: number;
}

/** What a replay run did. */
export interface SharedReplayReport {
  replayed: number;
  /** Entries dropped: rejected by OpenViking, retries spent elsewhere, or too old. */
  dropped: number;
  /** Entries left for a later run (limit, budget, a failure, or a session busy elsewhere). */
  deferred: number;
  /** The failure that stopped the run, if any. */
  cause?: OvFailure;
}

/** Sends one queued write. */
function sendEntry(
  client: OpenVikingClient,
  entry: SharedEntry,
  budget: Budget,
): Promise<OvResponse<unknown>> {
  const path = `${sessionPath(entry.sessionId)}/${entry.type === "commitSession" ? "commit" : "messages"}`;
  return client.request("POST", path, AnyResult, { body: entry.payload ?? {}, budget, peerId: null });
}

/**
 * Replays the shared queue oldest first, bounded in count and time. A failure that is not OpenViking's
 * rejection puts the entry back untouched and stops the run, so order is kept and nothing is spent.
 */
export async function replayShared(
  dir: string,
  client: OpenVikingClient,
  options: SharedReplayOptions,
): Promise<SharedReplayReport> {
  const report: SharedReplayReport = { replayed: 0, dropped: 0, deferred: 0 };
  const now = options.now ?? Date.now();
  await recoverAbandonedShared(dir, now);
  const ttlMs = options.ttlDays * 86_400_000;
  const queue: SharedFile[] = [];
  for (const f of await listShared(dir)) {
    if (now - f.entry.createdAt > ttlMs || f.entry.retries >= options.maxRetries) {
      await Deno.remove(joinPath(dir, f.name)).then(() => report.dropped++, () => {});
    } else queue.push(f);
  }
  // While another run holds a write of a session (sending it now, or killed while doing so), that session's
  // later writes stay queued: the server sees each session's writes in order.
  const claimed = await claimedSessions(dir);
  let waiting = 0;
  let i = 0;
  for (; i < queue.length; i++) {
    if (i >= options.limit || options.budget.remaining() < 100) break;
    const f = queue[i];
    if (f.entry.createdAt > (claimed.get(f.entry.sessionId) ?? Infinity)) {
      waiting++;
      continue;
    }
    const processing = joinPath(dir, f.name.replace(/\.json$/, ".processing"));
    try {
      await Deno.rename(joinPath(dir, f.name), processing);
    } catch {
      waiting++;
      claimed.set(f.entry.sessionId, Math.min(f.entry.createdAt, claimed.get(f.entry.sessionId) ?? Infinity));
      continue;
    }
    const res = await sendEntry(client, f.entry, options.budget);
    if (res.ok || res.kind === "rejected") {
      await Deno.remove(processing).catch(() => {});
      if (res.ok) report.replayed++;
      else report.dropped++;
      continue;
    }
    report.cause = res;
    await Deno.rename(processing, joinPath(dir, f.name)).catch(() => {});
    break;
  }
  report.deferred = queue.length - i + waiting;
  return report;
}

/** Number of entries in the shared queue. */
export async function countShared(dir: string): Promise<number> {
  return (await listShared(dir)).length;
}

/**
 * Sessions with a write claimed (`.processing`) by a replay sending it now or by one killed while doing so,
 * each with the `createdAt` of its oldest claimed write.
 */
async function claimedSessions(dir: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  try {
    for await (const e of Deno.readDir(dir)) {
      const m = ENTRY_NAME.exec(e.name);
      if (!m || m[3] !== "processing") continue;
      const raw = await Deno.readTextFile(joinPath(dir, e.name)).catch(() => "");
      const entry = SharedEntrySchema.safeParse(parseOrNull(raw)).data;
      if (entry) out.set(entry.sessionId, Math.min(entry.createdAt, out.get(entry.sessionId) ?? Infinity));
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return out;
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
