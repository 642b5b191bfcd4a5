/** Test helpers for our queue: writing entries, reading back what it holds and what the rejected place keeps. */

import { listDir } from "../../lib/fs.ts";
import { joinPath } from "../../lib/paths.ts";
import { Budget, createClient } from "../../openviking/client.ts";
import {
  keepRejected,
  messageKey,
  type MessagePayload,
  QUEUE_SUBDIR,
  type QueueEntry,
  QueueEntrySchema,
  REJECTED_SUBDIR,
  type ReplayOptions,
  SessionQueue,
} from "../../openviking/queue.ts";
import type { FakeOpenViking } from "./fake-openviking.ts";

/** Message `i` of a test conversation: user and assistant in turn, two per turn. */
export const payload = (i: number): MessagePayload => ({
  role: i % 2 ? "assistant" : "user",
  content: `message ${i}`,
  turn_id: String(Math.floor(i / 2)),
});
/** Messages `from` … `from + n - 1`. */
export const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => payload(from + i));
/** A replay's bounds for tests: 50 entries, 7 days, 20 s. */
export const replayOpts = (extra: Partial<ReplayOptions> = {}): ReplayOptions => ({
  limit: 50,
  budget: new Budget(20_000),
  ...extra,
});
/** A client of the fake at `url` with a 2 s timeout. */
export const clientOf = (url: string) => createClient({ baseUrl: url, userAgent: "t", timeoutMs: 2000 });
/** The contents of the messages the fake holds for session `sid`. */
export const contents = (fake: FakeOpenViking, sid = "kc-s1") => fake.messages(sid).map((m) => m.content);

/** Queues messages of session `sessionId` in order (see `SessionQueue.messages`); how many are queued. */
export async function enqueueMessages(
  pendingDir: string,
  sessionId: string,
  payloads: readonly MessagePayload[],
  now = Date.now(),
): Promise<number> {
  return await (await SessionQueue.open(pendingDir, sessionId, undefined)).messages(payloads, { now });
}

/** Queues the commit named `key` behind the session's queued writes; false when it could not be stored. */
export async function enqueueCommit(pendingDir: string, sessionId: string, key: string, now = Date.now()) {
  return await (await SessionQueue.open(pendingDir, sessionId, undefined)).commit(key, now);
}

/** The name of one of our queue entries (or a replay's claim of one). */
export const QUEUE_FILE = /^\d{10}-(m\d+|c)(\.json|\.\d+\.claim)$/;

/** Keeps messages (or the commit named `commit`) of `sessionId` in the rejected place, refused `why`. */
export async function keepRefused(
  pendingDir: string,
  sessionId: string,
  write: readonly MessagePayload[] | { commit: string },
  why: { status: number; message: string },
): Promise<void> {
  const body = "commit" in write ? { kind: "commit" as const, key: write.commit } : {
    kind: "messages" as const,
    messages: await Promise.all(
      write.map(async (payload) => ({ key: await messageKey(sessionId, payload), payload })),
    ),
  };
  await keepRejected(pendingDir, { sessionId, ...body }, why);
}

/** One item of our queue, flattened: a message or a commit, in replay order. */
interface QueuedItem {
  sessionId: string;
  kind: "message" | "commit";
  payload?: { role: string; content: string; turn_id?: string };
  commitKey?: string;
  file: string;
  /** In the rejected place: why the server refused it, and when. */
  rejection?: { at: number; status: number; message: string };
}

/** Everything our queue (or `subdir`) holds (claims included), sessions by name, entries by sequence. */
export async function ourQueue(pendingDir: string, subdir = QUEUE_SUBDIR): Promise<QueuedItem[]> {
  const out: QueuedItem[] = [];
  const names = async (dir: string) => (await listDir(dir)).map((e) => e.name).sort();
  for (const d of await names(joinPath(pendingDir, subdir))) {
    for (const name of (await names(joinPath(pendingDir, subdir, d))).filter((n) => QUEUE_FILE.test(n))) {
      const file = joinPath(pendingDir, subdir, d, name);
      const text = await Deno.readTextFile(file).catch(() => undefined);
      if (text === undefined) continue;
      const raw = JSON.parse(text);
      const entry: QueueEntry = QueueEntrySchema.parse(raw);
      const item = {
        sessionId: entry.sessionId,
        file,
        ...(subdir === REJECTED_SUBDIR && { rejection: raw.rejection }),
      };
      if (entry.kind === "commit") out.push({ ...item, kind: "commit", commitKey: entry.key });
      for (const m of entry.kind === "messages" ? entry.messages : []) {
        out.push({ ...item, kind: "message", payload: m.payload });
      }
    }
  }
  return out;
}

/** What the rejected place keeps, as `ourQueue` reads it (each item with its rejection). */
export const rejectedWrites = (pendingDir: string): Promise<QueuedItem[]> =>
  ourQueue(pendingDir, REJECTED_SUBDIR);

/** Messages waiting in our queue (optionally of one session). */
export async function queuedMessages(pendingDir: string, sessionId?: string): Promise<QueuedItem[]> {
  return (await ourQueue(pendingDir)).filter((q) =>
    q.kind === "message" && (!sessionId || q.sessionId === sessionId)
  );
}
