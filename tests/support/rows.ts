/**
 * How many terminal rows a hook's printed text takes in Kimi's TUI: every line of it is shown indented by
 * three columns under "● UserPromptSubmit hook" (measured in the 2.1.0 and 0.41.0 TUIs) and wraps at the
 * terminal width; wide (CJK, fullwidth, emoji) characters take two columns, combining marks none.
 */

/** Columns Kimi's TUI indents hook output by. */
export const HOOK_INDENT = 3;

/** Display width of one code point (East Asian wide and fullwidth = 2, combining and zero-width = 0). */
function width(cp: number): number {
  if (cp === 0x200b || cp === 0x200c || cp === 0x200d || (cp >= 0x300 && cp <= 0x36f)) return 0;
  const wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}

/** Display width of a line. */
export function lineWidth(line: string): number {
  let w = 0;
  for (const ch of line) w += width(ch.codePointAt(0)!);
  return w;
}

/** Rows `text` takes at `cols` columns, each line indented by `indent` (an empty text takes none). */
export function terminalRows(text: string, cols = 160, indent = HOOK_INDENT): number {
  const body = text.replace(/\n+$/, "");
  if (!body) return 0;
  const room = Math.max(1, cols - indent);
  return body.split("\n").reduce((n, line) => n + Math.max(1, Math.ceil(lineWidth(line) / room)), 0);
}
