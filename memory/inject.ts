/**
 * What the prompt hook prints for a text: recall (∥ the profile), what the session holds left out, as the
 * digest or the full format. Touches no state.
 */

import type { Budget, OpenVikingClient, OvFailure } from "../openviking/client.ts";
import type { Config } from "../openviking/config.ts";
import { safe, SafeText } from "../lib/neutralize.ts";
import { type Block, printBlocks } from "../lib/printed.ts";
import { sha256Hex } from "../lib/hash.ts";
import { fetchProfile, isEmptyProfile, type ProfileParts } from "./profile.ts";
import { type Memory, recallForPrompt, type RecallResult, urisIn } from "./recall.ts";
import {
  contextBlock,
  DIGEST_CLOSE,
  DIGEST_OPEN,
  digestLines,
  fullRecallBlock,
  profileDigest,
  renderProfile,
} from "./digest.ts";

/** One prompt's ask: the query, the session, what it holds (URIs, text keys), the same prompt's kept recall. */
export interface InjectionRequest {
  query: string;
  sessionId?: string;
  injected: readonly string[];
  reuse?: RecallResult;
  profile: boolean;
  afterCompaction: boolean;
  budget: Budget;
  stateDir: string;
}

type Injected = { uri: string; score?: number; chars: number };

/** What is printed and why: the stage, memories printed and left out, the session's new keys, the recall to keep. */
export interface Injection {
  stdout: string;
  recall: RecallResult["source"] | "reused" | "skipped";
  injected: Injected[];
  suppressed: string[];
  shown: string[];
  profile: "injected" | "empty" | "unavailable" | "not-asked";
  found?: RecallResult;
  failure?: OvFailure;
}

/** A memory not shown yet, the keys showing it adds, and (a server text's line) its raw text. */
type Item = { memory: Memory; keys: string[]; raw?: string };

type Unseen = { items: Item[]; suppressed: string[]; lines?: { all: boolean; named: boolean } };

/** The key of a line without a URI (never sent as `exclude_uris`). */
const TEXT_KEY = "text:";
const textKey = async (line: string) =>
  `${TEXT_KEY}${(await sha256Hex(line.replace(/\s+/g, " ").trim().toLowerCase())).slice(0, 32)}`;

/**
 * What of `r` the session does not have. A server text without memories goes by lines: one naming URIs goes
 * when all were shown; one without is keyed by its text, prints once, and only beside a new memory.
 */
async function unseen(r: RecallResult | undefined, injected: ReadonlySet<string>): Promise<Unseen> {
  if (!r) return { items: [], suppressed: [] };
  if (r.assembled === undefined || r.memories.length) {
    return {
      items: r.memories.filter((m) => !injected.has(m.uri)).map((memory) => ({ memory, keys: [memory.uri] })),
      suppressed: r.memories.filter((m) => injected.has(m.uri)).map((m) => m.uri),
    };
  }
  const lines = r.assembled.split("\n").map((l) => l.trim()).filter(Boolean);
  const uris = lines.map(urisIn);
  const named = uris.some((u) => u.length);
  const withMemory = !named || uris.some((u) => u.some((x) => !injected.has(x)));
  const seen = new Set(injected);
  const suppressed = new Set<string>();
  const items: Item[] = [];
  for (const [i, raw] of lines.entries()) {
    const keys = uris[i].length ? uris[i] : [await textKey(raw)];
    if (keys.every((k) => seen.has(k))) { // shown before, or on an earlier line of this text
      for (const u of uris[i]) if (injected.has(u)) suppressed.add(u);
      continue;
    }
    if (!uris[i].length && !withMemory) continue;
    for (const k of keys) seen.add(k);
    const uri = uris[i][0] ?? "";
    const text = uri ? raw.replace(uri, "").replace(/\s*(?:source:)?\s*$/i, "") : raw;
    items.push({ memory: { uri, text }, keys, raw });
  }
  return { items, suppressed: [...suppressed], lines: { all: items.length === lines.length, named } };
}

type Output = Pick<Injection, "stdout" | "injected" | "shown">;

