/**
 * The user's profile block, injected once per session: `profile.md` plus a listing of the user's
 * preference and entity memories, within a token budget (CJK-aware estimate), as OpenViking's other plugins
 * build it. `null` when the server has nothing for this user. Every server text in it is neutralised.
 */

import * as z from "zod/mini";
import type { Budget, OpenVikingClient, OvFailure } from "../openviking/client.ts";
import { neutralize, safe, SafeText } from "../lib/neutralize.ts";
import { PRINT_MAX_CHARS } from "../lib/printed.ts";
import { asRecord } from "../lib/parsed.ts";

/** Token estimate: CJK characters count 1.5, everything else a quarter. */
export function profileTokens(text: string): number {
  let t = 0;
  for (const ch of text) t += ch.codePointAt(0)! >= 0x3000 ? 1.5 : 0.25;
  return Math.ceil(t);
}

/** Cuts text to roughly `tokens` tokens, keeping whole characters. */
function cutToTokens(text: string, tokens: number): string {
  let t = 0;
  let i = 0;
  for (const ch of text) {
    t += ch.codePointAt(0)! >= 0x3000 ? 1.5 : 0.25;
    if (t > tokens) break;
    i += ch.length;
  }
  return text.slice(0, i);
}

/** Shortens a profile to at most `tokens`: head and tail with the middle elided, or a plain cut. */
export function fitProfile(text: string, tokens: number): string {
  if (profileTokens(text) <= tokens) return text;
  const lines = text.split("\n");
  if (lines.length > 12) {
    const head = lines.slice(0, 8).join("\n");
    const tail = lines.slice(-3).join("\n");
    const elided = `${head}\n... [profile middle elided] ...\n${tail}`;
    if (profileTokens(elided) <= tokens) return elided;
  }
  return `${cutToTokens(text, Math.max(0, tokens - 6))}\n... [profile truncated]`;
}

/** A leaf memory file from a directory listing. */
export interface MemoryLeaf {
  path: string;
  abstract: string;
}

/** The profile's reply schemas. */
function buildProfileReplies() {
  const entries = z.array(z.unknown());
  return {
    /** `/system/status`'s result: the user the key belongs to. */
    status: z.looseObject({ user: z.catch(z.optional(z.string()), undefined) }),
    /** The user spaces (`fs/ls viking://user`). */
    spaces: entries,
    /** An `fs/ls` result: the entries, as a list or (some versions) under `entries`. */
    listing: z.union([entries, z.looseObject({ entries })]),
    /** `/content/read`'s result: the text. */
    content: z.string(),
  };
}

let profileReplyCache: ReturnType<typeof buildProfileReplies> | undefined;

/** The profile's reply schemas, built when a profile is first fetched (once per session, not per prompt). */
function profileReplies(): ReturnType<typeof buildProfileReplies> {
  return profileReplyCache ??= buildProfileReplies();
}

/** A listing as parsed. */
export type Listing = z.output<ReturnType<typeof profileReplies>["listing"]>;

/** The entries of a listing. */
function entriesOf(listing: Listing): Record<string, unknown>[] {
  return (Array.isArray(listing) ? listing : listing.entries).map(asRecord);
}

