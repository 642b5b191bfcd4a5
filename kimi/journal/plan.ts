/** The capture plan: which messages still have to reach OpenViking, and what may be acknowledged. */

import { prepareText, type SkipReason } from "./clean.ts";
import { secretPrint } from "../../lib/redact.ts";
import { assistantText, type Turn, userText } from "./turns.ts";

type Role = "user" | "assistant";

/** One message to send, and its `payload`: what goes to the server. */
export type Candidate = { key: string; turnIndex: number; role: Role; payload: PlanPayload };
type PlanPayload = { role: Role; content: string; turn_id: string };

/** A message that will not be sent, and why. */
type Skipped = {
  key: string;
  turnIndex: number;
  reason: SkipReason | "already-captured" | "retracted" | "sent-by-fallback";
};

/** A capture's plan: the turns considered, in order; `learned`: the prints of the secrets its turns hold. */
export type Plan = { turns: Turn[]; toSend: Candidate[]; skipped: Skipped[]; learned: string[] };

/** The longest message capture sends (characters); a longer one is cut. */
export const CAPTURE_MAX_LENGTH = 24_000;

/** `includeOpen`: open turns too (forced); `maxTurns`: a step's; `prints`: secrets earlier captures found. */
export type PlanOptions = {
  maxLength: number;
  redact: boolean;
  includeOpen: boolean;
  maxTurns?: number;
  prints?: readonly string[];
};

/** The key of a turn's message. */
export const captureKey = (turnIndex: number, role: Role): string => `${turnIndex}:${role}`;

/** Two FNV-1a passes (different offset bases) over a text's UTF-16 units, as 16 hex digits; synchronous. */
function textHash(text: string): string {
  let [h1, h2] = [0x811c9dc5, 0x050c5d1f];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193);
  }
  return (h1 >>> 0).toString(16).padStart(8, "0") + (h2 >>> 0).toString(16).padStart(8, "0");
}

/** The key a user message sent by the prompt fallback is acknowledged under: its text and when it was seen. */
export const fallbackKey = (text: string, at: number): string => `fb:${textHash(text)}@${at}`;

/** Whether a journal prompt of `time` may be the one the prompt hook saw at `at` (10 s before to 60 s after). */
export const seenAt = (time: number, at: number): boolean => time >= at - 10_000 && time <= at + 60_000;

/** What `acked` holds besides whole messages: fallback sends by text hash, open answers' parts (decision 8). */
function sentBefore(acked: ReadonlySet<string>) {
  const byFallback = new Map<string, number[]>();
  const parts = new Map<string, { length: number; hash: string }>();
  for (const key of acked) {
    const fb = /^fb:([0-9a-f]{16})@(\d+)$/.exec(key);
    if (fb) byFallback.set(fb[1], [...(byFallback.get(fb[1]) ?? []), Number(fb[2])]);
    const m = /^(\d+:assistant)@(\d+)#([0-9a-f]{16})$/.exec(key);
    if (m && Number(m[2]) > (parts.get(m[1])?.length ?? -1)) {
      parts.set(m[1], { length: Number(m[2]), hash: m[3] });
    }
  }
  return { byFallback, parts };
}

/** Takes (once) the fallback send of `text` that matches a turn begun at `time`. */
function takeFallback(sent: Map<string, number[]>, text: string, time: number | undefined): boolean {
  const ats = time === undefined ? undefined : sent.get(textHash(text));
  const i = ats?.findIndex((at) => seenAt(time!, at)) ?? -1;
  return i >= 0 && ats!.splice(i, 1).length > 0;
}

/** Plans a capture over `turns`, skipping what `acked` (keys) or `ackedBelow` (turn index watermark) cover. */
export function planCapture(
  turns: readonly Turn[],
  acked: ReadonlySet<string>,
  ackedBelow: number,
  options: PlanOptions,
): Plan {
  const { byFallback, parts } = sentBefore(acked);
  // A secret recognised in one message (`password=…`) is hidden wherever the others repeat it bare: every text
  // is prepared once, learning; one prepared before a later text taught a secret is prepared again.
  const [seen, prints] = [new Set<string>(), new Set(options.prints)];
  const prepare = (raw: string, role: Role) => prepareText(raw, role, { ...options, seen, prints });
  const first = new Map<string, ReturnType<typeof prepare> & { known: number }>(); // and the secrets known then
  for (const t of options.redact ? turns : []) {
    for (const role of ["user", "assistant"] as const) {
      const raw = (role === "user" ? userText : assistantText)(t);
      first.set(captureKey(t.index, role), { ...prepare(raw, role), known: seen.size });
    }
  }
  const plan: Plan = { turns: [], toSend: [], skipped: [], learned: [...seen].map(secretPrint) };
  for (const turn of turns) {
    if (!turn.closed && !options.includeOpen) break; // whole turns only, in order
    if (turn.index < ackedBelow) continue;
    if (options.maxTurns !== undefined && plan.turns.length >= options.maxTurns) break;
    plan.turns.push(turn);
    for (const role of ["user", "assistant"] as const) {
      const key = captureKey(turn.index, role);
      const skip = (reason: Skipped["reason"]) => plan.skipped.push({ key, turnIndex: turn.index, reason });
      if (acked.has(key) || turn.retracted) { // retracted: settled; what was captured before the undo stays
        skip(acked.has(key) ? "already-captured" : "retracted");
        continue;
      }
      const done = first.get(key);
      const { text, reason } = done?.known === seen.size
        ? done
        : prepare((role === "user" ? userText : assistantText)(turn), role);
      const part = parts.get(key); // an open turn's answer sent so far: only what it gained goes now
      const gained = part && text.length > part.length && textHash(text.slice(0, part.length)) === part.hash;
      if (reason) skip(reason);
      else if (role === "user" && takeFallback(byFallback, text, turn.time)) skip("sent-by-fallback");
      else if (part && !gained && text.length <= part.length) skip("already-captured");
      else {
        plan.toSend.push({
          key: turn.closed || role === "user" ? key : `${key}@${text.length}#${textHash(text)}`,
          turnIndex: turn.index,
          role,
          payload: { role, content: gained ? text.slice(part.length) : text, turn_id: turn.id },
        });
      }
    }
  }
  return plan;
}

/**
 * Acknowledges the first `count` planned messages: the `keys`, `ackedBelow` (every turn below it done: closed,
 * wholly acknowledged), `resumeAt` (the first scanned turn not done; the cursor stays at its start).
 */
export function acknowledge(
  plan: Plan,
  count: number,
  ackedBelow: number,
  scanned: readonly Turn[],
  nextIndex: number,
): { keys: string[]; ackedBelow: number; resumeAt?: Turn } {
  const keys = plan.toSend.slice(0, count).map((c) => c.key);
  const unacked = new Set(plan.toSend.slice(count).map((c) => c.turnIndex));
  const considered = new Set(plan.turns.map((t) => t.index));
  // An open turn a forced capture took holds the cursor too: a line it was still writing is taken later.
  const resumeAt = scanned.find((t) =>
    t.index >= ackedBelow && (!considered.has(t.index) || unacked.has(t.index) || !t.closed)
  );
  return { keys, ackedBelow: Math.max(ackedBelow, resumeAt ? resumeAt.index : nextIndex), resumeAt };
}
