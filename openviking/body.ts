/**
 * Reading an HTTP body with bounds: at most so many bytes (counted as read, i.e. after fetch inflated a gzip
 * or brotli body, so a small bomb counts as what it becomes), and no longer than so long without a byte. At a
 * bound it stops reading and cancels the body, which closes the connection; it never buffers more than the
 * bound and never throws. Used by the hooks' OpenViking client and by the MCP proxy.
 */

import { concatBytes } from "../lib/bytes.ts";

/** Why reading stopped before the end of the body. */
export type BodyStop =
  /** The body passed `maxBytes`. */
  | { kind: "too-large"; limitBytes: number }
  /** No byte arrived for `ms`. */
  | { kind: "stalled"; ms: number }
  /** The body failed (connection cut, or aborted by the signal). */
  | { kind: "cut"; cause: unknown };

/** The bounds of one read. */
export interface BodyLimits {
  /** Bytes the body may have. */
  maxBytes: number;
  /** How long the body may go without a byte (ms; Infinity = no limit). */
  idleMs: number;
  /** Stops the read (it then ends as "cut"). */
  signal?: AbortSignal;
}

/** A body read chunk by chunk within its bounds. */
export class BoundedBody {
  /** Bytes read so far (all of them, including a chunk refused for passing the bound). */
  bytes = 0;
  /** Why reading stopped early; undefined while it goes on or after a normal end. */
  stop: BodyStop | undefined;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private finished = false;

  constructor(body: ReadableStream<Uint8Array>, private readonly limits: BodyLimits) {
    this.reader = body.getReader();
  }

  /** The next chunk; undefined at the end of the body or once a bound stopped it (see `stop`). */
  async next(): Promise<Uint8Array | undefined> {
    if (this.finished) return undefined;
    const { signal, idleMs, maxBytes } = this.limits;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const interrupted = new Promise<BodyStop>((resolve) => {
      if (Number.isFinite(idleMs)) timer = setTimeout(() => resolve({ kind: "stalled", ms: idleMs }), idleMs);
      onAbort = () => resolve({ kind: "cut", cause: signal?.reason ?? new Error("aborted") });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const read = this.reader.read().then(
        (result) => ({ result }),
        (cause: unknown) => ({ stop: { kind: "cut", cause } as BodyStop }),
      );
      const got = await Promise.race([read, interrupted.then((stop) => ({ stop }))]);
      if ("stop" in got) return await this.end(got.stop);
      if (got.result.done) return await this.end(undefined);
      const chunk = got.result.value;
      this.bytes += chunk.length;
      if (this.bytes > maxBytes) return await this.end({ kind: "too-large", limitBytes: maxBytes });
      return chunk;
    } finally {
      // Only when one was set: the first clearTimeout loads Node's timers module (~4 ms of a hook run).
      if (timer !== undefined) clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Stops reading and releases the connection (when the caller has what it needs). */
  async cancel(): Promise<void> {
    await this.end(undefined);
  }

  private async end(stop: BodyStop | undefined): Promise<undefined> {
    if (this.finished) return undefined;
    this.finished = true;
    this.stop = stop;
    await this.reader.cancel().catch(() => {});
    try {
      this.reader.releaseLock();
    } catch {
      // a read is still pending on a body that never settles; the cancel above already closed it
    }
    return undefined;
  }
}

/** A whole body within its bounds: its bytes, or why it stopped (what was read of it is dropped). */
export async function readBody(
  response: Response,
  limits: BodyLimits,
): Promise<{ bytes: Uint8Array } | { stop: BodyStop }> {
  if (!response.body) return { bytes: new Uint8Array() };
  const body = new BoundedBody(response.body, limits);
  const chunks: Uint8Array[] = [];
  for (let chunk = await body.next(); chunk; chunk = await body.next()) chunks.push(own(chunk));
  return body.stop ? { stop: body.stop } : { bytes: concatBytes(chunks) };
}

/**
 * A chunk that holds only its own bytes. Fetch may hand out small views of a much larger buffer (4 KiB views
 * of 64 KiB when it inflates gzip), and keeping the views would keep the whole buffers.
 */
function own(chunk: Uint8Array): Uint8Array {
  return chunk.byteLength < chunk.buffer.byteLength ? chunk.slice() : chunk;
}

/** The text of the first `maxBytes` of a body (an error page's start); the rest is not read. Never throws. */
export async function readPrefix(
  response: Response,
  maxBytes: number,
  idleMs: number,
  signal?: AbortSignal,
): Promise<string> {
  if (!response.body) return "";
  const body = new BoundedBody(response.body, { maxBytes: Number.MAX_SAFE_INTEGER, idleMs, signal });
  const chunks: Uint8Array[] = [];
  let kept = 0;
  while (kept < maxBytes) {
    const chunk = await body.next();
    if (!chunk) break;
    const part = chunk.subarray(0, maxBytes - kept);
    chunks.push(part);
    kept += part.length;
  }
  await body.cancel();
  return new TextDecoder().decode(concatBytes(chunks));
}
