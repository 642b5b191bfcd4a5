/**
 * Newline-delimited framing of the stdio side: a byte stream in, text lines out (LF or CRLF, UTF-8), and the
 * writer that puts out one whole message per line, one at a time.
 */

import { type JsonRpcMessage, toLine } from "./jsonrpc.ts";

/** Yields each line of `stream` without its line end; a last line without a newline is yielded at EOF. */
export async function* readLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf("\n");
    while (newline >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      yield line.endsWith("\r") ? line.slice(0, -1) : line;
      newline = buffer.indexOf("\n");
    }
  }
  buffer += decoder.decode();
  if (buffer.length > 0) yield buffer.endsWith("\r") ? buffer.slice(0, -1) : buffer;
}

/** A line writer over a byte sink: appends "\n" and writes the whole line. */
export function lineSink(writer: WritableStreamDefaultWriter<Uint8Array>): (line: string) => Promise<void> {
  const encoder = new TextEncoder();
  return async (line: string) => {
    await writer.ready;
    await writer.write(encoder.encode(`${line}\n`));
  };
}

/** Serialises output: whole lines, one at a time, in call order. */
export class LineWriter {
  private chain: Promise<void> = Promise.resolve();
  /** Set when the output is gone (the client went away). */
  closed = false;

  constructor(
    private readonly writeLine: (line: string) => Promise<void>,
    private readonly onClose: () => void,
  ) {}

  /** Queues a message (or batch) for output. */
  write(message: JsonRpcMessage | JsonRpcMessage[]): Promise<void> {
    const line = toLine(message);
    this.chain = this.chain.then(async () => {
      if (this.closed) return;
      try {
        await this.writeLine(line);
      } catch {
        this.closed = true;
        this.onClose();
      }
    });
    return this.chain;
  }

  /** Resolves once everything queued is written. */
  idle(): Promise<void> {
    return this.chain;
  }
}
