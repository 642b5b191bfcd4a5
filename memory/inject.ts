/**
 * What the prompt hook injects for a text: recall (∥ the profile, when asked for), memories the session
 * already has left out, printed as the digest (default) or the full format. One function, without a session
 * and without touching any state: the prompt hook calls it with what its state says, and a command that shows
 * "what would be injected for this text in this workspace now" calls {@link previewInjection}.
 */

import {
  Budget,
  clientOptions,
  createClient,
  type OpenVikingClient,
  type OvFailure,
} from "../openviking/client.ts";
import type { Config } from "../openviking/config.ts";
import { loadConfig } from "../openviking/config.ts";
import type { Env } from "../lib/paths.ts";
import { resolvePeer } from "../openviking/peer.ts";
import { safe, SafeText } from "../lib/neutralize.ts";
import { type Block, printBlocks } from "../lib/printed.ts";
import {
  fetchProfileOrFailure,
  isEmptyProfile,
  type ProfileParts,
  profileUri,
  renderProfile,
} from "./profile.ts";
import { recallForPrompt, urisIn } from "./recall.ts";
import type { RecallResult } from "./recall-types.ts";
import { fullRecallBlock } from "./recall-full.ts";
import { DIGEST_CLOSE, DIGEST_OPEN, digestLines, profileDigest } from "./digest.ts";
import type { Memory } from "./recalled.ts";
import { sha256Hex } from "../lib/hash.ts";
import { recallQuery } from "./query.ts";

/** What to inject for one prompt. */
export interface InjectionRequest {
  /** The recall query (prompt-query.ts: bounded, cleaned, redacted). */
  query: string;
  /** OpenViking session id, for the server's own expansion and dedupe. */
  sessionId?: string;
  /** What the session's context already holds (its URIs, and keys of lines without one): never printed again. */
  injected: readonly string[];
  /** The same prompt's recall, kept by the previous run: the server is not asked again. */
  reuse?: RecallResult;
  /** Print the profile too (the first prompt of a session in config mode). */
  profile: boolean;
  /** A compaction dropped the session's earlier injections: the profile says it comes again. */
  afterCompaction: boolean;
  budget: Budget;
  /** Directory of recall's "no context mode" memo; "" remembers nothing. */
  stateDir: string;
}

/** Which recall stage answered: the server's stages, the same prompt's kept result, or none asked. */
export type RecallPath = RecallResult["source"] | "reused" | "skipped";

/** A memory as printed: its URI, its score, and how many characters of the output it took. */
export interface Injected {
  uri: string;
  score?: number;
  chars: number;
}

/** What one output format printed: its text, the memories in it, what the session holds now. */
interface Output {
  stdout: string;
  injected: Injected[];
  shown: string[];
}

/** What would be printed, and why. */
export interface Injection {
  /** The hook's stdout ("" for nothing). */
  stdout: string;
  recall: RecallPath;
  /** The memories printed, in order. */
  injected: Injected[];
  /** URIs recall found that were left out because the session already has them. */
  suppressed: string[];
  /** What the session holds now that it did not: every URI printed, and the keys of lines printed without one. */
  shown: string[];
  /** The profile: printed, asked for but unavailable (the server did not answer), or not asked for. */
  profile: "injected" | "empty" | "unavailable" | "not-asked";
  printedChars: number;
  /** What recall found, to keep for the same prompt (undefined when the server was not asked, or failed). */
  found?: RecallResult;
  /** Why recall (first) or the profile could not be had: the server's failure, as it came. */
  failure?: OvFailure;
}

/**
 * Keys of the session's shown set that are not URIs start with this: a printed line without a URI, by its
 * text. They stay in the session's set with its URIs (a compaction clears both) and never go to the server.
 */
const TEXT_KEY = "text:";

/** Whether a key of the session's shown set is a URI (the server's `exclude_uris` takes only those). */
const isUriKey = (key: string): boolean => !key.startsWith(TEXT_KEY);

/** The key of a line without a URI: its words, blanks and case aside. */
async function textKey(line: string): Promise<string> {
  return `${TEXT_KEY}${(await sha256Hex(line.replace(/\s+/g, " ").trim().toLowerCase())).slice(0, 32)}`;
}

/** What of a recall the session does not have yet. */
interface Found {
  r?: RecallResult;
  /** The memories to show: the listed ones not shown yet, or the lines left of a text the server assembled. */
  visible: Memory[];
  /** URIs left out because the session already has them. */
  suppressed: string[];
  /** What showing a memory adds to the session's set, where it is not just its URI (a text's lines). */
  keys: Map<Memory, string[]>;
  /** A text the server assembled (no memories listed): what the full format prints of it. */
  text?: string;
  /** That text names memories: its lines without a URI never print alone. */
  named?: boolean;
}

