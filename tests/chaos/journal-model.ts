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
const sentence = (rng: Rng) => Array.from({ length: rng.int(3, 9) }, () => rng.pick(WORDS)).join(" ");

/**
 * The lines of one turn: its hook_result record first, the `turn.prompt` record at `promptAt`, the record that
 * closes it (`turn.ended`, or the legacy final `step.end`) at `closeAt`; `prompt` is the user text the prompt
 * hook receives.
 */
type TurnLines = { lines: string[]; promptAt: number; closeAt: number; prompt: string; id: number };

const encoder = new TextEncoder();
const byteLength = (s: string) => encoder.encode(s).length + 1; // with its newline

/** A journal being written by a schedule. */
export class LiveJournal {
  private readonly turns: TurnLines[] = [];
  /** Bytes of the planned text already on disk. */
  written = 0;
  /** No new turn is begun before this time (ms epoch). */
  private holdUntil = 0;
  /** One write to the file at a time (appends from two actions at once would repeat or lose bytes). */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly path: string, readonly v2: boolean, private readonly header: string[]) {}

  /** Plans a random session of `turnCount` turns, to be written at `path` (which must exist, maybe empty). */
  static plan(rng: Rng, path: string, turnCount: number): LiveJournal {
    const v2 = rng.chance(0.7);
    const j = new JournalBuilder({ v2 });
    const live = new LiveJournal(path, v2, [...j.lines]);
    for (let k = 0; k < turnCount; k++) {
      const start = j.lines.length;
      j.hookResult(`<openviking-context>${MARK} planned recall</openviking-context>`);
      const prompt = `${sentence(rng)}${rng.chance(0.3) ? ` key ${SECRET}` : ""}${
        rng.chance(0.3) ? ` <system-reminder>${MARK}</system-reminder>` : ""
      }`;
      const promptAt = j.lines.length - start;
      j.prompt(prompt);
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
      live.turns.push({ lines: j.lines.slice(start), promptAt, closeAt, prompt, id: j.turnId });
    }
    return live;
  }

  /** The whole planned text. */
  text(): string {
    return [...this.header, ...this.turns.flatMap((t) => t.lines)].map((l) => `${l}\n`).join("");
  }

  size(): number {
    return encoder.encode(this.text()).length;
  }

  /** Byte offset at which turn `turn`'s line `i` starts (`end`: ends). */
  private offset(turn: number, i: number, end = false): number {
    const sum = (lines: string[]) => lines.reduce((a, l) => a + byteLength(l), 0);
    return sum(this.header) + sum(this.turns.slice(0, turn).flatMap((t) => t.lines)) +
      sum(this.turns[turn].lines.slice(0, end ? i + 1 : i));
  }

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
    const next = this.nextPrompt();
    const held = Date.now() < this.holdUntil && next !== undefined;
    const limit = held ? this.offset(next, this.turns[next].promptAt) : bytes.length;
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
    await this.append(text.indexOf(0x0a, this.written) + 1);
  }

  /** The turn whose prompt is on disk but whose closing record is not; undefined when none. */
  openTurn(): number | undefined {
    const k = this.turns.findIndex((t, k) =>
      this.written >= this.offset(k, t.promptAt, true) && this.written < this.offset(k, t.closeAt, true)
    );
    return k < 0 ? undefined : k;
  }

  /** The turn whose prompt comes next (its hook_result may be rewritten until then); undefined when none. */
  nextPrompt(): number | undefined {
    const k = this.turns.findIndex((t, k) => this.written < this.offset(k, t.promptAt, true));
    return k < 0 ? undefined : k;
  }

  promptOf(k: number): string {
    return this.turns[k].prompt;
  }

  /**
   * Cancels the open turn the way Kimi does on interrupt or exit: the current record is finished, the rest of
   * the turn is never written, and the cancel record is planned next. After it nobody starts the next turn at
   * once (the user types, or resumes Kimi first): for `holdMs` the journal grows no further than the next
   * prompt.
   */
  cancelOpenTurn(holdMs: number): Promise<number | undefined> {
    return this.serial(async () => {
      this.holdUntil = Date.now() + holdMs;
      await this.finishLine();
      const k = this.openTurn();
      if (k === undefined) return undefined;
      const t = this.turns[k];
      let done = 0;
      while (done < t.lines.length && this.offset(k, done, true) <= this.written) done++;
      const cancel = this.v2
        ? { type: "turn.ended", agentId: "main", turnId: t.id, reason: "cancelled", durationMs: 1 }
        : { type: "turn.cancel" };
      t.lines = [...t.lines.slice(0, done), JSON.stringify(cancel)];
      t.closeAt = done;
      return k;
    });
  }

  /** Puts what the prompt hook really printed into turn `k`'s hook_result record, if not yet written. */
  setHookResult(k: number, stdout: string): Promise<void> {
    return this.serial(() => {
      const t = this.turns[k];
      if (this.written > this.offset(k, 0)) return Promise.resolve();
      const record = JSON.parse(t.lines[0]) as { message: { content: { text: string }[] } };
      record.message.content[0].text =
        `<hook_result hook_event="UserPromptSubmit">\n${stdout}\n</hook_result>`;
      t.lines[0] = JSON.stringify(record);
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
      await Deno.writeFile(`${this.path}.rewrite`, encoder.encode(this.text()).subarray(0, this.written));
      await Deno.rename(`${this.path}.rewrite`, this.path);
    });
  }
}
