/** One memory as the server gives it, and how memories rank: the shape recall, the digest and `memories` share. */

import * as z from "zod/mini";
import { tolerant } from "../lib/parsed.ts";

/** One memory (every string the server's): `category` its kind, `detail` its level; `score` a search's. */
export const MemorySchema = z.object({
  uri: z.string(),
  text: z.catch(z.string(), ""),
  score: tolerant(z.number()),
  category: tolerant(z.string()),
  detail: tolerant(z.string()),
});
export type Memory = z.infer<typeof MemorySchema>;

/** A memory a prompt printed: the characters its line took (the ledger's, `recall --json`'s). */
export const ShownSchema = z.object({ uri: z.string(), score: z.optional(z.number()), chars: z.number() });

/** Whether a memory-space URI is a folder's summary (a sidecar or the folder itself), no memory. */
export function isFolderSummary(uri: string): boolean {
  return /\/memories(?:\/|$)/.test(uri) &&
    (/\/\.(?:abstract|overview)\.md$/.test(uri) || !uri.endsWith(".md"));
}

/** The one ranking of memories: best score first, then the newest (`modified`), else as they came. */
export const byRank = (a: Memory & { modified?: number }, b: Memory & { modified?: number }): number =>
  (b.score ?? 0) - (a.score ?? 0) || (b.modified ?? 0) - (a.modified ?? 0);
