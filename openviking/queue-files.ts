/**
 * Our offline write queue on disk: `<pending>/kimicode/<session>/` holds one file per queued request — a batch
 * of up to 100 messages (`kind: "messages"`) or one commit (`kind: "commit"`) — named by a per-session
 * sequence number, so a session's writes replay in the order they were queued whatever the clock says.
 * File names carry the kind and size (`<seq>-m<count>.json`, `<seq>-c.json`), so listing a queue reads no
 * file; replay claims a file by renaming it to `<seq>-<tag>.<pid>.claim`. Messages carry a dedupe key.
 * The writes OpenViking refused for good (or that waited past the queue's age limit) are kept beside it in the
 * same form, one per file, with the server's words and when: `<pending>/kimicode-rejected/<session>/`.
 * The writer is pending.ts, the replay replay.ts.
 */

import * as z from "zod/mini";
import { sha256Hex, stableStringify } from "../lib/hash.ts";
import { isNotFound } from "../lib/fs.ts";
import { joinPath } from "../lib/paths.ts";
import { safeId } from "../lib/paths.ts";
import { isRecord } from "../lib/parsed.ts";
import type { MessagePayload } from "./deliver.ts";

/** Subdirectory of the shared pending directory that holds our queue. */
export const QUEUE_SUBDIR = "kimicode";

/** Subdirectory of the shared pending directory that keeps the writes OpenViking refused (`replay --rejected`). */
export const REJECTED_SUBDIR = "kimicode-rejected";

/** A claim older than this (or dated more than FUTURE_SLACK_MS in the future) was abandoned and is put back. */
export const ABANDONED_AFTER_MS = 10 * 60_000;

/** A claim dated this far in the future (a clock set back) counts as abandoned too. */
export const FUTURE_SLACK_MS = 60_000;

const MessageSchema = z.object({
  role: z.enum(["user", "assistant"]),
  content: z.string(),
  turn_id: z.optional(z.string()),
});

/**
 * What every queued request has: the format version, its session, its place in the session's queue, its time;
 * `unsure` when a request of it may have reached the server without the reply reaching us (no reply came, or
 * the replay sending it died): replay asks the session what it holds before sending it again.
 */
const ENTRY_BASE = {
  version: z.literal(1),
  sessionId: z.string().check(z.minLength(1)),
  seq: z.int().check(z.positive()),
  createdAt: z.number(),
  unsure: z.optional(z.literal(true)),
};

/** One queued request: a batch of messages, or a commit. */
export const QueueEntrySchema = z.discriminatedUnion("kind", [
  z.object({
    ...ENTRY_BASE,
    kind: z.literal("messages"),
    messages: z.array(z.object({ key: z.string(), payload: MessageSchema })).check(z.minLength(1)),
  }),
  z.object({ ...ENTRY_BASE, kind: z.literal("commit"), key: z.string() }),
]);
export type QueueEntry = z.infer<typeof QueueEntrySchema>;

/** Why a kept write was refused: the server's HTTP status (0: it never reached it) and words, and when. */
const RejectionSchema = z.object({ at: z.number(), status: z.number(), message: z.string() });
export type Rejection = z.infer<typeof RejectionSchema>;

/** `<seq>-<tag>.json`, tag `m<count>` (messages) or `c` (a commit): listing a queue never reads its files. */
const ENTRY = /^(\d{10})-(m\d+|c)\.json$/;
/** `<seq>-<tag>.<pid>.claim`: claimed by replay process `pid`. */
const CLAIM = /^(\d{10})-(m\d+|c)\.(\d+)\.claim$/;

/** The dedupe key of a message: sha256 of session id and the payload with sorted keys. */
export async function messageKey(sessionId: string, payload: MessagePayload): Promise<string> {
  return await sha256Hex(`addMessage\n${sessionId}\n${stableStringify(payload)}`);
}

/** The queue directory of one OpenViking session (its rejected writes' with `subdir` REJECTED_SUBDIR). */
export async function sessionQueueDir(
  pendingDir: string,
  sessionId: string,
  subdir = QUEUE_SUBDIR,
): Promise<string> {
  return joinPath(pendingDir, subdir, await safeId(sessionId));
}

/** A file of a session's queue. */
export interface QueueFile {
  name: string;
  seq: number;
  /** `m<count>` or `c`. */
  tag: string;
  /** The pid of the replay that claimed it (claims only). */
  claimedBy?: number;
}

const pad = (seq: number) => String(seq).padStart(10, "0");

/** The name of an entry: `<seq>-<tag>.json`. */
const entryName = (seq: number, tag: string): string => `${pad(seq)}-${tag}.json`;

/** The name of an entry claimed by replay process `pid`: `<seq>-<tag>.<pid>.claim`. */
export const claimName = (seq: number, tag: string, pid: number): string => `${pad(seq)}-${tag}.${pid}.claim`;

/** The tag of an entry's name: `c` for a commit, `m<count>` for messages. */
const tagOf = (entry: QueueEntry): string => entry.kind === "commit" ? "c" : `m${entry.messages.length}`;

/** The file of entry `seq` named for what it holds: `entry`'s contents, or a tag already known. */
export function entryFile(seq: number, holds: QueueEntry | string): QueueFile {
  const tag = typeof holds === "string" ? holds : tagOf(holds);
  return { name: entryName(seq, tag), seq, tag };
}

/** The queue directories of one session, or of every session that has one (none when there is no queue). */
export async function sessionDirs(
  pendingDir: string,
  sessionId?: string,
  subdir = QUEUE_SUBDIR,
): Promise<string[]> {
  if (sessionId !== undefined) return [await sessionQueueDir(pendingDir, sessionId, subdir)];
  const root = joinPath(pendingDir, subdir);
  const dirs: string[] = [];
  try {
    for await (const e of Deno.readDir(root)) if (e.isDirectory) dirs.push(joinPath(root, e.name));
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return dirs;
}

/** How many messages an entry's tag says it holds. */
export const messagesIn = (tag: string): number => tag.startsWith("m") ? Number(tag.slice(1)) : 0;

/** The entries and claims of a session's queue directory, in sequence order (none when it does not exist). */
export async function queueFiles(dir: string): Promise<QueueFile[]> {
  const out: QueueFile[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) continue;
      const m = ENTRY.exec(e.name);
      if (m) out.push({ name: e.name, seq: Number(m[1]), tag: m[2] });
      const c = CLAIM.exec(e.name);
      if (c) out.push({ name: e.name, seq: Number(c[1]), tag: c[2], claimedBy: Number(c[3]) });
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** An entry file, parsed; undefined when it is gone or not an entry this version understands. */
export async function readEntry(path: string): Promise<QueueEntry | undefined> {
  try {
    return QueueEntrySchema.safeParse(JSON.parse(await Deno.readTextFile(path))).data;
  } catch {
    return undefined;
  }
}

/** Why the write in a file of the rejected place was refused; undefined when the file does not say. */
export async function readRejection(path: string): Promise<Rejection | undefined> {
  try {
    const raw: unknown = JSON.parse(await Deno.readTextFile(path));
    return RejectionSchema.safeParse(isRecord(raw) ? raw.rejection : undefined).data;
  } catch {
    return undefined;
  }
}
