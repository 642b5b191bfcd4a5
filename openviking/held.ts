/**
 * What an OpenViking session already holds, asked before sending again what may have arrived already: the
 * request a killed capture recorded as its intent (hooks/inflight.ts), a queued entry whose last request got
 * no reply or whose replay died (replay.ts), and a capture whose state was damaged (hooks/capture.ts). A
 * message is held when the session has one of the same role and text (and turn, when the server kept it).
 */

import * as z from "zod/mini";
import type { Budget, OpenVikingClient } from "./client.ts";
import { type MessagePayload, sessionPath } from "./deliver.ts";
import { isRecord } from "../lib/parsed.ts";

/** A message the server holds, as far as matching goes. */
export interface HeldMessage {
  role: string;
  turnId?: string;
  text: string;
}

/** Messages in a reply (`GET …/context`, an archive): their text is in `parts` (or, older, `content`). */
const MessagesReply = z.looseObject({ messages: z.catch(z.array(z.unknown()), []) });

/** The session's meta (`GET /sessions/{id}`): how many commits (archives) it has. */
const SessionReply = z.looseObject({ commit_count: z.catch(z.int(), 0) });

/** The messages of a reply. Pure. */
function heldIn(result: z.output<typeof MessagesReply>): HeldMessage[] {
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

/** Whether `held` has this message. Pure. */
export function isHeld(held: readonly HeldMessage[], payload: MessagePayload): boolean {
  return held.some((m) =>
    m.role === payload.role && m.text === payload.content &&
    (m.turnId === undefined || m.turnId === payload.turn_id)
  );
}

/**
 * One GET of the session: its result; `null` when the server says there is no such thing (a 404: the session,
 * an archive whose extraction failed or is not done, a route an older server lacks); else undefined.
 */
async function get<S extends z.ZodMiniType>(
  client: OpenVikingClient,
  path: string,
  schema: S,
  budget: Budget,
): Promise<z.output<S> | null | undefined> {
  const res = await client.request("GET", path, schema, { budget, peerId: null, maxReplyBytes: 16 << 20 });
  if (res.ok) return res.result;
  return res.status === 404 ? null : undefined;
}

/** The messages the session holds since its last commit; undefined when the server cannot say. */
export async function liveMessages(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage[] | undefined> {
  const live = await get(client, `${sessionPath(sid)}/context`, MessagesReply, budget);
  return live === undefined ? undefined : live === null ? [] : heldIn(live);
}

/**
 * The newest message the session holds, archived ones included: the newest live one, else the last of the
 * newest archive that can be read (`null`: none at all); undefined when the server cannot say.
 */
export async function newestHeld(
  client: OpenVikingClient,
  sid: string,
  budget: Budget,
): Promise<HeldMessage | null | undefined> {
  const live = await get(client, `${sessionPath(sid)}/context`, MessagesReply, budget);
  if (!live) return live; // no such session (null), or no answer
  const newest = heldIn(live).at(-1);
  if (newest) return newest;
  const meta = await get(client, sessionPath(sid), SessionReply, budget);
  if (!meta) return undefined; // it was there a moment ago
  for (let n = meta.commit_count; n > 0; n--) {
    const id = `archive_${String(n).padStart(3, "0")}`;
    const archive = await get(client, `${sessionPath(sid)}/archives/${id}`, MessagesReply, budget);
    if (archive === undefined) return undefined;
    const last = archive && heldIn(archive).at(-1);
    if (last) return last;
  }
  return null;
}
