/**
 * Recall for a prompt, with the same chain and request bodies (recall-bodies.ts) as OpenViking's other
 * plugins: ① `POST /api/v1/search/search` in context mode → ② the deprecated `POST /api/v1/search/recall` →
 * ③ `POST /api/v1/search/find` per source with local ranking and assembly (recall-find.ts). Servers that
 * reject context mode are remembered for 6 h. The result is the memories the answering stage listed, in its
 * order (see memory.ts); the output formats (digest.ts, and recall-full.ts) print them.
 */

import type * as z from "zod/mini";
import type { Budget, OpenVikingClient, OvFailure, OvResponse } from "../openviking/client.ts";
import { parseJsonOrUndefined, readTextIfExists, writeFileAtomic } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";
import { isRecord } from "../lib/parsed.ts";
import { PRINT_MAX_CHARS } from "../lib/printed.ts";
import { type Entries, memoriesFromEntries, memoriesFromRendered } from "./recalled.ts";
import type { RecallRequest, RecallResult, RecallSettings } from "./recall-types.ts";
import { contextSearchBody, recallEndpointBody } from "./recall-bodies.ts";
import { ContextReply, fallbackReplies } from "./recall-replies.ts";
import { fromFind } from "./recall-find.ts";

// Recall's parts, importable from here as before (its tests do).
export type { RecallRequest, RecallResult, RecallSettings } from "./recall-types.ts";
export { contextSearchBody, scaleQuotas } from "./recall-bodies.ts";
export { rankFindItems } from "./recall-rank.ts";
export { fullRecallBlock } from "./recall-full.ts";

/** How long a server that rejected context mode is not asked again. */
export const LEGACY_MEMO_MS = 6 * 3600_000;

/** Whether a context-face failure means "this server has no context mode". */
function isLegacyRejection(res: OvResponse<unknown>): boolean {
  if (res.ok || (res.status !== 400 && res.status !== 422)) return false;
  const text = JSON.stringify(res.error).toLowerCase();
  return text.includes("extra") || text.includes("mode") || text.includes("unexpected");
}

/** The shared legacy memo: `context-face.json` in the state directory. */
const memoPath = (dir: string) => joinPath(dir, "context-face.json");

/** Whether the memo says the server at `baseUrl` has no context mode (a memo of another server says nothing). */
async function isLegacyMemoed(dir: string, baseUrl: string, now: number): Promise<boolean> {
  if (!dir) return false;
  const memo = parseJsonOrUndefined(await readTextIfExists(memoPath(dir)).catch(() => undefined));
  if (!isRecord(memo)) return false;
  const m = memo;
  if (typeof m.baseUrl === "string" && m.baseUrl !== baseUrl) return false;
  return typeof m.legacyUntil === "number" && m.legacyUntil > now;
}

/** Remembers, for {@link LEGACY_MEMO_MS}, that the server at `baseUrl` has no context mode. */
async function memoLegacy(dir: string, baseUrl: string, now: number): Promise<void> {
  if (!dir) return;
  await writeFileAtomic(memoPath(dir), `${JSON.stringify({ legacyUntil: now + LEGACY_MEMO_MS, baseUrl })}\n`)
    .catch(() => {});
}

/** URIs mentioned in `uri="…"` attributes or as bare `viking://` references. */
export function urisIn(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/viking:\/\/[^\s"'`<>)\]]+/g)) found.add(m[0]);
  return [...found];
}

/**
 * What a stage that assembles its text on the server answered: its entries as memories (else the
 * `<memory>` elements of its rendered text), and the text it assembled; nothing relevant when both are empty.
 */
function assembled(
  entries: z.output<typeof Entries>,
  text: { digest?: string; rendered?: string },
  source: "context" | "recall",
): RecallResult {
  const digest = text.digest?.trim() ?? "";
  const rendered = (text.rendered?.trim() ?? "").slice(0, PRINT_MAX_CHARS);
  const fromEntries = memoriesFromEntries(entries);
  const memories = fromEntries.length ? fromEntries : memoriesFromRendered(rendered);
  const whole = (digest || rendered).slice(0, PRINT_MAX_CHARS);
  return whole ? { source, memories, assembled: whole } : { source, memories };
}

/**
 * ① The context face; its failure, or undefined when it is remembered as missing or says it has no context
 * mode (the chain goes on either way).
 */
async function fromContextFace(
  client: OpenVikingClient,
  s: RecallSettings,
  r: RecallRequest,
  now: number,
): Promise<RecallResult | OvFailure | undefined> {
  const baseUrl = client.options.baseUrl;
  if (await isLegacyMemoed(r.stateDir, baseUrl, now)) return undefined;
  const res = await client.request("POST", "/api/v1/search/search", ContextReply, {
    body: contextSearchBody(s, r),
    budget: r.budget,
  });
  if (res.ok) {
    const result = res.result;
    if (result.stats?.rewrite === "no_relevant") return { source: "context", memories: [] };
    return assembled(result.entries, result, "context");
  }
  if (!isLegacyRejection(res)) return res;
  await memoLegacy(r.stateDir, baseUrl, now);
  return undefined;
}

/** ② The deprecated `/search/recall`, retried once without peer_scope on 400/422; its failure when it failed. */
async function fromRecallEndpoint(
  client: OpenVikingClient,
  s: RecallSettings,
  query: string,
  budget: Budget,
): Promise<RecallResult | OvFailure> {
  let body = recallEndpointBody(s, query);
  const RecallReply = fallbackReplies().recall;
  let res = await client.request("POST", "/api/v1/search/recall", RecallReply, { body, budget });
  if (!res.ok && (res.status === 400 || res.status === 422) && "peer_scope" in body) {
    body = { ...body };
    delete body.peer_scope;
    res = await client.request("POST", "/api/v1/search/recall", RecallReply, { body, budget });
  }
  return res.ok ? assembled(res.result.entries, { rendered: res.result.rendered }, "recall") : res;
}

/** Recalls memories for a prompt through the fallback chain. Never throws. */
export async function recallForPrompt(
  client: OpenVikingClient,
  s: RecallSettings,
  r: RecallRequest,
): Promise<RecallResult> {
  const query = r.query.trim();
  if (!query) return { source: "none", memories: [] };
  const failures: OvFailure[] = [];
  const stages = [
    () => fromContextFace(client, s, r, r.now ?? Date.now()),
    () => fromRecallEndpoint(client, s, query, r.budget),
    () => fromFind(client, s, r, query),
  ];
  for (const stage of stages) {
    const got = await stage();
    if (got === undefined) continue;
    if (!("ok" in got)) return got;
    failures.push(got);
  }
  // A stage the server does not have (an older or newer OpenViking) says less than why the others failed.
  const failure = failures.find((f) => f.kind !== "missing-route") ?? failures[failures.length - 1];
  return { source: "none", memories: [], failure };
}
