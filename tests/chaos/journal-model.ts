/**
 * A journal that a chaos schedule writes while hooks run: random turns (built with JournalBuilder, v2 or
 * legacy) full of things capture must drop (hook results, reminders, thinking, tool output, subagent records,
 * injected spans, secrets), appended to disk in arbitrary byte pieces the way Kimi appends.
 */

import { JournalBuilder } from "../support/journal.ts";
import type { Rng } from "./rng.ts";

/** Text that must never reach the server: everything injected carries it. */
export const MARK = "CHAOS-INJECTED-MARK";

/** A credential that redaction must remove. */
export const SECRET = "sk-chaoscampaignsecret0123456789";

const WORDS = ["alpha", "beta", "gamma", "tabs", "spaces", "parser", "deploy", "模块", "测试", "😀", "naïve"];

function sentence(rng: Rng): string {
  const n = rng.int(3, 9);
  return Array.from({ length: n }, () => rng.pick(WORDS)).join(" ");
}

/** The lines of one turn and where its records are. */
interface TurnLines {
  lines: string[];
  /** Index (in `lines`) of the `turn.prompt` record. */
  promptAt: number;
  /** Index of the record that closes the turn (`turn.ended`, or the legacy final `step.end`). */
  closeAt: number;
  /** Index of the hook_result record written before the prompt. */
  hookAt: number;
  /** The prompt's user text as the prompt hook receives it. */
  prompt: string;
  /** Turn id in the journal. */
  id: number;
}

const encoder = new TextEncoder();
const byteLength = (s: string) => encoder.encode(s).length;

/** A journal being written by a schedule. */
export class LiveJournal {
  readonly v2: boolean;
  private readonly header: string[];
  private readonly turns: TurnLines[] = [];
  /** Bytes of the planned text already on disk. */
  written = 0;
  /** No new turn is begun before this time (ms epoch). */
  private holdUntil = 0;

  private constructor(readonly path: string, v2: boolean, header: string[]) {
    this.v2 = v2;
    this.header = header;
  }

  /** Plans a random session of `turnCount` turns, to be written at `path` (which must exist, maybe empty). */
  static plan(rng: Rng, path: string, turnCount: number): LiveJournal {
    const v2 = rng.chance(0.7);
    const j = new JournalBuilder({ v2 });
    const header = [...j.lines];
    const live = new LiveJournal(path, v2, header);
    for (let k = 0; k < turnCount; k++) {
      const start = j.lines.length;
      j.hookResult(`<openviking-context>${MARK} planned recall</openviking-context>`);
      const hookAt = 0;
      const user = `${sentence(rng)}${rng.chance(0.3) ? ` key ${SECRET}` : ""}${
        rng.chance(0.3) ? ` <system-reminder>${MARK}</system-reminder>` : ""
      }`;
      const promptAt = j.lines.length - start;
      j.prompt(user);
      if (rng.chance(0.3)) j.reminder(MARK);
      const steps = rng.int(0, 3);
      for (let s = 0; s < steps; s++) {
        j.stepBegin();
        if (rng.chance(0.3)) j.think(MARK);
        for (let t = rng.int(0, 2); t > 0; t--) j.text(sentence(rng));
        if (v2 && rng.chance(0.25)) j.foreign("agent_sub_1", `${MARK} subagent text`);
        if (rng.chance(0.15) && s === 0) j.steer(sentence(rng));
        const tool = s < steps - 1 || rng.chance(0.2);
        if (tool) j.tool("Bash", MARK);
        j.stepEnd(s === steps - 1 && !tool ? "end_turn" : "tool_use");
      }
      if (!v2 && (steps === 0 || !j.lines.at(-1)!.includes('"end_turn"'))) j.stepBegin().stepEnd("end_turn");
      const closeAt = (v2 ? j.lines.length : j.lines.length - 1) - start;
      j.ended(rng.pick(["completed", "completed", "cancelled", "failed"]));
      const lines = j.lines.slice(start);
      live.turns.push({
        lines,
        promptAt,
        closeAt,
        hookAt,
        prompt: user,
        id: j.turnId,
      });
    }
    return live;
  }

  /** Every planned line, in order, each with its newline. */
  private allLines(): string[] {
    return [...this.header, ...this.turns.flatMap((t) => t.lines)].map((l) => `${l}\n`);
  }

  /** The whole planned text. */
  text(): string {
    return this.allLines().join("");
  }

  /** Size of the planned text in bytes. */
  size(): number {
    return byteLength(this.text());
  }

  /** Byte offset at which each turn's line `i` ends. */
  private lineEnd(turn: number, i: number): number {
    let n = this.header.reduce((a, l) => a + byteLength(l) + 1, 0);
    for (let k = 0; k < turn; k++) n += this.turns[k].lines.reduce((a, l) => a + byteLength(l) + 1, 0);
    for (let x = 0; x <= i; x++) n += byteLength(this.turns[turn].lines[x]) + 1;
    return n;
  }

