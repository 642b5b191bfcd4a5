/**
 * The journal reader: complete lines from a byte cursor (garbage skipped, a rewritten file noticed), then the
 * main agent's turns from a Kimi Code journal (wire 1.5 and legacy 1.4), `/undo` applied as Kimi does.
 */
import * as z from "zod/mini";
import { sha256Hex } from "../../lib/hash.ts";
import { isRecord } from "../../lib/parsed.ts";
import { concatBytes } from "../../lib/bytes.ts";
import { ContentPart, partsText, PromptValue } from "../payload.ts";

/** Where a read stopped: `offset`, the file's `dev:ino` ("" where none), the hash of the bytes before it. */
export const ReadCursorSchema = z.object({
  offset: z.int().check(z.nonnegative()),
  fileId: z.string(),
  tailHash: z.string(),
});
type ReadCursor = z.infer<typeof ReadCursorSchema>;

/** One parsed journal line and its byte span. */
export type JournalLine = { offset: number; end: number; value: Record<string, unknown> };

/** What a read gave: the lines, the offset past the last complete one, whether the cursor no longer matched. */
type Reading = { lines: JournalLine[]; endOffset: number; rewritten: boolean };

/** A cheap test run before JSON.parse: lines that cannot matter to capture are not parsed at all. */
export type LineFilter = (line: string) => boolean;

const CHUNK = 1 << 20;
/** A longer line is skipped unread: no string holds one of 512 MiB, and capture keeps ≤ 10 M characters a text. */
const MAX_LINE_BYTES = 64 << 20;

const fileIdOf = (info: Deno.FileInfo) => info.ino == null ? "" : `${info.dev}:${info.ino}`;

/** Hash of the (up to) 64 bytes that end at `offset`: a rewrite of the same length is noticed. */
async function tailHashAt(file: Deno.FsFile, offset: number): Promise<string> {
  const buf = new Uint8Array(Math.min(offset, 64));
  await file.seek(offset - buf.length, Deno.SeekMode.Start);
  let got = 0;
  for (let n: number | null = 0; n !== null && got < buf.length; got += n ?? 0) {
    n = await file.read(buf.subarray(got));
  }
  return await sha256Hex(buf.subarray(0, got));
}

/**
 * Reads the complete JSON-object lines of `path` after `cursor` (from 0 once it no longer matches: `rewritten`),
 * parsing those `filter` keeps; each byte scanned once and copied at most twice, so a long line costs its length.
 */
export async function readJournal(path: string, cursor?: ReadCursor, filter?: LineFilter): Promise<Reading> {
  using file = await Deno.open(path, { read: true });
  const info = await file.stat();
  let pos = cursor?.offset ?? 0;
  const sameFile = !cursor?.fileId || !fileIdOf(info) || cursor.fileId === fileIdOf(info);
  const rewritten = pos > 0 &&
    !(info.size >= pos && sameFile && await tailHashAt(file, pos) === cursor?.tailHash);
  if (rewritten) pos = 0;
  const [lines, pieces]: [JournalLine[], Uint8Array[]] = [[], []];
  let held = 0; // bytes of the unfinished line so far (in `pieces` unless it is over the bound)
  const [decoder, buf] = [new TextDecoder(), new Uint8Array(CHUNK)];
  await file.seek(pos, Deno.SeekMode.Start);
  for (let n = await file.read(buf); n !== null; n = await file.read(buf)) {
    const data = buf.subarray(0, n);
    let from = 0;
    for (let i = data.indexOf(0x0a); i !== -1; i = data.indexOf(0x0a, from)) {
      const [tail, length] = [data.subarray(from, i), held + i - from];
      const raw = length > MAX_LINE_BYTES ? undefined : pieces.length ? concatBytes([...pieces, tail]) : tail;
      const offset = pos;
      [pos, from, pieces.length, held] = [pos + length + 1, i + 1, 0, 0];
      const text = raw?.length ? decoder.decode(raw) : "";
      if (!text || (filter && !filter(text))) continue;
      try {
        const value = JSON.parse(text);
        if (isRecord(value)) lines.push({ offset, end: pos, value });
      } catch {
        // not JSON: skipped
      }
    }
    held += n - from;
    if (held > MAX_LINE_BYTES) pieces.length = 0; // the rest of that line is skipped unread
    else if (from < n) pieces.push(data.slice(from));
  }
  return { lines, endOffset: pos, rewritten };
}

