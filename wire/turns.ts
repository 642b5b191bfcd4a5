/**
 * Turns from a Kimi Code journal (wire protocol 1.5 from the v2 engine, 1.4 from the legacy one).
 * User text comes from `turn.prompt` (origin `user`) and `turn.steer`; assistant text is every `content.part`
 * text part of the turn, in order. Thinking, tool traffic, hook results, injections and reminders are not
 * turn text at all. A v2 turn is closed by its `turn.ended` (any reason) or by a later `turn.prompt`;
 * a legacy turn (no `turn.ended` is ever written) by a later prompt or a final `step.end`.
 */

import * as z from "zod/mini";
import type { JournalLine, LineFilter } from "./read.ts";

/** A turn as read from the journal (text not yet cleaned). */
export interface Turn {
  /** Turn id as a string ("0", "1", …): the journal's own id, else the position among the agent's prompts. */
  id: string;
  /** Position among the main agent's prompts (0, 1, …): what capture keys and the watermark use. */
  index: number;
  /** Byte offset of the line that started this turn. */
  startOffset: number;
  /** Kind of the prompt's origin (`user`, `system_trigger`, …). */
  origin: string;
  /** User text parts (prompt, then steers); empty for turns the user did not start. */
  userParts: string[];
  /** Assistant text parts in order, each with the step it came from. */
  assistantParts: { step: string; text: string }[];
  closed: boolean;
  /** `turn.ended` reason, "next-prompt", "final-step", or "" while open. */
  closeReason: string;
  /** Written by the v2 engine (records carry `agentId`), which always ends turns with `turn.ended`. */
  v2: boolean;
}

/** The main agent's turns in a stretch of journal, and what else was learnt. */
export interface TurnScan {
  turns: Turn[];
  /** Index the next `turn.prompt` after this stretch would get. */
  nextIndex: number;
  /** `protocol_version` from the metadata line, if the stretch included it. */
  protocolVersion?: string;
}

const ContentPartSchema = z.looseObject({ type: z.string(), text: z.optional(z.string()) });
const PromptRecord = z.object({
  type: z.enum(["turn.prompt", "turn.steer"]),
  agentId: z.optional(z.string()),
  input: z.optional(z.union([z.array(ContentPartSchema), z.string()])),
  origin: z.optional(z.looseObject({ kind: z.string() })),
  turnId: z.optional(z.union([z.number(), z.string()])),
});
const EndedRecord = z.object({
  type: z.literal("turn.ended"),
  agentId: z.optional(z.string()),
  turnId: z.union([z.number(), z.string()]),
  reason: z.optional(z.string()),
});
const LoopRecord = z.object({
  type: z.literal("context.append_loop_event"),
  agentId: z.optional(z.string()),
  event: z.looseObject({
    type: z.string(),
    turnId: z.optional(z.union([z.number(), z.string()])),
    step: z.optional(z.union([z.number(), z.string()])),
    stepUuid: z.optional(z.string()),
    uuid: z.optional(z.string()),
    part: z.optional(z.looseObject({ type: z.string(), text: z.optional(z.string()) })),
    finishReason: z.optional(z.string()),
  }),
});
const MetadataRecord = z.object({ type: z.literal("metadata"), protocol_version: z.string() });

/** Only lines that can matter for turns are parsed (everything else is skipped unread). */
export const turnLineFilter: LineFilter = (line) =>
  line.includes('"turn.') || line.includes('"content.part"') || line.includes('"step.end"') ||
  line.includes('"metadata"');

/** The agent a record belongs to; records without `agentId` (legacy) belong to the main agent. */
function isMain(agentId: string | undefined): boolean {
  return agentId === undefined || agentId === "main";
}

/** Text of content parts (text parts only, joined by newlines), or a plain string prompt. */
export function partsText(input: unknown): string {
  if (typeof input === "string") return input;
  if (!Array.isArray(input)) return "";
  return input
    .filter((p) => p && typeof p === "object" && (p as { type?: unknown }).type === "text")
    .map((p) => String((p as { text?: unknown }).text ?? ""))
    .filter((t) => t.length > 0)
    .join("\n");
}

