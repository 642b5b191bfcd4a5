/** Builds Kimi Code journals line by line, in the v2 engine's format (protocol 1.5. */

import type { JournalLine } from "../../kimi/journal/turns.ts";

/** The journal lines of `text` with their byte spans, as readJournal gives them (ASCII text). */
export function linesOf(text: string): JournalLine[] {
  let offset = 0;
  const out: JournalLine[] = [];
  for (const l of text.split("\n")) {
    const end = offset + l.length + 1;
    if (l) out.push({ offset, end, value: JSON.parse(l) });
    offset = end;
  }
  return out;
}

/** Options of a journal. */
interface JournalOptions {
  /** v2 engine (default) or legacy. */
  v2?: boolean;
  /** 2.1.0 also writes `turnId` on `turn.prompt`. */
  explicitIds?: boolean;
  /** Continue an existing journal: no metadata line, turn ids from this number. */
  continueAt?: number;
  /** `time` of the first record (ms); each later record is 1 ms later. */
  timeBase?: number;
}

let uuidCounter = 0;
const uuid = () => `00000000-0000-4000-8000-${String(++uuidCounter).padStart(12, "0")}`;

/** A journal under construction. */
export class JournalBuilder {
  readonly lines: string[] = [];
  private turn = -1;
  private step = 0;
  private stepUuid = "";
  readonly v2: boolean;
  readonly explicitIds: boolean;
  private readonly timeBase: number;

  constructor(options: JournalOptions = {}) {
    this.v2 = options.v2 ?? true;
    this.timeBase = options.timeBase ?? 1_700_000_000_000;
    this.explicitIds = options.explicitIds ?? this.v2;
    if (options.continueAt !== undefined) this.turn = options.continueAt - 1;
    else this.push({ type: "metadata", protocol_version: this.v2 ? "1.5" : "1.4", created_at: 1 });
  }

  private push(record: Record<string, unknown>, agentId = "main"): this {
    const withAgent = this.v2 && record.type !== "metadata"
      ? { type: record.type, agentId, ...record }
      : record;
    this.lines.push(JSON.stringify({ ...withAgent, time: this.timeBase + this.lines.length }));
    return this;
  }

  /** Current turn id. */
  get turnId(): number {
    return this.turn;
  }

  /** A user-role context message of `text` from `origin` (`id`: the prompt's message id). */
  private message(text: string, origin: Record<string, unknown>, id?: string): this {
    const content = [{ type: "text", text }];
    const message = { role: "user", content, toolCalls: [], origin, ...(id ? { id } : {}) };
    return this.push({ type: "context.append_message", message });
  }

  /** A hook_result message (what UserPromptSubmit output becomes), written before the prompt. */
  hookResult(text: string): this {
    const wrapped = `<hook_result hook_event="UserPromptSubmit">\n${text}\n</hook_result>`;
    return this.message(wrapped, { kind: "hook_result", event: "UserPromptSubmit" });
  }

  /** Starts a turn with a prompt (origin `user` unless given). */
  prompt(text: string, origin = "user"): this {
    this.turn++;
    this.step = 0;
    const input = [{ type: "text", text }];
    this.push({
      type: "turn.prompt",
      input,
      origin: origin === "user" ? { kind: "user" } : { kind: origin, name: "x" },
      promptId: `msg_${this.turn}`,
      ...(this.explicitIds ? { turnId: this.turn } : {}),
    });
    this.message(text, { kind: origin }, `msg_${this.turn}`);
    return this.reminder(`Today is day ${this.turn}.`);
  }

  /** A system reminder injection message. */
  reminder(text: string): this {
    const wrapped = `<system-reminder>\n${text}\n</system-reminder>`;
    return this.message(wrapped, { kind: "injection", variant: "date_change" });
  }

  /** A steer (user input while the turn runs). */
  steer(text: string): this {
    return this.push({ type: "turn.steer", input: [{ type: "text", text }], origin: { kind: "user" } });
  }

