/**
 * What the prompt hook injects for a text: recall (∥ the profile, when asked for), memories the session
 * already has left out, printed as the digest (default) or the full format. One function, without a session
 * and without touching any state: the prompt hook calls it with what its state says, and a command that shows
 * "what would be injected for this text in this workspace now" calls {@link previewInjection}.
 */

import { Budget, clientOptions, createClient, type OpenVikingClient } from "../runtime/http.ts";
import type { Config } from "../runtime/config.ts";
import { loadConfig } from "../runtime/config.ts";
import type { Env } from "../runtime/paths.ts";
import { peerOptions, resolvePeer } from "../runtime/peer.ts";
import { safe, SafeText } from "../runtime/neutralize.ts";
import { type Block, printBlocks } from "../runtime/printed.ts";
import {
  fetchProfile,
  isEmptyProfile,
  type ProfileParts,
  profileUri,
  renderProfile,
} from "../runtime/profile.ts";
import { fullRecallBlock, recallForPrompt, type RecallResult, urisIn } from "../runtime/recall.ts";
import { DIGEST_CLOSE, DIGEST_OPEN, digestLines, profileDigest } from "../runtime/digest.ts";
import type { Memory } from "../runtime/memory.ts";
import { recallQuery } from "./prompt-query.ts";

/** What to inject for one prompt. */
export interface InjectionRequest {
  /** The recall query (prompt-query.ts: bounded, cleaned, redacted). */
  query: string;
  /** OpenViking session id, for the server's own expansion and dedupe. */
  sessionId?: string;
  /** URIs the session's context already holds: never printed again. */
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

/** What would be printed, and why. */
export interface Injection {
  /** The hook's stdout ("" for nothing). */
  stdout: string;
  recall: RecallPath;
  /** The memories printed, in order. */
  injected: Injected[];
  /** URIs recall found that were left out because the session already has them. */
  suppressed: string[];
  /** The profile: printed, asked for but unavailable (the server did not answer), or not asked for. */
  profile: "injected" | "empty" | "unavailable" | "not-asked";
  printedChars: number;
  /** What recall found, to keep for the same prompt (undefined when the server was not asked). */
  found?: RecallResult;
}

/** The memories of `r` the session does not have yet, and the URIs it left out. */
function unseen(r: RecallResult, injected: ReadonlySet<string>): { visible: Memory[]; suppressed: string[] } {
  const visible = r.memories.filter((m) => !injected.has(m.uri));
  const suppressed = r.memories.filter((m) => injected.has(m.uri)).map((m) => m.uri);
  if (r.assembled !== undefined && !r.memories.length) {
    const uris = urisIn(r.assembled);
    if (uris.length && uris.every((u) => injected.has(u))) suppressed.push(...uris);
  }
  return { visible, suppressed };
}

/** Memories a text the server assembled stands for, when it listed none (the digest prints its lines). */
function assembledLines(text: string): Memory[] {
  return text.split("\n").map((line) => line.trim()).filter(Boolean).map((line) => {
    const uri = urisIn(line)[0] ?? "";
    // The URI goes to the end of the line, as on every digest line ("… source: <uri>" is the rewrite's form).
    return { uri, text: uri ? line.replace(uri, "").replace(/\s*(?:source:)?\s*$/i, "") : line };
  });
}

/** The profile's rows for the digest. */
function profileRows(parts: ProfileParts, afterCompaction: boolean): SafeText[] {
  return profileDigest({
    profile: parts.profile,
    uri: profileUri(parts.space),
    abstracts: [...parts.preferences, ...parts.entities].map((l) => l.abstract).filter(Boolean),
    afterCompaction,
  });
}

/** The digest output: one block, the profile's rows first, then a line per memory not seen yet. */
function digestOutput(
  c: Config,
  found: { r?: RecallResult; visible: Memory[]; suppressed: string[] },
  profile: SafeText[],
): { stdout: string; injected: Injected[] } {
  const textOnly = found.r?.assembled !== undefined && !found.r.memories.length;
  const memories = textOnly && !found.suppressed.length ? assembledLines(found.r!.assembled!) : found.visible;
  const frame = DIGEST_OPEN.length + DIGEST_CLOSE.length + 2;
  const reserved = frame + profile.reduce((n, l) => n + l.length + 1, 0);
  const lines = digestLines(memories, {
    memories: c.recallDigestLimit,
    chars: c.recallDigestChars + reserved - frame,
  }, reserved);
  const body = [...profile, ...lines.map((l) => l.line)];
  if (!body.length) return { stdout: "", injected: [] };
  const block: Block = { open: DIGEST_OPEN, body: SafeText.join(body, safe`\n`), close: DIGEST_CLOSE };
  return {
    stdout: printBlocks([block]),
    injected: lines.filter((l) => l.memory.uri).map((l) => ({
      uri: l.memory.uri,
      ...(l.memory.score !== undefined ? { score: l.memory.score } : {}),
      chars: l.line.length,
    })),
  };
}

/** The full output (OpenViking's own plugins' blocks): the profile block, then the recall block. */
function fullOutput(
  c: Config,
  found: { r?: RecallResult; visible: Memory[]; suppressed: string[] },
  profile: SafeText | null,
  afterCompaction: boolean,
): { stdout: string; injected: Injected[] } {
  const blocks: Block[] = [];
  if (profile) {
    const open = afterCompaction
      ? safe`<openviking-context source="after-compaction">`
      : safe`<openviking-context source="session-start">`;
    blocks.push({ open, body: profile, close: safe`</openviking-context>` });
  }
  const assembledSeen = found.r?.assembled !== undefined && found.suppressed.length > 0 &&
    !found.visible.length;
  const recall = found.r && !assembledSeen ? fullRecallBlock(found.r, found.visible, c) : undefined;
  if (recall) blocks.push(recall);
  return {
    stdout: printBlocks(blocks),
    injected: recall
      ? found.visible.map((m) => ({
        uri: m.uri,
        ...(m.score !== undefined ? { score: m.score } : {}),
        chars: m.text.length,
      }))
      : [],
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
  const [recalled, parts] = await Promise.all([
    ask
      ? recallForPrompt(client, c, {
        query: req.query,
        sessionId: req.sessionId,
        excludeUris: [...req.injected],
        budget: req.budget,
        stateDir: req.stateDir,
      })
      : Promise.resolve(req.reuse),
    req.profile ? fetchProfile(client, req.budget) : Promise.resolve(undefined),
  ]);
  const { visible, suppressed } = recalled
    ? unseen(recalled, new Set(req.injected))
    : { visible: [], suppressed: [] };
  const found = { r: recalled, visible, suppressed };
  const hasProfile = parts !== undefined && !isEmptyProfile(parts);
  const out = c.recallFormat === "full"
    ? fullOutput(
      c,
      found,
      hasProfile ? renderProfile(parts, c.profileTokenBudget) : null,
      req.afterCompaction,
    )
    : digestOutput(c, found, hasProfile ? profileRows(parts, req.afterCompaction) : []);
  return {
    stdout: out.stdout,
    recall: req.reuse !== undefined ? "reused" : recalled?.source ?? "skipped",
    injected: out.injected,
    suppressed,
    profile: !req.profile
      ? "not-asked"
      : parts === undefined
      ? "unavailable"
      : hasProfile
      ? "injected"
      : "empty",
    printedChars: out.stdout.length,
    found: ask ? recalled : undefined,
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
    profile: "not-asked",
    printedChars: 0,
  };
  if (!config.enabled || !config.autoRecall) return empty;
  const peer = await resolvePeer(opts.cwd, peerOptions(config));
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