/** The memories of `r` the session does not have yet, and the URIs it left out. */
function unseen(r: RecallResult, injected: ReadonlySet<string>): Found {
  const visible = r.memories.filter((m) => !injected.has(m.uri));
  const suppressed = r.memories.filter((m) => injected.has(m.uri)).map((m) => m.uri);
  return { r, visible, suppressed, keys: new Map() };
}

/** One line of a text the server assembled: as it wrote it, as a memory for the digest, the URIs it names. */
interface TextLine {
  raw: string;
  memory: Memory;
  uris: string[];
}

/** The lines of a text the server assembled, when it listed no memories (the digest prints its lines). */
function assembledLines(text: string): TextLine[] {
  return text.split("\n").map((line) => line.trim()).filter(Boolean).map((raw) => {
    const uris = urisIn(raw);
    const uri = uris[0] ?? "";
    // The URI goes to the end of the line, as on every digest line ("… source: <uri>" is the rewrite's form).
    const text = uri ? raw.replace(uri, "").replace(/\s*(?:source:)?\s*$/i, "") : raw;
    return { raw, memory: { uri, text }, uris };
  });
}

/**
 * The lines of a text the server assembled that the session does not have yet. A line naming URIs goes when
 * every one of them was shown. A line without a URI (a heading, a sentence the server wrote without its
 * source) cannot be told by a URI, so its text is its key: it prints once a session, and only beside a line
 * that brings a new memory — over memories all shown it would stand alone, about what the session has. A
 * text naming no URI at all is only such lines: it prints once.
 */
async function unseenLines(r: RecallResult, injected: ReadonlySet<string>): Promise<Found> {
  const text = r.assembled ?? "";
  const lines = assembledLines(text);
  const named = lines.some((l) => l.uris.length);
  const withMemory = !named || lines.some((l) => l.uris.some((u) => !injected.has(u)));
  const seen = new Set(injected);
  const suppressed = new Set<string>();
  const kept: TextLine[] = [];
  const keys = new Map<Memory, string[]>();
  for (const line of lines) {
    const lineKeys = line.uris.length ? line.uris : [await textKey(line.raw)];
    if (lineKeys.every((k) => seen.has(k))) { // shown before, or already on an earlier line of this text
      for (const u of line.uris) if (injected.has(u)) suppressed.add(u);
      continue;
    }
    if (!line.uris.length && !withMemory) continue;
    for (const k of lineKeys) seen.add(k);
    kept.push(line);
    keys.set(line.memory, lineKeys);
  }
  return {
    r,
    visible: kept.map((l) => l.memory),
    suppressed: [...suppressed],
    keys,
    text: kept.length === lines.length ? text : kept.map((l) => l.raw).join("\n"),
    named,
  };
}

/** What showing `m` adds to the session's set. */
const keysOf = (found: Found, m: Memory): string[] => found.keys.get(m) ?? [m.uri];

/**
 * The profile's rows for the digest: at most half its characters, so the memories the prompt asked for keep
 * the other half (the first prompt in config mode stays a compact digest, ≤ ~12 rows at 160 columns).
 */
function profileRows(c: Config, parts: ProfileParts, afterCompaction: boolean): SafeText[] {
  return profileDigest({
    profile: parts.profile,
    uri: profileUri(parts.space),
    abstracts: [...parts.preferences, ...parts.entities].map((l) => l.abstract).filter(Boolean),
    afterCompaction,
    maxChars: Math.floor(c.recallDigestChars / 2),
  });
}

/**
 * The digest output: one block, the profile's rows first, then a line per memory not seen yet — all of it
 * within the digest's characters (the markers and the profile's rows taken first).
 */
function digestOutput(c: Config, found: Found, profile: SafeText[]): Output {
  const frame = DIGEST_OPEN.length + DIGEST_CLOSE.length + 2;
  const reserved = frame + profile.reduce((n, l) => n + l.length + 1, 0);
  let lines = digestLines(
    found.visible,
    { memories: c.recallDigestLimit, chars: c.recallDigestChars },
    reserved,
  );
  // The limits may leave out every line that named a memory: the lines without one do not print alone.
  if (found.named && !lines.some((l) => l.memory.uri)) lines = [];
  const body = [...profile, ...lines.map((l) => l.line)];
  if (!body.length) return { stdout: "", injected: [], shown: [] };
  const block: Block = { open: DIGEST_OPEN, body: SafeText.join(body, safe`\n`), close: DIGEST_CLOSE };
  return {
    stdout: printBlocks([block]),
    injected: lines.filter((l) => l.memory.uri).map((l) => ({
      uri: l.memory.uri,
      ...(l.memory.score !== undefined ? { score: l.memory.score } : {}),
      chars: l.line.length,
    })),
    shown: lines.flatMap((l) => keysOf(found, l.memory)),
  };
}