  /**
   * After an interrupt or a session end nobody starts the next turn at once (the user types, or resumes Kimi
   * first): until `ms` from now the journal grows no further than the next prompt.
   */
  private holdNewTurns(ms: number): void {
    this.holdUntil = Date.now() + ms;
  }

  /** One write to the file at a time (appends from two actions at once would repeat or lose bytes). */
  private queue: Promise<unknown> = Promise.resolve();

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Appends planned bytes up to offset `to` (clamped; held back before the next prompt during a hold). */
  growTo(to: number): Promise<void> {
    return this.serial(() => this.append(to));
  }

  private async append(to: number): Promise<void> {
    const bytes = encoder.encode(this.text());
    let limit = bytes.length;
    const next = this.nextPrompt();
    if (Date.now() < this.holdUntil && next !== undefined) {
      const t = this.turns[next];
      limit = this.lineEnd(next, t.promptAt) - byteLength(t.lines[t.promptAt]) - 1;
    }
    const end = Math.max(this.written, Math.min(to, limit));
    if (end === this.written) return;
    await Deno.writeFile(this.path, bytes.subarray(this.written, end), { append: true });
    this.written = end;
  }

  /** Finishes a half-written line (Kimi writes whole records; only the reader ever sees a partial one). */
  completeLine(): Promise<void> {
    return this.serial(() => this.finishLine());
  }

  private async finishLine(): Promise<void> {
    const text = encoder.encode(this.text());
    if (this.written === 0 || this.written >= text.length || text[this.written - 1] === 0x0a) return;
    const nl = text.indexOf(0x0a, this.written);
    await this.append(nl + 1);
  }

  /** The turn whose prompt is on disk but whose closing record is not; undefined when none. */
  openTurn(): number | undefined {
    for (let k = 0; k < this.turns.length; k++) {
      const t = this.turns[k];
      if (this.written >= this.lineEnd(k, t.promptAt) && this.written < this.lineEnd(k, t.closeAt)) return k;
    }
    return undefined;
  }

  /** The turn whose prompt comes next (its hook_result may be rewritten until then); undefined when none. */
  nextPrompt(): number | undefined {
    for (let k = 0; k < this.turns.length; k++) {
      if (this.written < this.lineEnd(k, this.turns[k].promptAt)) return k;
    }
    return undefined;
  }

  /** The user text of turn `k`'s prompt. */
  promptOf(k: number): string {
    return this.turns[k].prompt;
  }

  /**
   * Cancels the open turn the way Kimi does on interrupt or exit: the current record is finished, the rest of
   * the turn is never written, and the cancel record is planned next; no new turn begins for `holdMs`.
   */
  cancelOpenTurn(holdMs: number): Promise<number | undefined> {
    return this.serial(() => {
      this.holdNewTurns(holdMs);
      return this.cancel();
    });
  }

  private async cancel(): Promise<number | undefined> {
    await this.finishLine();
    const k = this.openTurn();
    if (k === undefined) return undefined;
    const t = this.turns[k];
    let done = 0;
    while (done < t.lines.length && this.lineEnd(k, done) <= this.written) done++;
    const cancel = this.v2
      ? JSON.stringify({
        type: "turn.ended",
        agentId: "main",
        turnId: t.id,
        reason: "cancelled",
        durationMs: 1,
      })
      : JSON.stringify({ type: "turn.cancel" });
    t.lines = [...t.lines.slice(0, done), cancel];
    t.closeAt = done;
    return k;
  }

  /** Puts what the prompt hook really printed into turn `k`'s hook_result record, if not yet written. */
  setHookResult(k: number, stdout: string): Promise<void> {
    return this.serial(() => {
      const t = this.turns[k];
      if (this.written > this.lineEnd(k, t.hookAt) - byteLength(t.lines[t.hookAt]) - 1) {
        return Promise.resolve();
      }
      const record = JSON.parse(t.lines[t.hookAt]) as { message: { content: { text: string }[] } };
      record.message.content[0].text =
        `<hook_result hook_event="UserPromptSubmit">\n${stdout}\n</hook_result>`;
      t.lines[t.hookAt] = JSON.stringify(record);
      return Promise.resolve();
    });
  }

  /** Writes everything that is still planned. */
  async finish(): Promise<void> {
    await new Promise((r) => setTimeout(r, Math.max(0, this.holdUntil - Date.now())));
    await this.serial(() => this.append(Number.MAX_SAFE_INTEGER));
  }

  /** Replaces the file with the same bytes under a new inode (Kimi rewrites old journals on resume). */
  rewrite(): Promise<void> {
    return this.serial(async () => {
      const bytes = encoder.encode(this.text()).subarray(0, this.written);
      await Deno.writeFile(`${this.path}.rewrite`, bytes);
      await Deno.rename(`${this.path}.rewrite`, this.path);
    });
  }
}