  /**
   * The user message a steer becomes when the model takes it: 2.1.0 marks it `inTurn` (so `/undo` does not
   * count it), 0.41.0 does not (so `/undo 1` withdraws just the steer and what followed).
   */
  steerMessage(text: string, inTurn: boolean): this {
    return this.message(text, inTurn ? { kind: "user", inTurn: true } : { kind: "user" });
  }

  /** `/undo <count>` (by `agentId`): 2.1.0 writes the switch triple, older versions the bare `context.undo`. */
  undo(count: number, triple = this.explicitIds, agentId = "main"): this {
    if (triple) {
      this.push({ type: "agent.switched", branch: `b${this.lines.length}`, reason: "undo", turns: count });
    }
    this.push({ type: "context.undo", count }, agentId);
    if (triple) this.push({ type: "context.undone", turns: count, fromTurnId: this.turn - count + 1 });
    return this;
  }

  /** `/clear`. */
  clear(): this {
    return this.push({ type: "context.clear" });
  }

  /** A finished `/compact`. */
  compacted(): this {
    return this.push({
      type: "context.apply_compaction",
      summary: { role: "user", content: [{ type: "text", text: "SUMMARY" }], toolCalls: [] },
      count: 4,
    });
  }

  private loop(event: Record<string, unknown>): this {
    return this.push({
      type: "context.append_loop_event",
      event: { ...event, turnId: String(this.turn), step: this.step },
    });
  }

  /** Begins a step. */
  stepBegin(): this {
    this.step++;
    this.stepUuid = uuid();
    return this.loop({ type: "step.begin", uuid: this.stepUuid });
  }

  /** An assistant text part in the current step. */
  text(text: string): this {
    return this.loop({
      type: "content.part",
      uuid: uuid(),
      stepUuid: this.stepUuid,
      part: { type: "text", text },
    });
  }

  /** A thinking part. */
  think(think: string): this {
    return this.loop({
      type: "content.part",
      uuid: uuid(),
      stepUuid: this.stepUuid,
      part: { type: "think", think },
    });
  }

  /** A tool call and its result. */
  tool(name: string, output: string): this {
    const id = uuid();
    this.loop({
      type: "tool.call",
      uuid: id,
      stepUuid: this.stepUuid,
      toolCallId: `call_${id}`,
      name,
      args: { command: "echo" },
    });
    return this.push({
      type: "context.append_loop_event",
      event: { type: "tool.result", parentUuid: id, toolCallId: `call_${id}`, result: { output } },
    });
  }

  /** Ends the current step. */
  stepEnd(finishReason: string): this {
    return this.loop({ type: "step.end", uuid: this.stepUuid, finishReason });
  }

  /** Ends the turn (v2 only writes `turn.ended`). */
  ended(reason = "completed"): this {
    if (!this.v2) return this;
    this.push({ type: "turn.ended", turnId: this.turn, reason, durationMs: 5 });
    return this.push({ type: "prompt.completed", promptId: `msg_${this.turn}`, reason: "completed" });
  }

  /**
   * `agent.turn.ended` (0.43.0 on; no `agentId`): written once the turn's messages are, before Stop; the
   * `turn.ended` of {@link ended} comes after Stop (and never, when Kimi dies first).
   */
  agentEnded(outcome: "done" | "aborted" | "failed" = "done"): this {
    const record = { turnId: this.turn, outcome, type: "agent.turn.ended", kind: "event" };
    this.lines.push(JSON.stringify({ ...record, time: this.timeBase + this.lines.length }));
    return this;
  }

  /** A whole simple turn: prompt, one step with text, end. */
  simpleTurn(user: string, assistant: string): this {
    return this.prompt(user).stepBegin().text(assistant).stepEnd("end_turn").ended();
  }

  /** A record of another agent (a subagent writing into this journal must be ignored). */
  foreign(agentId: string, text: string): this {
    return this.push({
      type: "context.append_loop_event",
      event: { type: "content.part", turnId: "0", step: 1, part: { type: "text", text } },
    }, agentId);
  }

  /** The journal text. */
  toString(): string {
    return this.lines.map((l) => `${l}\n`).join("");
  }
}
