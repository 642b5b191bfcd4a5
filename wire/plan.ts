/**
 * The capture plan: which messages of which turns still have to reach OpenViking, and — once some were
 * sent or queued — what may be acknowledged. Keys are `<turn index>:<role>`; only a contiguous prefix of the
 * plan is ever acknowledged, and the cursor only moves past turns whose every message is acknowledged.
 * A turn the user withdrew with `/undo` is never sent (skipped as "retracted", which settles it); one that was
 * captured before the undo stays on the server — OpenViking has no message delete, and we send none.
 */

import { redact } from "../runtime/redact.ts";
import { cleanInjected, type SkipReason, skipReason, truncate } from "./clean.ts";
import { assistantText, type Turn, userText } from "./turns.ts";

/** One message to send. */
export interface Candidate {
  key: string;
  turnIndex: number;
  role: "user" | "assistant";
  /** What goes to the server: `{role, content, turn_id}`. */
  payload: { role: "user" | "assistant"; content: string; turn_id: string };
}

/** A message that will not be sent, and why. */
export interface Skipped {
  key: string;
  turnIndex: number;
  reason: SkipReason | "already-captured" | "retracted";
}

/** The plan for one capture. */
export interface Plan {
  /** Turns considered (closed ones, plus open ones when forced), in journal order. */
  turns: Turn[];
  toSend: Candidate[];
  skipped: Skipped[];
}

/** Options that shape messages. */
export interface PlanOptions {
  maxLength: number;
  redact: boolean;
  /** Take open turns too (SessionEnd, Interrupt): nothing more will be added to them. */
  includeOpen: boolean;
}

/** A message's text after cleaning, redaction and the filters: `{text}` to send or `{reason}` to skip. */
export function prepareText(
  raw: string,
  role: "user" | "assistant",
  options: Pick<PlanOptions, "maxLength" | "redact">,
): { text: string; reason: SkipReason } {
  const cleaned = cleanInjected(raw);
  const safe = options.redact ? redact(cleaned).trim() : cleaned;
  const reason = skipReason(safe, role);
  return { text: reason ? "" : truncate(safe, options.maxLength), reason };
}

/** The key of a turn's message. */
export function captureKey(turnIndex: number, role: "user" | "assistant"): string {
  return `${turnIndex}:${role}`;
}

/** Plans a capture over `turns`, skipping what `acked` (keys) or `ackedBelow` (turn index watermark) cover. */
export function planCapture(
  turns: readonly Turn[],
  acked: ReadonlySet<string>,
  ackedBelow: number,
  options: PlanOptions,
): Plan {
  const plan: Plan = { turns: [], toSend: [], skipped: [] };
  for (const turn of turns) {
    if (!turn.closed && !options.includeOpen) break; // whole turns only, in order
    if (turn.index < ackedBelow) continue;
    plan.turns.push(turn);
    for (const role of ["user", "assistant"] as const) {
      const key = captureKey(turn.index, role);
      if (acked.has(key)) {
        plan.skipped.push({ key, turnIndex: turn.index, reason: "already-captured" });
        continue;
      }
      if (turn.retracted) {
        plan.skipped.push({ key, turnIndex: turn.index, reason: "retracted" });
        continue;
      }
      const { text, reason } = prepareText(
        role === "user" ? userText(turn) : assistantText(turn),
        role,
        options,
      );
      if (reason) plan.skipped.push({ key, turnIndex: turn.index, reason });
      else {plan.toSend.push({
          key,
          turnIndex: turn.index,
          role,
          payload: { role, content: text, turn_id: turn.id },
        });}
    }
  }
  return plan;
}

/** What the state keeps after a capture. */
export interface Acknowledgement {
  /** Keys newly acknowledged (sent or durably queued). */
  keys: string[];
  /** Every turn below this index is fully acknowledged. */
  ackedBelow: number;
  /** The first turn (of all scanned) not fully acknowledged: the cursor stays at its start. */
  resumeAt?: Turn;
}

/**
 * Acknowledges the first `count` planned messages. A scanned turn is done when the plan considered it and
 * all its messages are acknowledged; the watermark and the cursor stop at the first turn that is not done.
 */
export function acknowledge(
  plan: Plan,
  count: number,
  ackedBelow: number,
  scanned: readonly Turn[],
  nextIndex: number,
): Acknowledgement {
  const keys = plan.toSend.slice(0, count).map((c) => c.key);
  const unacked = new Set(plan.toSend.slice(count).map((c) => c.turnIndex));
  const considered = new Set(plan.turns.map((t) => t.index));
  const resumeAt = scanned.find((t) =>
    t.index >= ackedBelow && (!considered.has(t.index) || unacked.has(t.index))
  );
  return { keys, ackedBelow: Math.max(ackedBelow, resumeAt ? resumeAt.index : nextIndex), resumeAt };
}