/** A step's finish reasons that mean the model keeps going. */
const CONTINUING = new Set(["tool_use", "tool_calls", "tool-calls"]);

/** Builds the main agent's turns from journal lines; `firstIndex` numbers turns when the journal has no ids. */
export function scanTurns(lines: readonly JournalLine[], firstIndex = 0): TurnScan {
  const turns: Turn[] = [];
  const byId = new Map<string, Turn>();
  let nextIndex = firstIndex;
  let protocolVersion: string | undefined;
  let current: Turn | undefined;

  for (const { offset, value } of lines) {
    switch (value.type) {
      case "metadata": {
        const m = MetadataRecord.safeParse(value);
        if (m.success) protocolVersion = m.data.protocol_version;
        break;
      }
      case "turn.prompt": {
        const r = PromptRecord.safeParse(value);
        if (!r.success || !isMain(r.data.agentId)) break;
        // Keys use the position among the agent's prompts: monotonic even if the engine's ids ever restart.
        const index = nextIndex++;
        for (const t of turns) {
          if (!t.closed) [t.closed, t.closeReason] = [true, "next-prompt"];
        }
        const origin = r.data.origin?.kind ?? "user";
        const text = partsText(r.data.input);
        current = {
          id: r.data.turnId !== undefined ? String(r.data.turnId) : String(index),
          index,
          startOffset: offset,
          origin,
          userParts: origin === "user" && text ? [text] : [],
          assistantParts: [],
          closed: false,
          closeReason: "",
          v2: r.data.agentId !== undefined,
        };
        turns.push(current);
        byId.set(current.id, current);
        break;
      }
      case "turn.steer": {
        const r = PromptRecord.safeParse(value);
        if (!r.success || !isMain(r.data.agentId)) break;
        const target = r.data.turnId !== undefined ? byId.get(String(r.data.turnId)) : current;
        const text = partsText(r.data.input);
        if (target && !target.closed && text && (r.data.origin?.kind ?? "user") === "user") {
          target.userParts.push(text);
        }
        break;
      }
      case "turn.cancel": {
        // Legacy journals mark a cancelled turn only by a bare turn.cancel (v2 also writes turn.ended).
        const agentId = typeof value.agentId === "string" ? value.agentId : undefined;
        if (agentId === undefined && current && !current.v2 && !current.closed) {
          [current.closed, current.closeReason] = [true, "cancelled"];
        }
        break;
      }
      case "turn.ended": {
        const r = EndedRecord.safeParse(value);
        if (!r.success || !isMain(r.data.agentId)) break;
        const t = byId.get(String(r.data.turnId));
        if (t && !t.closed) [t.closed, t.closeReason] = [true, r.data.reason ?? "ended"];
        break;
      }
      case "context.append_loop_event": {
        const r = LoopRecord.safeParse(value);
        if (!r.success || !isMain(r.data.agentId)) break;
        const ev = r.data.event;
        const t = ev.turnId !== undefined ? byId.get(String(ev.turnId)) : current;
        if (!t || t.closed) break;
        if (ev.type === "content.part" && ev.part?.type === "text" && ev.part.text) {
          t.assistantParts.push({ step: String(ev.stepUuid ?? ev.step ?? ""), text: ev.part.text });
        } else if (ev.type === "step.end" && !t.v2 && ev.finishReason && !CONTINUING.has(ev.finishReason)) {
          // Legacy journals never write turn.ended: a step that does not continue ends the turn.
          [t.closed, t.closeReason] = [true, "final-step"];
        }
        break;
      }
    }
  }
  return { turns, nextIndex, protocolVersion };
}

/** The assistant text of a turn: parts of one step joined as-is, steps separated by a blank line. */
export function assistantText(turn: Turn): string {
  const steps: string[] = [];
  let lastStep: string | undefined;
  for (const p of turn.assistantParts) {
    if (steps.length && p.step === lastStep) steps[steps.length - 1] += p.text;
    else steps.push(p.text);
    lastStep = p.step;
  }
  return steps.map((s) => s.trim()).filter(Boolean).join("\n\n");
}

/** The user text of a turn (prompt and steers). */
export function userText(turn: Turn): string {
  return turn.userParts.map((s) => s.trim()).filter(Boolean).join("\n\n");
}
