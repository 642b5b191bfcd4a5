/** The user's profile as the server has it: `profile.md` and the preference and entity memories (digest.ts prints it). */

import * as z from "zod/mini";
import { type Budget, type OpenVikingClient, type OvFailure, readContent } from "../openviking/client.ts";
import { asRecord, tolerant } from "../lib/parsed.ts";
import { redact } from "../lib/redact.ts";

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
const Status = z.looseObject({ user: tolerant(z.string()) });

const entriesOf = (l: Listing) => (Array.isArray(l) ? l : l.entries).map(asRecord);

/** The `.md` files of a listing (directories out; a URI only when `viking://`: a link is none), sorted. */
export function memoryLeaves(listing: Listing): MemoryLeaf[] {
  return entriesOf(listing).filter((e) => e.isDir !== true && e.is_dir !== true)
    .map((e) => ({
      path: String(e.rel_path ?? e.name ?? e.uri ?? ""),
      abstract: typeof e.abstract === "string" ? e.abstract : "",
    }))
    .filter((e) =>
      e.path.endsWith(".md") &&
      (!/^(?:[a-z][\w+.-]*:\/\/|(?:javascript|data|vbscript|file):)/i.test(e.path) ||
        e.path.startsWith("viking://"))
    )
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The parts redacted like captured text, field by field (before rendering, which escapes `<`). */
export function redactedProfile(p: ProfileParts): ProfileParts {
  const leaf = (l: MemoryLeaf) => ({ path: redact(l.path), abstract: redact(l.abstract) });
  return {
    ...p,
    profile: redact(p.profile),
    preferences: p.preferences.map(leaf),
    entities: p.entities.map(leaf),
  };
}

/** Whether the server has nothing of the profile. */
export function isEmptyProfile(parts: ProfileParts): boolean {
  return !parts.profile.trim() && !parts.preferences.length && !parts.entities.length;
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
    readContent(client, `${base}/profile.md`, { budget }).then((r) => (r.ok ? r.result : "")),
    listing("preferences"),
    listing("entities"),
  ]);
  return { space, profile, preferences, entities };
}
