/** The recall breaker: a file per server origin, there while prompts' recalls go unanswered; a worker probes. */

import * as z from "zod/mini";
import { readJson, writeFileAtomic } from "../lib/fs.ts";
import { sha256Hex } from "../lib/hash.ts";
import { joinPath } from "../lib/paths.ts";
import { AnyResult, type Budget, type OpenVikingClient, type OvFailure } from "./client.ts";
import { originOf } from "./config.ts";

/** The shortest time between two probes of a silent server (doubled per failure, up to the max); a probe's timeout. */
export const PROBE_INTERVAL_MS = 10_000;
export const PROBE_MAX_MS = 300_000;
/** An open breaker: one outage of one server; `answeredAt`: a probe's search got an answer after `at`. */
const BreakerSchema = z.object({
  origin: z.string(),
  since: z.number(),
  at: z.number(),
  reason: z.string(),
  failures: z.number(),
  probedAt: z.optional(z.number()),
  answeredAt: z.optional(z.number()),
});
export type Breaker = z.infer<typeof BreakerSchema>;
const FILE = /^kimicode-breaker-[0-9a-f]{16}\.json$/;
const fileOf = async (dir: string, url: string) =>
  joinPath(dir, `kimicode-breaker-${(await sha256Hex(originOf(url))).slice(0, 16)}.json`);
const write = async (dir: string, b: Breaker) =>
  await writeFileAtomic(await fileOf(dir, b.origin), `${JSON.stringify(b)}\n`).catch(() => {});
/** Every breaker file in `dir` (what `uninstall --purge` removes). */
export async function breakerFiles(dir: string): Promise<string[]> {
  const entries = dir ? await Array.fromAsync(Deno.readDir(dir)).catch(() => []) : [];
  return entries.filter((e) => e.isFile && FILE.test(e.name)).map((e) => joinPath(dir, e.name));
}

/** The open breaker of `baseUrl`'s origin, or undefined (a damaged file, or no home: none). */
export async function readBreaker(dir: string, baseUrl: string): Promise<Breaker | undefined> {
  const b = dir ? BreakerSchema.safeParse(await readJson(await fileOf(dir, baseUrl))).data : undefined;
  return b?.origin === originOf(baseUrl) ? b : undefined;
}

/** Whether `b` keeps prompts from asking: no answer since its latest unanswered recall. */
export const isOpen = (b: Breaker): boolean => !(b.answeredAt !== undefined && b.answeredAt >= b.at);
/** When `b` may be probed next: the wait doubles with each failure, up to PROBE_MAX_MS. */
export const nextProbeAt = (b: Breaker): number =>
  Math.max(b.at, b.probedAt ?? 0) +
  Math.min(PROBE_INTERVAL_MS * 2 ** Math.max(0, b.failures - 1), PROBE_MAX_MS);
/** Whether the server took the request and did not answer in time. */
export const isUnanswered = (f: OvFailure | undefined): boolean =>
  f?.kind === "unreachable" && f.error.code === "TIMEOUT";
/** Notes a prompt's recall: unanswered opens the breaker, an answer closes it; returns it now (undefined: closed). */
export async function noteRecall(
  dir: string,
  baseUrl: string,
  before: Breaker | undefined,
  outcome: { asked: boolean; failure?: OvFailure },
  now = Date.now(),
): Promise<Breaker | undefined> {
  if (!dir) return undefined;
  if (isUnanswered(outcome.failure)) {
    const [since, failures] = [before?.since ?? now, (before?.failures ?? 0) + 1];
    const b = { origin: originOf(baseUrl), since, at: now, reason: outcome.failure!.error.message, failures };
    await write(dir, b);
    return b;
  }
  if (!before || !outcome.asked || outcome.failure?.kind === "unreachable") return before;
  await Deno.remove(await fileOf(dir, baseUrl)).catch(() => {});
  return undefined;
}

/** Records that a probe of `b` starts now. */
export const noteProbing = (dir: string, b: Breaker, now = Date.now()) => write(dir, { ...b, probedAt: now });
/** Records that the server answered what was asked at `askedAt`, if asked after the breaker's latest failure. */
export async function noteAnswered(dir: string, baseUrl: string, askedAt: number): Promise<void> {
  const b = await readBreaker(dir, baseUrl);
  if (b && isOpen(b) && askedAt >= b.at) await write(dir, { ...b, answeredAt: askedAt });
}

/** Probes with a search, as recall asks (a server may answer `/health` and not search); notes and returns an answer. */
export async function probe(client: OpenVikingClient, dir: string, budget?: Budget): Promise<boolean> {
  const askedAt = Date.now();
  const body = { query: "openviking-kimi probe", mode: "context", purpose: "coding", limit: 1 };
  const options = { body, timeoutMs: PROBE_INTERVAL_MS, budget };
  const res = await client.request("POST", "/api/v1/search/search", AnyResult, options);
  const answered = res.ok || res.kind !== "unreachable";
  if (answered) await noteAnswered(dir, client.options.baseUrl, askedAt);
  return answered;
}

/** Probes (within `budget`) when an open breaker's probe is due. */
export async function probeIfDue(client: OpenVikingClient, dir: string, now = Date.now(), budget?: Budget) {
  const b = await readBreaker(dir, client.options.baseUrl);
  if (!b || !isOpen(b) || now < nextProbeAt(b)) return;
  await noteProbing(dir, b, now);
  await probe(client, dir, budget);
}
