/**
 * The one gate between untrusted text — memories, profiles, listings, anything a server or a journal says —
 * and what a hook prints. Two rules, neither of which depends on the output format:
 *
 * 1. **Nothing but printable text and `\n`/`\t` reaches the terminal**: escape sequences (7-bit `ESC …` —
 *    CSI, OSC, DCS, SOS, PM, APC, two-byte escapes — and their 8-bit C1 forms) are removed whole; every other
 *    C0/C1 control, DEL and format character (bidi embeddings/overrides/isolates, zero-width space, BOM, the
 *    Unicode tag characters of invisible-ASCII "smuggling", …) goes too, as do lone surrogates; `\r\n`, `\r`,
 *    NEL and the Unicode line/paragraph separators become `\n`.
 * 2. **Nothing reads as markup**: every `<` that starts a tag-like token — followed by a letter, `_`, `:`,
 *    `/`, `!`, `?` or `|` — or that ends the text becomes `&lt;`. No list of tag names: whatever a later
 *    output format (or Kimi, or the model) treats as structure (`</openviking-context>`,
 *    `<system-reminder>`, `<hook_result>`, `<system>`, `<|im_end|>`, `<![CDATA[`, …), untrusted text cannot
 *    open or close it, alone or glued to what follows it. `a < b`, `x<5`, `<-` and `<=` stay as they are.
 *    Look-alike brackets (`＜`, `‹`) are left alone: no parser reads them as markup.
 *
 * `neutralize` is idempotent. Printed output is built only from {@link SafeText}: the `safe` template keeps
 * its literal parts (our own markup, written in code) and neutralises every interpolated string, so a new
 * output format cannot forget the gate — a plain string is not a `SafeText`, and interpolating one
 * neutralises it.
 */

/**
 * Escape sequences, removed whole: CSI, OSC/DCS/SOS/PM/APC strings (to their terminator, else to the next
 * control such as the line end), two-byte escapes, and the 8-bit forms. Linear: no part can rescan another.
 */
const ESCAPE_SEQUENCE =
  // deno-lint-ignore no-control-regex
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)?|[ -/]*[0-~])|\x9b[0-?]*[ -/]*[@-~]|[\x90\x98\x9d\x9e\x9f][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)?/g;

/** Line breaks other than `\n`. */
const LINE_BREAK = /\r\n?|[\x85\u2028\u2029]/g;

/**
 * Controls and invisible format characters: every C0/C1 control and DEL but `\t` and `\n`, and every format
 * character (bidi marks, embeddings, overrides and isolates, zero-width space, word joiner, BOM, soft
 * hyphen, the tag block U+E0000–U+E007F, …) but ZWNJ/ZWJ, which scripts and emoji need.
 */
const INVISIBLE = /(?![\t\n\u200c\u200d])[\p{Cc}\p{Cf}]/gu;

/**
 * A `<` that starts something tag-like (invisible joiners and combining marks in between do not hide it), or
 * that ends the text (so no concatenation can complete it into a tag).
 */
const TAG_OPEN = /<(?=[\p{M}\u200c\u200d]*(?:[\p{L}_:/!?|]|$))/gu;

/** Untrusted text made safe to print: no control or escape sequence, no markup (see the module doc). */
export function neutralize(text: string): string {
  return printable(text).replace(TAG_OPEN, "&lt;");
}

/**
 * Rule 1 alone: no control, escape sequence or invisible character, for what only a person reads (a command's
 * report, never the model's context), where `<` stays as written.
 */
export function printable(text: string): string {
  return text
    .replace(ESCAPE_SEQUENCE, "")
    .replace(LINE_BREAK, "\n")
    .replace(INVISIBLE, "")
    .toWellFormed();
}

const TOKEN = Symbol("SafeText");

/** Text that may be printed: literal markup from our code and neutralised untrusted text, nothing else. */
export class SafeText {
  readonly #text: string;

  /** Only this module makes one (`safe`, `SafeText.join`, `cut`). */
  constructor(token: typeof TOKEN, text: string) {
    if (token !== TOKEN) throw new TypeError("SafeText is made with safe`…`");
    this.#text = text;
  }

  /** The printable text. */
  get text(): string {
    return this.#text;
  }

  /** Its length in UTF-16 code units. */
  get length(): number {
    return this.#text.length;
  }

  /** `parts` joined with the literal separator `sep`. */
  static join(parts: readonly SafeText[], sep: SafeText): SafeText {
    return new SafeText(TOKEN, parts.map((p) => p.text).join(sep.text));
  }
}

/** What may be interpolated into `safe`: untrusted strings (neutralised), numbers, and `SafeText` as it is. */
export type SafePiece = string | number | SafeText;

/**
 * Template tag for printed text: the literal parts are ours and kept; each interpolated string is
 * neutralised, each `SafeText` kept as it is. Only a real template literal is accepted, and an untrusted
 * string right after a literal `<` or `</` (naming a tag) is refused.
 */
export function safe(strings: TemplateStringsArray, ...values: SafePiece[]): SafeText {
  if (!Object.isFrozen(strings) || !Array.isArray(strings.raw)) {
    throw new TypeError("safe is a template tag: safe`…`");
  }
  let out = strings[0];
  values.forEach((v, i) => {
    if (typeof v === "string" && /<\/?$/.test(strings[i])) {
      throw new TypeError("safe: an untrusted string cannot name a tag");
    }
    out += v instanceof SafeText ? v.text : typeof v === "number" ? String(v) : neutralize(v);
    out += strings[i + 1];
  });
  return new SafeText(TOKEN, out);
}

/**
 * `text` cut to at most `max` code units, at the last line break that keeps at least half of it (else at
 * `max`), never inside a surrogate pair, with `mark` appended inside the limit; unchanged when it fits.
 */
export function cut(text: SafeText, max: number, mark: SafeText): SafeText {
  if (text.length <= max) return text;
  const room = Math.max(0, max - mark.length);
  let end = text.text.lastIndexOf("\n", room);
  if (end < room / 2) end = room;
  const code = text.text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  if (text.text[end - 1] === "<") end--; // a `<` at the end could open a tag with what follows
  return new SafeText(TOKEN, text.text.slice(0, end) + (end + mark.length <= max ? mark.text : ""));
}

/** Characters JSON leaves raw that a terminal may act on or hide: DEL, C1, format characters, separators. */
const JSON_UNSAFE = /[\x7f-\x9f\u2028\u2029\p{Cf}]/gu;

/**
 * `JSON.stringify(value)` safe to print on a terminal: the same JSON value, with every character a terminal
 * could act on or hide written as a `\uXXXX` escape (JSON already escapes C0 and lone surrogates).
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    JSON_UNSAFE,
    (c) =>
      [...c].map((u) => u.codePointAt(0)!).flatMap((cp) =>
        cp > 0xffff ? [0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff)] : [cp]
      ).map((u) => `\\u${u.toString(16).padStart(4, "0")}`).join(""),
  );
}

/**
 * A command's report as JSON for a person or a script to read: every string in it made {@link printable}
 * (a server's words are data here, never terminal commands, whichever program prints them next), then
 * {@link terminalJson}.
 */
export function reportJson(value: unknown, indent?: number): string {
  const clean = (v: unknown): unknown =>
    typeof v === "string"
      ? printable(v)
      : Array.isArray(v)
      ? v.map(clean)
      : v !== null && typeof v === "object"
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [printable(k), clean(x)]))
      : v;
  return terminalJson(clean(value), indent);
}
