/** Byte helpers, and stdin read whole (the detaching hook parent loads this without zod). */

/** Joins byte chunks into one array. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  chunks.reduce((at, c) => (out.set(c, at), at + c.length), 0);
  return out;
}

/** Reads stdin to the end (any size); empty when there is no stdin or it cannot be read. */
export async function readAllStdin(): Promise<Uint8Array> {
  // Plain reads: the ReadableStream machinery costs start-up time on every hook.
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await Deno.stdin.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
  } catch {
    // closed or unreadable stdin counts as empty
  }
  return concatBytes(chunks);
}
