/** Reading a hook's stdin. */

/** Reads stdin to the end (any size); empty when there is no stdin or it cannot be read. */
export async function readAllStdin(): Promise<Uint8Array> {
  // Plain reads: the ReadableStream machinery costs ~2 ms of start-up on every hook.
  const chunks: Uint8Array[] = [];
  let size = 0;
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await Deno.stdin.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
      size += n;
    }
  } catch {
    // closed or unreadable stdin counts as empty
  }
  const out = new Uint8Array(size);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