/** A cursor for `offset` in `path` (hashing the bytes before it). */
export async function cursorAt(path: string, offset: number): Promise<ReadCursor> {
  using file = await Deno.open(path, { read: true });
  return { offset, fileId: fileIdOf(await file.stat()), tailHash: await tailHashAt(file, offset) };
}

/** A turn as read from the journal (text not yet cleaned). */
export interface Turn {
  /** The journal's turn id, else the position among the agent's prompts, as a string. */
  id: string;
  /** Position among the main agent's prompts: what capture keys and the watermark use. */
  index: number;
  /** Byte offset of the line that started this turn. */
  startOffset: number;
  /** User text parts (prompt, then steers); empty for turns the user did not start. */
  userParts: string[];
  /** The prompt's text, kept through `/undo`: what the prompt hook saw. */
  prompt: string;
  /** Assistant text parts in order, each with the step it came from. */
  assistantParts: { step: string; text: string }[];
  closed: boolean;
  /** `turn.ended` reason, `agent.turn.ended` outcome, "next-prompt", "final-step", or "" while open. */
  closeReason: string;
  /** Written by the v2 engine (records carry `agentId`), which ends every turn with `turn.ended`. */
  v2: boolean;
  /** `time` (ms) of the prompt record, when it had one. */
  time?: number;
  /** Withdrawn by `/undo` as a whole: it has no text left and is never sent. */
  retracted: boolean;
}

// Records, by their `type` (which `scanTurns` switches on); one of an unexpected shape is skipped.
const [Str, Any] = [z.optional(z.string()), z.optional(z.unknown())];
const TurnId = z.union([z.number(), z.string()]);
const Id = z.optional(TurnId);
const Kind = z.optional(z.looseObject({ kind: z.string() }));
const PromptRecord = z.object({ agentId: Str, input: z.optional(PromptValue), origin: Kind, turnId: Id });
const EndedRecord = z.object({ agentId: Str, turnId: TurnId, reason: Str, outcome: Str });
const LoopEvent = z.looseObject({
  type: z.string(),
  turnId: Id,
  step: Id,
  stepUuid: Str,
  part: z.optional(ContentPart),
  finishReason: Str,
});
const LoopRecord = z.object({ agentId: Str, event: LoopEvent });
const Origin = z.looseObject({ kind: z.string(), inTurn: Any, trigger: Any });
const Message = z.looseObject({ role: z.string(), content: Any, origin: z.optional(Origin) });
const MessageRecord = z.object({ agentId: Str, message: Message });
const UndoRecord = z.object({ agentId: Str, count: z.int().check(z.positive()) });

/** Only lines with the words of a record that can matter for turns are parsed (the others are skipped unread). */
export const turnLineFilter: LineFilter = (line) =>
  /"(?:turn\.|agent\.turn\.ended"|content\.part"|step\.end"|metadata"|context\.(?:append_message|undo|clear|apply_compaction)")/
    .test(line);

/** `value` as `schema` reads it, when it is a record of the main agent (legacy records have no `agentId`). */
function mainRecord<T extends { agentId?: string }>(schema: z.ZodMiniType<T>, value: unknown): T | undefined {
  const r = schema.safeParse(value);
  return r.success && (r.data.agentId ?? "main") === "main" ? r.data : undefined;
}

function close(t: Turn, reason: string): void {
  if (!t.closed) [t.closed, t.closeReason] = [true, reason];
}

