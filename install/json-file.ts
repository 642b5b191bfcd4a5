/** Pure helpers to re-serialize a JSON file the way it was written (indent, line ending, final newline). */

/** How a JSON file is laid out. */
export interface JsonStyle {
  indent: string;
  eol: "\n" | "\r\n";
  finalNewline: boolean;
}

/** The layout of existing JSON text (2 spaces, LF and a final newline for a new file). */
export function jsonStyle(text: string | undefined): JsonStyle {
  if (text === undefined || text.trim() === "") return { indent: "  ", eol: "\n", finalNewline: true };
  const m = /\n([ \t]+)\S/.exec(text);
  return {
    indent: m ? m[1] : "  ",
    eol: text.includes("\r\n") ? "\r\n" : "\n",
    finalNewline: /\n$/.test(text),
  };
}

/** Serializes `value` in `style`. */
export function formatJson(value: unknown, style: JsonStyle): string {
  let text = JSON.stringify(value, null, style.indent);
  if (style.eol === "\r\n") text = text.replace(/\n/g, "\r\n");
  return style.finalNewline ? text + style.eol : text;
}

/** Parses JSON text, describing the error instead of throwing. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text.replace(/^\uFEFF/, "")) };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

/** A plain JSON object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
