/**
 * Settling an intent a capture left behind: before each request a capture records which messages are about to
 * go out; when it could not record the outcome (killed, or its state could not be written), the next capture
 * asks where those messages are — in our queue, or already in the OpenViking session — and acknowledges them
 * there instead of sending them again. Messages found nowhere are sent again (a duplicate is better than a loss).
 */

import * as z from "zod/mini";
import { sessionPath } from "../runtime/deliver.ts";
import type { Budget, OpenVikingClient } from "../runtime/http.ts";
import { queuedMessageKeys } from "../runtime/pending.ts";
import { messageKey } from "../runtime/pending-files.ts";
import { isRecord } from "../runtime/parsed.ts";
import type { Candidate } from "../wire/plan.ts";

/** A message the server holds, as far as matching goes. */
interface HeldMessage {
  role: string;
  turnId?: string;
  text: string;
}

/** A session's context (`GET …/context`): its messages, whose text is in `parts` (or, older, `content`). */
const ContextReply = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

/** The messages of a session's context reply. Pure. */
function heldMessages(result: z.output<typeof ContextReply>): HeldMessage[] {
  return result.messages.filter(isRecord).map((m) => ({
    role: String(m.role ?? ""),
    turnId: typeof m.turn_id === "string" ? m.turn_id : undefined,
    text: Array.isArray(m.parts)
      ? m.parts.filter(isRecord).map((p) => (typeof p.text === "string" ? p.text : "")).join("")
      : typeof m.content === "string"
      ? m.content
      : "",
  }));
}

/** Whether the server holds this message (same role, turn and text). Pure. */
function isHeld(held: readonly HeldMessage[], c: Candidate): boolean {
  return held.some((m) =>
    m.role === c.payload.role && m.text === c.payload.content &&
    (m.turnId === undefined || m.turnId === c.payload.turn_id)
  );
}

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
  const res = await client.request(
    "GET",
    `${sessionPath(options.sessionId)}/context`,
    ContextReply,
    {
      budget: options.budget,
      peerId: null,
      maxReplyBytes: 16 << 20,
    },
  );
  if (!res.ok) return { keys, asked: "unknown" };
  const held = heldMessages(res.result);
  for (const c of rest) if (isHeld(held, c)) keys.add(c.key);
  return { keys, asked: "server" };
}
