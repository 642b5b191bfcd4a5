/** What the prompt hook prints: blocks of {@link SafeText}, a blank line apart, within {@link PRINT_MAX_CHARS}. */

import { cut, safe, SafeText } from "./neutralize.ts";

/** Hard cap on the prompt hook's stdout, in UTF-16 code units, whatever the format. */
export const PRINT_MAX_CHARS = 32_000;

/** One printed block: our opening marker, a body, our closing marker (each on its own line). */
export interface Block {
  open: SafeText;
  body: SafeText;
  close: SafeText;
}

const NL = safe`\n`;
const GAP = safe`\n\n`;
const TRUNCATED = safe`\n[truncated]`;

/** Splits `room` over `sizes`: each gets what it needs, the rest shared equally among the larger ones. */
function shares(sizes: readonly number[], room: number): number[] {
  const out = sizes.map(() => 0);
  let left = Math.max(0, room);
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[a] - sizes[b]);
  order.forEach((i, k) => {
    out[i] = Math.min(sizes[i], Math.floor(left / (order.length - k)));
    left -= out[i];
  });
  return out;
}

/** The hook's stdout for `blocks`: blank-line separated, newline-terminated, at most `max` code units. */
export function printBlocks(blocks: readonly Block[], max = PRINT_MAX_CHARS): string {
  if (!blocks.length) return "";
  const frame = blocks.reduce((n, b) => n + b.open.length + b.close.length + 2, 0) + 2 * (blocks.length - 1) +
    1;
  const room = shares(blocks.map((b) => b.body.length), max - frame);
  const fitted = blocks.map((b, i) => ({ ...b, body: cut(b.body, room[i], TRUNCATED) }));
  const out = `${SafeText.join(fitted.map((b) => SafeText.join([b.open, b.body, b.close], NL)), GAP).text}\n`;
  return out.length <= max ? out : "";
}