/** A step's finish reasons that mean the model keeps going. */
const CONTINUING = new Set(["tool_use", "tool_calls", "tool-calls"]);

/** Whether a user message is what `/undo` counts (Kimi's `isUndoAnchor`): user input, not a steer in a running turn. */
const isUndoAnchor = (o: z.infer<typeof Origin> | undefined): boolean =>
  o === undefined || (o.inTurn !== true && (o.kind === "user" ||
    (["skill_activation", "plugin_command"].includes(o.kind) && o.trigger === "user-slash")));

/** A user input `/undo` can cut back to: its turn (undefined: before the stretch), `whole` (the turn's prompt). */
type Anchor = { turn?: Turn; whole: boolean; userParts: number; assistantParts: number };

/** Withdraws everything from `cut` on: its turn (whole or cut back) and every later turn of the stretch. */
function retract(turns: Turn[], cut: Anchor): void {
  if (!cut.turn) return;
  for (const t of turns.slice(turns.indexOf(cut.turn))) {
    if (t === cut.turn && !cut.whole) {
      t.userParts.length = Math.min(t.userParts.length, cut.userParts);
      t.assistantParts.length = Math.min(t.assistantParts.length, cut.assistantParts);
      continue;
    }
    [t.retracted, t.userParts, t.assistantParts] = [true, [], []];
    close(t, "retracted");
  }
}

/**
 * A stretch's main-agent turns, the next prompt's index, its `protocol_version`, and events with text whose
 * `turnId` matched no prompt (`rebound` to the open turn) or came before any (`unbound`).
 */
export type TurnScan = {
  turns: Turn[];
  nextIndex: number;
  protocolVersion?: string;
  rebound: number;
  unbound: number;
};

