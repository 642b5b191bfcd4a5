/** A zip (entries stored, not compressed) for tests of what reads `.ovpack` files, and its entries read back. */

const u16 = (n: number) => [n & 0xff, n >> 8 & 0xff];
const u32 = (n: number) => [...u16(n & 0xffff), ...u16(n >>> 16)];

/** The CRC-32 of `data`, as zip records it. */
function crc32(data: Uint8Array): number {
  let c = ~0;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c >>> 1 ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** A zip holding `entries` (name → text), in order. */
export function zipOf(entries: Record<string, string>): Uint8Array {
  const local: number[] = [];
  const central: number[] = [];
  const enc = new TextEncoder();
  for (const [name, text] of Object.entries(entries)) {
    const [n, d] = [enc.encode(name), enc.encode(text)];
    const common = [...u16(20), ...u16(0x800), ...u16(0), ...u32(0), ...u32(crc32(d)), ...u32(d.length)];
    const sizes = [...u32(d.length), ...u16(n.length), ...u16(0)];
    central.push(...u32(0x02014b50), ...u16(20), ...common, ...sizes, ...u16(0), ...u16(0), ...u16(0));
    central.push(...u32(0), ...u32(local.length), ...n);
    local.push(...u32(0x04034b50), ...common, ...sizes, ...n, ...d);
  }
  const count = Object.keys(entries).length;
  const end = [...u32(0x06054b50), ...u16(0), ...u16(0), ...u16(count), ...u16(count)];
  return new Uint8Array([
    ...local,
    ...central,
    ...end,
    ...u32(central.length),
    ...u32(local.length),
    ...u16(0),
  ]);
}

/** The entries (name → text) of a zip `zipOf` made, by its local headers. */
export function unzipStored(bytes: Uint8Array): Record<string, string> {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dec = new TextDecoder();
  const out: Record<string, string> = {};
  for (let at = 0; at + 30 <= bytes.length && v.getUint32(at, true) === 0x04034b50;) {
    const [size, nameLen, extra] = [
      v.getUint32(at + 18, true),
      v.getUint16(at + 26, true),
      v.getUint16(at + 28, true),
    ];
    const data = at + 30 + nameLen + extra;
    out[dec.decode(bytes.subarray(at + 30, at + 30 + nameLen))] = dec.decode(
      bytes.subarray(data, data + size),
    );
    at = data + size;
  }
  return out;
}
