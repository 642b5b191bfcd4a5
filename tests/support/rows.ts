/**
 * How many terminal rows a hook's printed text takes in Kimi's TUI: every line of it is shown indented by
 * three columns under "● UserPromptSubmit hook" (measured in the 2.1.0 and 0.41.0 TUIs) and wraps at the
 * terminal width, each character as wide as lib/columns.ts says.
 */

import { textColumns } from "../../lib/columns.ts";

/** Columns Kimi's TUI indents hook output by. */
const HOOK_INDENT = 3;

/** Rows `text` takes at `cols` columns, each line indented by `indent` (an empty text takes none). */
export function terminalRows(text: string, cols = 160, indent = HOOK_INDENT): number {
  const body = text.replace(/\n+$/, "");
  if (!body) return 0;
  const room = Math.max(1, cols - indent);
  return body.split("\n").reduce((n, line) => n + Math.max(1, Math.ceil(textColumns(line) / room)), 0);
}