/** What a format printed: `stdout`, the memories of `shown` (each its characters), their keys. */
const output = (stdout: string, shown: Item[], chars: (m: Memory) => number): Output => ({
  stdout,
  injected: shown.filter((i) => i.memory.uri).map(({ memory: m }) => ({
    uri: m.uri,
    ...(m.score !== undefined ? { score: m.score } : {}),
    chars: chars(m),
  })),
  shown: shown.flatMap((i) => i.keys),
});

/** The digest: one block, the profile's rows (≤ half its characters), then a line per memory. */
function digestOutput(c: Config, u: Unseen, parts: ProfileParts | undefined, again: boolean): Output {
  const profile = parts ? profileDigest(parts, again, Math.floor(c.recallDigestChars / 2)) : [];
  const reserved = DIGEST_OPEN.length + DIGEST_CLOSE.length + 2 +
    profile.reduce((n, l) => n + l.length + 1, 0);
  const limits = { memories: c.recallDigestLimit, chars: c.recallDigestChars };
  let lines = digestLines(u.items.map((i) => i.memory), limits, reserved);
  if (u.lines?.named && !lines.some((l) => l.memory.uri)) lines = [];
  const body = [...profile, ...lines.map((l) => l.line)];
  if (!body.length) return output("", [], () => 0);
  const chars = new Map(lines.map((l) => [l.memory, l.line.length]));
  return output(
    printBlocks([{ open: DIGEST_OPEN, body: SafeText.join(body, safe`\n`), close: DIGEST_CLOSE }]),
    lines.map((l) => u.items.find((i) => i.memory === l.memory)!),
    (m) => chars.get(m)!,
  );
}

/** The full format: the profile's block, then the recall's. */
function fullOutput(c: Config, r: RecallResult | undefined, u: Unseen, parts?: ProfileParts, again = false) {
  const blocks: Block[] = [];
  const profile = parts && renderProfile(parts, c.profileTokenBudget);
  if (profile) {
    const source = again ? safe`after-compaction` : safe`session-start`;
    blocks.push({ open: safe`<openviking-context source="${source}">`, body: profile, close: DIGEST_CLOSE });
  }
  const recall = !r || (u.lines && !u.items.length)
    ? undefined
    : u.lines
    ? contextBlock(u.lines.all ? r.assembled! : u.items.map((i) => i.raw).join("\n"))
    : fullRecallBlock(r, u.items.map((i) => i.memory), c);
  if (recall) blocks.push(recall);
  return output(printBlocks(blocks), recall ? u.items : [], (m) => m.text.length);
}

/** What to print for a prompt: asks the server (recall ∥ profile) within the budget; never throws. */
export async function injectionFor(
  client: OpenVikingClient,
  c: Config,
  req: InjectionRequest,
): Promise<Injection> {
  const ask = req.reuse === undefined && req.query.length >= c.minQueryLength && req.query.trim() !== "";
  const [recalled, asked] = await Promise.all([
    ask
      ? recallForPrompt(client, c, {
        query: req.query,
        sessionId: req.sessionId,
        excludeUris: req.injected.filter((k) => !k.startsWith(TEXT_KEY)),
        budget: req.budget,
        stateDir: req.stateDir,
      })
      : Promise.resolve(req.reuse),
    req.profile ? fetchProfile(client, req.budget) : Promise.resolve(undefined),
  ]);
  const parts = asked && !("ok" in asked) ? asked : undefined;
  const failure = recalled?.failure ?? (asked && "ok" in asked ? asked : undefined);
  const u = await unseen(recalled, new Set(req.injected));
  const hasProfile = parts !== undefined && !isEmptyProfile(parts);
  const profile = hasProfile ? parts : undefined;
  const out = c.recallFormat === "full"
    ? fullOutput(c, recalled, u, profile, req.afterCompaction)
    : digestOutput(c, u, profile, req.afterCompaction);
  return {
    ...out,
    recall: req.reuse !== undefined ? "reused" : recalled?.source ?? "skipped",
    suppressed: u.suppressed,
    profile: !req.profile ? "not-asked" : !parts ? "unavailable" : hasProfile ? "injected" : "empty",
    found: ask && !recalled?.failure ? recalled : undefined,
    ...(failure ? { failure } : {}),
  };
}