/** Builds the main agent's turns from journal lines; `firstIndex` numbers turns when the journal has no ids. */
export function scanTurns(lines: readonly JournalLine[], firstIndex = 0): TurnScan {
  const scan: TurnScan = { turns: [], nextIndex: firstIndex, rebound: 0, unbound: 0 };
  const byId = new Map<string, Turn>();
  let current: Turn | undefined;
  /** User inputs `/undo` can still reach, oldest first (reset at a compaction or a clear). */
  let anchors: Anchor[] = [];
  const anchored = new Set<Turn>();
  /** The turn an id names; an id no prompt of the stretch had goes to the open turn. */
  const turnFor = (id: string | number | undefined, carriesText: boolean): Turn | undefined => {
    const known = id === undefined ? current : byId.get(String(id));
    if (known) return known;
    const open = current && !current.closed ? current : undefined;
    if (carriesText) scan[open ? "rebound" : "unbound"]++;
    return open;
  };
  for (const { offset, value } of lines) {
    const bare = typeof value.agentId !== "string";
    switch (value.type) {
      case "metadata":
        if (typeof value.protocol_version === "string") scan.protocolVersion = value.protocol_version;
        break;
      case "turn.prompt": { // starts the next turn and closes every open one
        const r = mainRecord(PromptRecord, value);
        if (!r) break;
        // Keys use the position among the agent's prompts: monotonic even if the engine's ids ever restart.
        const index = scan.nextIndex++;
        for (const t of scan.turns) close(t, "next-prompt");
        const text = partsText(r.input);
        current = {
          id: String(r.turnId ?? index),
          index,
          startOffset: offset,
          userParts: (r.origin?.kind ?? "user") === "user" && text ? [text] : [],
          prompt: text,
          assistantParts: [],
          closed: false,
          closeReason: "",
          v2: r.agentId !== undefined,
          time: typeof value.time === "number" ? value.time : undefined,
          retracted: false,
        };
        scan.turns.push(current);
        byId.set(current.id, current);
        break;
      }
      case "turn.steer": { // adds the user's text to its open turn
        const r = mainRecord(PromptRecord, value);
        const text = partsText(r?.input);
        const t = r && turnFor(r.turnId, Boolean(text));
        if (t && !t.closed && text && (r.origin?.kind ?? "user") === "user") t.userParts.push(text);
        break;
      }
      case "turn.cancel": // legacy journals mark a cancelled turn only by a bare one (v2 also writes turn.ended)
        if (bare && current && !current.v2) close(current, "cancelled");
        break;
      case "turn.ended":
      // 0.43.0 on: written with the turn's last messages, before Stop (no agentId: each agent has its own
      // journal); the turn.ended after Stop never comes when Kimi dies first (`kimi -p … | head -1`).
      case "agent.turn.ended": {
        const r = mainRecord(EndedRecord, value);
        const t = r && turnFor(r.turnId, false);
        if (t) close(t, r.reason ?? r.outcome ?? "ended");
        break;
      }
      case "context.append_message": { // a user input `/undo` can cut back to (Kimi's own rule)
        const m = mainRecord(MessageRecord, value)?.message;
        if (!m || m.role !== "user" || !isUndoAnchor(m.origin)) break;
        const whole = !current || !anchored.has(current);
        if (current) anchored.add(current);
        // A later input of the same turn (a 0.41.0 steer): cut back to just before it.
        const steer = current && !whole ? current.userParts.lastIndexOf(partsText(m.content)) : -1;
        const [userParts, assistantParts] = [
          current?.userParts.length ?? 0,
          current?.assistantParts.length ?? 0,
        ];
        anchors.push({ turn: current, whole, userParts: steer > 0 ? steer : userParts, assistantParts });
        break;
      }
      case "context.undo": { // `/undo n` withdraws everything from the n-th last input on
        const count = mainRecord(UndoRecord, value)?.count;
        const cut = count === undefined ? undefined : anchors.splice(Math.max(0, anchors.length - count))[0];
        if (cut) retract(scan.turns, cut);
        break;
      }
      case "context.clear":
      case "context.apply_compaction":
        if (bare || value.agentId === "main") anchors = []; // /undo never reaches back across them
        break;
      case "context.append_loop_event": { // assistant text for its turn, or (legacy) the final step that ends it
        const ev = mainRecord(LoopRecord, value)?.event;
        const text = ev?.type === "content.part" && ev.part?.type === "text" ? ev.part.text : undefined;
        const t = ev && turnFor(ev.turnId, Boolean(text));
        if (!ev || !t || t.closed) break;
        if (text) t.assistantParts.push({ step: String(ev.stepUuid ?? ev.step ?? ""), text });
        else if (ev.type === "step.end" && !t.v2 && ev.finishReason && !CONTINUING.has(ev.finishReason)) {
          close(t, "final-step"); // legacy journals never write turn.ended: a step that does not continue ends it
        }
      }
    }
  }
  return scan;
}

/** The assistant text of a turn: parts of one step joined as-is, steps separated by a blank line. */
export function assistantText(turn: Turn): string {
  const steps: string[] = [];
  turn.assistantParts.forEach((p, i) => {
    if (i && p.step === turn.assistantParts[i - 1].step) steps[steps.length - 1] += p.text;
    else steps.push(p.text);
  });
  return paragraphs(steps);
}

const paragraphs = (texts: string[]) => texts.map((s) => s.trim()).filter(Boolean).join("\n\n");

/** The user text of a turn (prompt and steers). */
export const userText = (turn: Turn): string => paragraphs(turn.userParts);

/** The turns of `path` after `cursor` (from the start once it no longer matches the file), and where the read ended. */
export async function scanJournal(
  path: string,
  cursor?: ReadCursor & { nextIndex: number },
): Promise<{ turns: TurnScan; read: Omit<Reading, "lines"> }> {
  const { lines, ...read } = await readJournal(path, cursor, turnLineFilter); // the records are not kept
  return { turns: scanTurns(lines, cursor && !read.rewritten ? cursor.nextIndex : 0), read };
}
