/**
 * The recall breaker: one private file per server origin in OpenViking's state directory, there only while a
 * prompt's recall went unanswered. While open, prompts ask nothing and a detached worker probes `/health`
 * (backing off from {@link PROBE_INTERVAL_MS} to {@link PROBE_MAX_MS}); any answer lets the next prompt ask,
 * whose answer closes it. A refused connection opens nothing; a missing or damaged file is a closed breaker.
 */

import * as z from "zod/mini";
import { readJson, writeFileAtomic } from "../lib/fs.ts";
import { sha256Hex } from "../lib/hash.ts";
import { AnyResult, type OpenVikingClient, type OvFailure } from "./client.ts";
import { originOf } from "./config.ts";
import { joinPath } from "../lib/paths.ts";

/** The shortest time between two probes of a server that did not answer; also a probe's own timeout. */
export const PROBE_INTERVAL_MS = 10_000;

/** The longest time between two probes. */
export const PROBE_MAX_MS = 300_000;

/** An open breaker: one outage of one server. */
const BreakerSchema = z.object({
  origin: z.string(),
  /** When the outage began: its first unanswered recall. */
  since: z.number(),
  /** Its latest unanswered recall. */
  at: z.number(),
  /** Why, in the client's (cleaned) words. */
  reason: z.string(),
  /** Unanswered recalls in this outage; each after the first doubles the time between probes. */
  failures: z.number(),
  /** When the latest probe started. */
  probedAt: z.optional(z.number()),
  /** When a probe or a capture got an answer after `at`: the next prompt asks again. */
  answeredAt: z.optional(z.number()),
});
export type Breaker = z.infer<typeof BreakerSchema>;

/** The breaker file of `baseUrl`'s origin in `dir`. */
async function breakerFile(dir: string, baseUrl: string): Promise<string> {
  return joinPath(dir, `kimicode-breaker-${(await sha256Hex(originOf(baseUrl))).slice(0, 16)}.json`);
}

/** Every breaker file in `dir`, whatever server it belongs to (what `uninstall --purge` removes). */
export async function breakerFiles(dir: string): Promise<string[]> {
  const entries = dir ? await Array.fromAsync(Deno.readDir(dir)).catch(() => []) : [];
  return entries.filter((e) => e.isFile && /^kimicode-breaker-[0-9a-f]{16}\.json$/.test(e.name))
    .map((e) => joinPath(dir, e.name));
}

/** The open breaker of `baseUrl`'s origin, or undefined (closed, no home, or a file that is not one). */
export async function readBreaker(dir: string, baseUrl: string): Promise<Breaker | undefined> {
  if (!dir) return undefined;
  const b = BreakerSchema.safeParse(await readJson(await breakerFile(dir, baseUrl))).data;
  return b?.origin === originOf(baseUrl) ? b : undefined;
}

/** Writes `b` (best effort: a breaker that cannot be kept only costs the next prompt a wait). */
async function writeBreaker(dir: string, b: Breaker): Promise<void> {
  await writeFileAtomic(await breakerFile(dir, b.origin), `${JSON.stringify(b)}\n`).catch(() => {});
}

/** Whether `b` keeps prompts from asking: open, and no answer since its latest unanswered recall (pure). */
export function isOpen(b: Breaker): boolean {
  return !(b.answeredAt !== undefined && b.answeredAt >= b.at);
}

/** When `b` may be probed next (pure). */
export function nextProbeAt(b: Breaker): number {
  const wait = Math.min(PROBE_INTERVAL_MS * 2 ** Math.max(0, b.failures - 1), PROBE_MAX_MS);
  return Math.max(b.at, b.probedAt ?? 0) + wait;
}

/** Whether a failure is the server taking the request and not answering in time: it opens the breaker (pure). */
export function isUnanswered(f: OvFailure | undefined): boolean {
  return f?.kind === "unreachable" && f.error.code === "TIMEOUT";
}

/**
 * What a prompt's recall says of the server: unanswered opens the breaker (or keeps it open, one failure
 * more); any answer closes it; a refused connection, or nothing asked, changes nothing. Returns the breaker
 * as it is now (undefined: closed).
 */
export async function noteRecall(
  dir: string,
  baseUrl: string,
  before: Breaker | undefined,
  outcome: { asked: boolean; failure?: OvFailure },
  now = Date.now(),
): Promise<Breaker | undefined> {
  if (!dir) return undefined;
  if (isUnanswered(outcome.failure)) {
    const b: Breaker = {
      origin: originOf(baseUrl),
      since: before?.since ?? now,
      at: now,
      reason: outcome.failure?.error.message ?? "",
      failures: (before?.failures ?? 0) + 1,
    };
    await writeBreaker(dir, b);
    return b;
  }
  if (!before || !outcome.asked || outcome.failure?.kind === "unreachable") return before;
  await Deno.remove(await breakerFile(dir, baseUrl)).catch(() => {});
  return undefined;
}

/** Records that a probe of `b` starts now (the rate limit of probes). */
export async function noteProbing(dir: string, b: Breaker, now = Date.now()): Promise<void> {
  await writeBreaker(dir, { ...b, probedAt: now });
}

/**
 * Records that the server of `baseUrl` answered what was asked at `askedAt` (a probe, a capture): an open
 * breaker lets the next prompt ask. An answer to a question older than the breaker's latest unanswered recall
 * says nothing of the server now, and changes nothing.
 */
export async function noteAnswered(dir: string, baseUrl: string, askedAt: number): Promise<void> {
  const b = await readBreaker(dir, baseUrl);
  if (b && isOpen(b) && askedAt >= b.at) await writeBreaker(dir, { ...b, answeredAt: askedAt });
}

/**
 * Probes the server `client` talks to: `GET /health` within {@link PROBE_INTERVAL_MS}; any answer (even an
 * error page: it did not hang) is noted. Returns whether it answered.
 */
export async function probe(client: OpenVikingClient, dir: string): Promise<boolean> {
  const askedAt = Date.now();
  const res = await client.request("GET", "/health", AnyResult, { timeoutMs: PROBE_INTERVAL_MS });
  const answered = res.ok || res.kind !== "unreachable";
  if (answered) await noteAnswered(dir, client.options.baseUrl, askedAt);
  return answered;
}

/** Probes the server when its breaker is open and a probe is due (a detached worker's; never a prompt's). */
export async function probeIfDue(client: OpenVikingClient, dir: string, now = Date.now()): Promise<void> {
  const b = await readBreaker(dir, client.options.baseUrl);
  if (!b || !isOpen(b) || now < nextProbeAt(b)) return;
  await noteProbing(dir, b, now);
  await probe(client, dir);
}
