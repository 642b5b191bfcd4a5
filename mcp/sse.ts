/**
 * An incremental Server-Sent Events parser (WHATWG "event stream interpretation"): feed text chunks as they
 * arrive, get complete events back. Handles CRLF/CR/LF line ends split across chunks, comments, multi-line
 * `data:`, `id`, `retry` and a leading BOM, in time linear in the input even for one giant line; says how much
 * text it holds for the event in progress, so a reader can bound it. Pure: no I/O.
 */

/** One dispatched event. */
export interface SseEvent {
  /** The `event:` field ("message" when absent). */
  event: string;
  /** The `data:` lines joined with "\n". */
  data: string;
  /** The last event id seen so far in the stream ("" when none). */
  id: string;
}

/** Incremental parser state for one stream. */
export class SseParser {
  /** The pieces of the line still missing its end (joined once it ends, so a giant line stays linear). */
  private partial: string[] = [];
  private partialChars = 0;
  private started = false;
  private skipLf = false;
  private data: string[] = [];
  private dataChars = 0;
  private hasData = false;
  private eventType = "";
  /** The stream's last event id (the `Last-Event-ID` to resume from). */
  lastEventId = "";
  /** The reconnection delay the server asked for, in ms (`undefined` until it sends `retry:`). */
  retryMs: number | undefined;

  /** Characters held for the event not yet complete (its `data:` lines and the unfinished line). */
  get pendingChars(): number {
    return this.partialChars + this.dataChars;
  }

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLf && text.length > 0) {
      if (text.startsWith("\n")) text = text.slice(1);
      this.skipLf = false;
    }
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.takeLine(text.slice(start, i)), events);
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLf = true;
        }
      }
      start = i + 1;
    }
    if (start < text.length) {
      this.partial.push(text.slice(start));
      this.partialChars += text.length - start;
    }
    return events;
  }

  /**
   * Ends the stream. An event still missing its blank line is dispatched anyway (the spec would drop it; real
   * servers sometimes close right after the last `data:` line, and losing a response is worse).
   */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.partialChars > 0) this.line(this.takeLine(""), events);
    this.line("", events);
    return events;
  }

  /** The unfinished line completed by `tail`. */
  private takeLine(tail: string): string {
    if (this.partial.length === 0) return tail;
    const line = this.partial.join("") + tail;
    this.partial = [];
    this.partialChars = 0;
    return line;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === "") {
      if (this.hasData) {
        events.push({ event: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventId });
      }
      this.data = [];
      this.dataChars = 0;
      this.hasData = false;
      this.eventType = "";
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.dataChars += value.length + 1;
        this.hasData = true;
        break;
      case "event":
        this.eventType = value;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break; // unknown fields are ignored
    }
  }
}

/** Whether an event's data carries nothing to forward: empty (priming events) or the `[DONE]` sentinel. */
export function isEmptyEventData(data: string): boolean {
  const trimmed = data.trim();
  return trimmed === "" || trimmed === "[DONE]";
}

/** Parses a complete SSE text at once (for tests and small bodies). */
export function parseSse(text: string): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(text), ...parser.end()];
}
