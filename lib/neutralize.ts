/**
 * The one gate between untrusted text and what a hook prints: printable text only, nothing that reads as markup;
 * and what the prompt hook prints: blocks of {@link SafeText}, a blank line apart, within {@link PRINT_MAX_CHARS}.
 */

/** Escape sequences, removed whole: CSI, OSC/DCS/SOS/PM/APC (to their end, else the next control), 8-bit forms. */
export const ESCAPE_SEQUENCE =
  // deno-lint-ignore no-control-regex
  /\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)?|[ -/]*[0-~])|\x9b[0-?]*[ -/]*[@-~]|[\x90\x98\x9d\x9e\x9f][^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)?/g;

/** Line breaks other than `\n`. */
const LINE_BREAK = /\r\n?|[\x85\u2028\u2029]/g;

/**
 * Every control but `\t`/`\n`, and every format or default-ignorable character (bidi, zero-width, BOM, tags,
 * variation selectors, Hangul fillers…) but ZWNJ/ZWJ and one selector right after what it varies: VS15/VS16
 * after an emoji (`❤️`), an ideographic variation selector after a Han character (a name's glyph), a free
 * variation selector after a Mongolian letter. A run of selectors can spell a hidden text; one picks a form.
 */
const INVISIBLE =
  /(?![\t\n\u200c\u200d])(?:(?<!\p{Emoji})[\ufe0e\ufe0f]|(?<!\p{Ideographic})[\u{e0100}-\u{e01ef}]|(?<!\p{sc=Mongolian})[\u180b-\u180d\u180f]|(?![\ufe0e\ufe0f\u{e0100}-\u{e01ef}\u180b-\u180d\u180f])[\p{Cc}\p{Cf}\p{DI}])/gu;

/**
 * `<` and what a reader takes for one: fullwidth `＜`, small `﹤`, angle brackets and quotes `‹ 〈 〈 ⟨ ❮ ˂`, and the
 * rest of Unicode's confusables of `<` and its ornament brackets `ᐸ ᚲ 𝈶 ❬ ❰ ⧼`.
 */
const LESS_THAN = "<\uff1c\ufe64\u2039\u2329\u3008\u27e8\u276e\u02c2\u1438\u16b2\u{1d236}\u276c\u2770\u29fc";

/** `/` and its confusables (`／ ⁄ ∕ ╱ ⟋ ⧸ 〳 ㇓ ⼃ ᜵ Ⳇ 𝈺`), and a fullwidth `！` or `？`: what a closing tag, a comment or a declaration opens with. */
const TAG_MARK = "/\uff0f\u2044\u2215\u2571\u27cb\u29f8\u3033\u31d3\u2f03\u1735\u2cc6\u{1d23a}!?\uff01\uff1f";

/** A {@link LESS_THAN} that starts something tag-like (joiners and marks between do not hide it), or ends the text. */
const TAG_OPEN = new RegExp(`[${LESS_THAN}](?=[\\p{M}\u200c\u200d]*(?:[\\p{L}_:|${TAG_MARK}]|$))`, "gu");
const LESS_THAN_LAST = new RegExp(`[${LESS_THAN}]$`, "u");

/** Untrusted text made safe to print: no control or escape sequence, no markup (see the module doc). */
export function neutralize(text: string): string {
  return printable(text).replace(TAG_OPEN, "&lt;");
}

/** Rule 1 alone, for what only a person reads (a command's report, never the model's context). */
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
  constructor(token: typeof TOKEN, readonly text: string) {
    if (token !== TOKEN) throw new TypeError("SafeText is made with safe`…`");
    Object.freeze(this);
  }
  /** Its length in UTF-16 code units. */
  get length(): number {
    return this.text.length;
  }
  /** `parts` joined with the literal separator `sep`. */
  static join = (parts: readonly SafeText[], sep: SafeText): SafeText =>
    new SafeText(TOKEN, parts.map((p) => p.text).join(sep.text));
}

/** Template tag for printed text: literals kept, interpolated strings neutralised, numbers and `SafeText` as they are. */
export function safe(strings: TemplateStringsArray, ...values: (string | number | SafeText)[]): SafeText {
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

let segmenter: Intl.Segmenter | undefined;
const blank = (s: Intl.SegmentData) => /^\s+$/.test(s.segment);

/** Where `text`'s last word boundary at or before `room` is (never inside a token such as `sk-…`), else 0. */
function wordEnd(text: string, room: number): number {
  const from = Math.max(0, room - 2048);
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "word" });
  let end = 0;
  let prev: Intl.SegmentData | undefined;
  for (const seg of segmenter.segment(text.slice(from, room + 64))) {
    if (seg.index > room - from) break;
    if (prev && (blank(prev) || blank(seg) || (prev.isWordLike && seg.isWordLike))) end = from + seg.index;
    prev = seg;
  }
  return end;
}

/**
 * `text` cut to ≤ `max` code units, `mark` appended when it fits: at the last word boundary or line break (`at`)
 * of the second half, else anywhere (whole pairs); no blank or `<` left before the mark.
 * @example cutText("tabs over spaces", 12) // "tabs over…"
 */
export function cutText(text: string, max: number, mark = "…", at: "word" | "line" | "any" = "word"): string {
  if (text.length <= max) return text;
  const room = Math.max(0, max - mark.length);
  let end = at === "word" ? wordEnd(text, room) : at === "line" ? text.lastIndexOf("\n", room) : 0;
  if (end < room / 2) end = /[\ud800-\udbff]/.test(text[room - 1] ?? "") ? room - 1 : room; // whole pairs
  const kept = text.slice(0, end).replace(LESS_THAN_LAST, "").trimEnd();
  return kept.length + mark.length <= max ? kept + mark : kept;
}

/** {@link cutText} at a line break, for printed text. */
export const cut = (text: SafeText, max: number, mark: SafeText): SafeText =>
  new SafeText(TOKEN, cutText(text.text, max, mark.text, "line"));

/** Characters JSON leaves raw that a terminal may act on or hide: DEL, C1, format characters, separators. */
const JSON_UNSAFE = /[\x7f-\x9f\u2028\u2029\p{Cf}]/gu;

/** `JSON.stringify(value)` with every character a terminal could act on or hide as a `\uXXXX` escape. */
export function terminalJson(value: unknown, indent?: number): string {
  const escape = (c: string) => c.split("").map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return JSON.stringify(value, null, indent).replace(JSON_UNSAFE, (c) => escape(c).join(""));
}

/** A command's report as JSON: every string (keys too) made {@link printable}, then {@link terminalJson}. */
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

/** Hard cap on the prompt hook's stdout, in UTF-16 code units, whatever the format. */
export const PRINT_MAX_CHARS = 32_000;

/** One printed block: our opening marker, a body, our closing marker (each on its own line). */
type Block = { open: SafeText; body: SafeText; close: SafeText };

const [NL, GAP, TRUNCATED] = [safe`\n`, safe`\n\n`, safe`\n[truncated]`];

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
  const frame = blocks.reduce((n, b) => n + b.open.length + b.close.length + 4, -1);
  const room = shares(blocks.map((b) => b.body.length), max - frame);
  const fitted = blocks.map((b, i) => ({ ...b, body: cut(b.body, room[i], TRUNCATED) }));
  const out = `${SafeText.join(fitted.map((b) => SafeText.join([b.open, b.body, b.close], NL)), GAP).text}\n`;
  return out.length <= max ? out : "";
}