/** Leaves (`.md` files) of an `fs/ls` result, sorted. */
export function memoryLeaves(result: Listing): MemoryLeaf[] {
  return entriesOf(result)
    .filter((e) => e.isDir !== true && e.is_dir !== true)
    .map((e) => ({
      path: String(e.rel_path ?? e.name ?? e.uri ?? ""),
      abstract: typeof e.abstract === "string" ? e.abstract : "",
    }))
    .filter((e) => e.path.endsWith(".md"))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** A user space as printed inside a URI: letters, digits and `_.@-` as they are, the rest percent-encoded. */
function printableSpace(space: string): string {
  return space.toWellFormed().slice(0, 128).replace(
    /[^\p{L}\p{N}_.@-]/gu,
    (c) =>
      [...new TextEncoder().encode(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(
        "",
      ),
  );
}

/** One line of server text: neutralised, whitespace collapsed, at most `max` characters. */
function oneLine(text: string, max: number): string {
  return neutralize(text.slice(0, max * 4 + 64)).replace(/\s+/g, " ").trim().slice(0, max);
}

/** What the profile is made of, as the server has it (every string untrusted). */
export interface ProfileParts {
  /** The user space (`viking://user/<space>/…`). */
  space: string;
  /** profile.md's text; "" when there is none. */
  profile: string;
  preferences: MemoryLeaf[];
  entities: MemoryLeaf[];
}

/** The URI of the profile of a user space, as printed. */
export function profileUri(space: string): string {
  return `viking://user/${printableSpace(space)}/memories/profile.md`;
}

/** Whether the server has nothing of the profile at all. */
export function isEmptyProfile(parts: ProfileParts): boolean {
  return !parts.profile.trim() && !parts.preferences.length && !parts.entities.length;
}

/** Renders the profile block from its parts within `budget` tokens (pure). */
export function renderProfile(parts: ProfileParts, budget: number): SafeText | null {
  const base = safe`viking://user/${printableSpace(parts.space)}/memories`;
  const sections: SafeText[] = [];
  let used = 0;
  const profile = neutralize(parts.profile.slice(0, PRINT_MAX_CHARS)).trim();
  if (profile) {
    const fitted = fitProfile(profile, Math.floor(budget / 2));
    sections.push(safe`<user-profile uri="${base}/profile.md">\n${fitted}\n</user-profile>`);
    used += profileTokens(sections[0].text);
  }
  const listing: SafeText[] = [];
  for (const [name, leaves] of [["preferences", parts.preferences], ["entities", parts.entities]] as const) {
    if (!leaves.length) continue;
    listing.push(safe`  ${base}/${name}/`);
    let shown = 0;
    for (const leaf of leaves) {
      const abstract = oneLine(leaf.abstract, 200);
      const line = abstract
        ? safe`    - ${oneLine(leaf.path, 200)} — ${abstract}`
        : safe`    - ${oneLine(leaf.path, 200)}`;
      if (used + profileTokens(line.text) > budget) break;
      used += profileTokens(line.text);
      listing.push(line);
      shown++;
    }
    if (shown < leaves.length) {
      listing.push(safe`    ... +${leaves.length - shown} more: use the search MCP tool`);
    }
  }
  if (listing.length) {
    sections.push(safe`<available-memories>\n${SafeText.join(listing, safe`\n`)}\n</available-memories>`);
  }
  return sections.length ? SafeText.join(sections, safe`\n`) : null;
}

/** Fetches the profile's parts. Never throws; undefined when the server could not be asked at all. */
export async function fetchProfile(
  client: OpenVikingClient,
  budget: Budget,
): Promise<ProfileParts | undefined> {
  const got = await fetchProfileOrFailure(client, budget);
  return "ok" in got ? undefined : got;
}

/** The profile's parts, or why the server could not be asked at all (its first failure). Never throws. */
export async function fetchProfileOrFailure(
  client: OpenVikingClient,
  budget: Budget,
): Promise<ProfileParts | OvFailure> {
  const [status, ls] = await Promise.all([
    client.request("GET", "/api/v1/system/status", profileReplies().status, { budget }),
    client.request("GET", "/api/v1/fs/ls", profileReplies().spaces, {
      query: { uri: "viking://user", output: "original" },
      budget,
    }),
  ]);
  if (!status.ok && !ls.ok) return status;
  const statusUser = status.ok ? status.result.user ?? "" : "";
  const dirs = ls.ok
    ? entriesOf(ls.result).filter((e) => e.isDir !== false).map((e) => String(e.name ?? ""))
    : [];
  const space = (statusUser && dirs.includes(statusUser) && statusUser) ||
    (dirs.includes("default") && "default") ||
    (dirs.length === 1 && dirs[0]) || statusUser || "default";
  const base = `viking://user/${space}/memories`;
  const listing = (name: string) =>
    client.request("GET", "/api/v1/fs/ls", profileReplies().listing, {
      query: { uri: `${base}/${name}`, output: "agent", recursive: true, abs_limit: 512, node_limit: 512 },
      budget,
    }).then((r) => (r.ok ? memoryLeaves(r.result) : []));
  const [profile, preferences, entities] = await Promise.all([
    client.request("GET", "/api/v1/content/read", profileReplies().content, {
      query: { uri: `${base}/profile.md` },
      budget,
    })
      .then((r) => (r.ok ? r.result : "")),
    listing("preferences"),
    listing("entities"),
  ]);
  return { space, profile, preferences, entities };
}
