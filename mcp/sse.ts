/**
 * An incremental Server-Sent Events parser (WHATWG "event stream interpretation"): feed text chunks as they
 * arrive, get complete events back. Handles CRLF/CR/LF line ends split across chunks, comments, multi-line
 * `data:`, `id`, `retry` and a leading BOM. Pure: no I/O.
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
  private buffer = "";
  private started = false;
  private skipLf = false;
  private data: string[] = [];
  private hasData = false;
  private eventType = "";
  /** The stream's last event id (the `Last-Event-ID` to resume from). */
  lastEventId = "";
  /** The reconnection delay the server asked for, in ms (`undefined` until it sends `retry:`). */
  retryMs: number | undefined;

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLf && text.startsWith("\n")) text = text.slice(1);
    this.skipLf = false;
    this.buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.buffer.slice(start, i), events);
      if (c === 13) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLf = true;
        }
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /**
   * Ends the stream. An event still missing its blank line is dispatched anyway (the spec would drop it; real
   * servers sometimes close right after the last `data:` line, and losing a response is worse).
   */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.buffer.length > 0) this.line(this.buffer, events);
    this.buffer = "";
    this.line("", events);
    return events;
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === "") {
      if (this.hasData) {
        events.push({ event: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventId });
      }
      this.data = [];
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
