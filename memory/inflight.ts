/**
 * Settling an intent a capture left behind: before each request a capture records which messages are about to
 * go out; when it could not record the outcome (killed, or its state could not be written), the next capture
 * asks where those messages are — in our queue, or already in the OpenViking session (runtime/held.ts) — and
 * acknowledges them there instead of sending them again. Messages found nowhere are sent again (a duplicate is
 * better than a loss).
 */

import type { Budget, OpenVikingClient } from "../openviking/client.ts";
import { isHeld, liveMessages } from "../openviking/sessions.ts";
import { messageKey, queuedMessageKeys } from "../openviking/queue.ts";
import type { Candidate } from "../kimi/journal/plan.ts";

/** Keys among `candidates` that are already queued or already in the session; the rest must be sent. */
export async function settledElsewhere(
  client: OpenVikingClient,
  options: { pendingDir: string; sessionId: string; budget: Budget },
  candidates: readonly Candidate[],
): Promise<{ keys: Set<string>; asked: "queue" | "server" | "unknown" }> {
  const keys = new Set<string>();
  if (!candidates.length) return { keys, asked: "queue" };
  const queued = await queuedMessageKeys(options.pendingDir, options.sessionId);
  const rest: Candidate[] = [];
  for (const c of candidates) {
    if (queued.has(await messageKey(options.sessionId, c.payload))) keys.add(c.key);
    else rest.push(c);
  }
  if (!rest.length) return { keys, asked: "queue" };
  const held = await liveMessages(client, options.sessionId, options.budget);
  if (!held) return { keys, asked: "unknown" };
  for (const c of rest) if (isHeld(held, c.payload)) keys.add(c.key);
  return { keys, asked: "server" };
}