/** The full output (OpenViking's own plugins' blocks): the profile block, then the recall block. */
function fullOutput(c: Config, found: Found, profile: SafeText | null, afterCompaction: boolean): Output {
  const blocks: Block[] = [];
  if (profile) {
    const open = afterCompaction
      ? safe`<openviking-context source="after-compaction">`
      : safe`<openviking-context source="session-start">`;
    blocks.push({ open, body: profile, close: safe`</openviking-context>` });
  }
  // A text the server assembled prints as it is when nothing was left out, else the lines left of it.
  const recall = !found.r
    ? undefined
    : found.text === undefined
    ? fullRecallBlock(found.r, found.visible, c)
    : found.text
    ? fullRecallBlock({ ...found.r, assembled: found.text }, [], c)
    : undefined;
  if (recall) blocks.push(recall);
  const shown = recall ? found.visible : [];
  return {
    stdout: printBlocks(blocks),
    injected: shown.filter((m) => m.uri).map((m) => ({
      uri: m.uri,
      ...(m.score !== undefined ? { score: m.score } : {}),
      chars: m.text.length,
    })),
    shown: shown.flatMap((m) => keysOf(found, m)),
  };
}

/**
 * What to print for a prompt. Asks the server (recall ∥ profile) within the request's budget, never
 * throws, touches no state: the caller keeps what it needs of the result.
 */
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
        excludeUris: req.injected.filter(isUriKey),
        budget: req.budget,
        stateDir: req.stateDir,
      })
      : Promise.resolve(req.reuse),
    req.profile ? fetchProfileOrFailure(client, req.budget) : Promise.resolve(undefined),
  ]);
  const parts = asked === undefined || "ok" in asked ? undefined : asked;
  const failure = recalled?.failure ?? (asked && "ok" in asked ? asked : undefined);
  const shownSet = new Set(req.injected);
  const found: Found = !recalled
    ? { visible: [], suppressed: [], keys: new Map() }
    : recalled.assembled !== undefined && !recalled.memories.length
    ? await unseenLines(recalled, shownSet)
    : unseen(recalled, shownSet);
  const hasProfile = parts !== undefined && !isEmptyProfile(parts);
  const out = c.recallFormat === "full"
    ? fullOutput(
      c,
      found,
      hasProfile ? renderProfile(parts, c.profileTokenBudget) : null,
      req.afterCompaction,
    )
    : digestOutput(c, found, hasProfile ? profileRows(c, parts, req.afterCompaction) : []);
  return {
    stdout: out.stdout,
    recall: req.reuse !== undefined ? "reused" : recalled?.source ?? "skipped",
    injected: out.injected,
    suppressed: found.suppressed,
    shown: out.shown,
    profile: !req.profile
      ? "not-asked"
      : parts === undefined
      ? "unavailable"
      : hasProfile
      ? "injected"
      : "empty",
    printedChars: out.stdout.length,
    // A recall that failed is not kept: the same prompt again asks the server again.
    found: ask && !recalled?.failure ? recalled : undefined,
    ...(failure ? { failure } : {}),
  };
}

/**
 * What the prompt hook would print for `text` in the workspace `cwd` now, as the first prompt of a new
 * session (`profile`: in config mode, with the profile): no session, no state read or written, no memo kept.
 */
export async function previewInjection(
  text: string,
  opts: { cwd: string; env: Env; profile?: boolean },
): Promise<Injection> {
  const { config } = await loadConfig(opts.env, opts.cwd);
  const empty: Injection = {
    stdout: "",
    recall: "skipped",
    injected: [],
    suppressed: [],
    shown: [],
    profile: "not-asked",
    printedChars: 0,
  };
  if (!config.enabled || !config.autoRecall) return empty;
  const peer = await resolvePeer(opts.cwd, config);
  const client = createClient(clientOptions(config, peer.peerId));
  return await injectionFor(client, config, {
    query: recallQuery(text, config.redact),
    injected: [],
    profile: opts.profile ?? false,
    afterCompaction: false,
    budget: new Budget(config.promptBudgetMs),
    stateDir: "",
  });
}
