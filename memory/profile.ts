/** The user's profile (`profile.md`, the preference and entity memories) and its block within a token budget. */

import * as z from "zod/mini";
import type { Budget, OpenVikingClient, OvFailure } from "../openviking/client.ts";
import { neutralize, safe, SafeText } from "../lib/neutralize.ts";
import { PRINT_MAX_CHARS } from "../lib/printed.ts";
import { asRecord } from "../lib/parsed.ts";
import { headWithin, oneLine } from "./digest.ts";

/** A character's estimated tokens: a CJK one 1.5, any other a quarter. */
const tokenWeight = (ch: string) => ch.codePointAt(0)! >= 0x3000 ? 1.5 : 0.25;

/** A text's tokens, estimated. */
export const estimateTokens = (text: string): number =>
  Math.ceil(headWithin(text, Infinity, tokenWeight).used);

/** A profile within `tokens`: as it is, else its first 8 and last 3 lines, else cut (saying so). */
export function fitProfile(text: string, tokens: number): string {
  if (estimateTokens(text) <= tokens) return text;
  const lines = text.split("\n");
  const elided = `${lines.slice(0, 8).join("\n")}\n... [profile middle elided] ...\n${
    lines.slice(-3).join("\n")
  }`;
  if (lines.length > 12 && estimateTokens(elided) <= tokens) return elided;
  return `${
    text.slice(0, headWithin(text, Math.max(0, tokens - 6), tokenWeight).units)
  }\n... [profile truncated]`;
}

/** A memory file of a listing. */
export type MemoryLeaf = { path: string; abstract: string };

/** The profile as the server has it (untrusted): the user space, profile.md ("" if none), the leaves. */
export type ProfileParts = {
  space: string;
  profile: string;
  preferences: MemoryLeaf[];
  entities: MemoryLeaf[];
};

const Listing = z.union([z.array(z.unknown()), z.looseObject({ entries: z.array(z.unknown()) })]);
type Listing = z.output<typeof Listing>;
const Status = z.looseObject({ user: z.catch(z.optional(z.string()), undefined) });

const entriesOf = (l: Listing) => (Array.isArray(l) ? l : l.entries).map(asRecord);

/** The `.md` files of a listing (directories out), sorted. */
export function memoryLeaves(listing: Listing): MemoryLeaf[] {
  return entriesOf(listing).filter((e) => e.isDir !== true && e.is_dir !== true)
    .map((e) => ({
      path: String(e.rel_path ?? e.name ?? e.uri ?? ""),
      abstract: typeof e.abstract === "string" ? e.abstract : "",
    }))
    .filter((e) => e.path.endsWith(".md"))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The memories folder of a user space as printed: all but letters, digits and `_.@-` %-encoded. */
function spaceUri(space: string): string {
  const encoded = space.toWellFormed().slice(0, 128).replace(
    /[^\p{L}\p{N}_.@-]/gu,
    (c) =>
      [...new TextEncoder().encode(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(
        "",
      ),
  );
  return `viking://user/${encoded}/memories`;
}

/** The URI of a user space's profile, as printed. */
export const profileUri = (space: string): string => `${spaceUri(space)}/profile.md`;

/** Whether the server has nothing of the profile. */
export function isEmptyProfile(parts: ProfileParts): boolean {
  return !parts.profile.trim() && !parts.preferences.length && !parts.entities.length;
}

/** The profile block within `budget` tokens: `<user-profile>` (≤ half), then `<available-memories>`; null if empty. */
export function renderProfile(parts: ProfileParts, budget: number): SafeText | null {
  const base = safe`${spaceUri(parts.space)}`;
  const sections: SafeText[] = [];
  let used = 0;
  const profile = neutralize(parts.profile.slice(0, PRINT_MAX_CHARS)).trim();
  if (profile) {
    sections.push(
      safe`<user-profile uri="${base}/profile.md">\n${fitProfile(profile, budget / 2 | 0)}\n</user-profile>`,
    );
    used += estimateTokens(sections[0].text);
  }
  const listing: SafeText[] = [];
  for (const [name, leaves] of [["preferences", parts.preferences], ["entities", parts.entities]] as const) {
    if (!leaves.length) continue;
    listing.push(safe`  ${base}/${name}/`);
    let shown = 0;
    for (const leaf of leaves) {
      const abstract = oneLine(leaf.abstract, 200);
      const line = safe`    - ${oneLine(leaf.path, 200)}${abstract ? ` — ${abstract}` : ""}`;
      if (used + estimateTokens(line.text) > budget) break;
      used += estimateTokens(line.text);
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

/** The profile's parts, or why the server could not be asked at all (its first failure). Never throws. */
export async function fetchProfile(
  client: OpenVikingClient,
  budget: Budget,
): Promise<ProfileParts | OvFailure> {
  const [status, ls] = await Promise.all([
    client.request("GET", "/api/v1/system/status", Status, { budget }),
    client.request("GET", "/api/v1/fs/ls", Listing, {
      query: { uri: "viking://user", output: "original" },
      budget,
    }),
  ]);
  if (!status.ok && !ls.ok) return status;
  const user = status.ok ? status.result.user ?? "" : "";
  const dirs = ls.ok
    ? entriesOf(ls.result).filter((e) => e.isDir !== false).map((e) => String(e.name ?? ""))
    : [];
  const space = (user && dirs.includes(user) && user) || (dirs.includes("default") && "default") ||
    (dirs.length === 1 && dirs[0]) || user || "default";
  const base = `viking://user/${space}/memories`;
  const listing = (name: string) =>
    client.request("GET", "/api/v1/fs/ls", Listing, {
      query: { uri: `${base}/${name}`, output: "agent", recursive: true, abs_limit: 512, node_limit: 512 },
      budget,
    }).then((r) => (r.ok ? memoryLeaves(r.result) : []));
  const [profile, preferences, entities] = await Promise.all([
    client.request("GET", "/api/v1/content/read", z.string(), {
      query: { uri: `${base}/profile.md` },
      budget,
    })
      .then((r) => (r.ok ? r.result : "")),
    listing("preferences"),
    listing("entities"),
  ]);
  return { space, profile, preferences, entities };
}
