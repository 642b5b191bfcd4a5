/** Incremental journal reader: complete lines from a byte cursor; garbage skipped, a rewritten file noticed. */

import { sha256Hex } from "../../lib/hash.ts";
import { isRecord } from "../../lib/parsed.ts";
import { concatBytes } from "../../lib/bytes.ts";

/** Where a previous read stopped and what the file looked like there. */
export interface ReadCursor {
  offset: number;
  /** Device/inode of the file ("" where the platform has none). */
  fileId: string;
  /** Hash of up to `TAIL_BYTES` bytes before `offset`. */
  tailHash: string;
}

/** One parsed journal line and its byte span. */
export interface JournalLine {
  offset: number;
  end: number;
  value: Record<string, unknown>;
}

/** What a read produced. */
export interface JournalRead {
  lines: JournalLine[];
  /** Offset the read started at (0 after a rewrite). */
  startOffset: number;
  /** Offset just past the last complete line. */
  endOffset: number;
  fileId: string;
  /** The cursor no longer matched the file, so the read restarted at 0. */
  rewritten: boolean;
  /** Lines that were not JSON objects. */
  garbage: number;
}

/** Bytes before the cursor that are hashed to notice a rewrite of the same length. */
const TAIL_BYTES = 64;

const CHUNK = 1 << 20;
const NEWLINE = 0x0a;

/** Identity of an open file: `dev:ino`, or "" where unavailable. */
function fileIdOf(info: Deno.FileInfo): string {
  return info.ino !== null && info.ino !== undefined ? `${info.dev}:${info.ino}` : "";
}

/** Hash of the `TAIL_BYTES` bytes that end at `offset`. */
async function tailHashAt(file: Deno.FsFile, offset: number): Promise<string> {
  const buf = new Uint8Array(Math.min(offset, TAIL_BYTES));
  await file.seek(offset - buf.length, Deno.SeekMode.Start);
  let got = 0;
  while (got < buf.length) {
    const n = await file.read(buf.subarray(got));
    if (n === null) break;
    got += n;
  }
  return await sha256Hex(buf.subarray(0, got));
}

/** A cheap test run before JSON.parse: lines that cannot matter to capture are not parsed at all. */
export type LineFilter = (line: string) => boolean;

/** Reads complete lines of `path` after `cursor` (or from the start), parsing those `filter` keeps. */
export async function readJournal(
  path: string,
  cursor?: ReadCursor,
  filter?: LineFilter,
): Promise<JournalRead> {
  const file = await Deno.open(path, { read: true });
  try {
    const info = await file.stat();
    const fileId = fileIdOf(info);
    let start = cursor?.offset ?? 0;
    let rewritten = false;
    if (cursor && start > 0) {
      const sameFile = !cursor.fileId || !fileId || cursor.fileId === fileId;
      const fits = info.size >= start;
      const sameTail = fits && sameFile && (await tailHashAt(file, start)) === cursor.tailHash;
      if (!sameTail) [start, rewritten] = [0, true];
    }
    const { lines, garbage, end } = await completeLines(file, start, filter);
    return { lines, startOffset: start, endOffset: end, fileId, rewritten, garbage };
  } finally {
    file.close();
  }
}

/** The complete JSON-object lines of `file` from `start` that pass `filter`, where they end, and the garbage count. */
async function completeLines(
  file: Deno.FsFile,
  start: number,
  filter?: LineFilter,
): Promise<{ lines: JournalLine[]; garbage: number; end: number }> {
  const lines: JournalLine[] = [];
  let garbage = 0;
  let pos = start;
  let carry = new Uint8Array(0);
  const decoder = new TextDecoder();
  await file.seek(start, Deno.SeekMode.Start);
  const buf = new Uint8Array(CHUNK);
  for (;;) {
    const n = await file.read(buf);
    if (n === null) break;
    const data = carry.length ? concatBytes([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
    let lineStart = 0;
    for (let i = data.indexOf(NEWLINE); i !== -1; i = data.indexOf(NEWLINE, i + 1)) {
      const raw = data.subarray(lineStart, i);
      const lineOffset = pos + lineStart;
      lineStart = i + 1;
      if (raw.length === 0) continue;
      const text = decoder.decode(raw);
      if (filter && !filter(text)) continue;
      try {
        const value = JSON.parse(text);
        if (isRecord(value)) lines.push({ offset: lineOffset, end: pos + lineStart, value });
        else garbage++;
      } catch {
        garbage++;
      }
    }
    pos += lineStart;
    carry = data.slice(lineStart);
  }
  return { lines, garbage, end: pos };
}

/** A cursor for `offset` in `path` (hashing the bytes before it). */
export async function cursorAt(path: string, offset: number): Promise<ReadCursor> {
  const file = await Deno.open(path, { read: true });
  try {
    return { offset, fileId: fileIdOf(await file.stat()), tailHash: await tailHashAt(file, offset) };
  } finally {
    file.close();
  }
}
