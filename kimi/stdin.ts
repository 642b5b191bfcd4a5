/** Reading a hook's stdin. */

import { concatBytes } from "../lib/bytes.ts";

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
