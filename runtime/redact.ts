/**
 * Redaction applied to captured text before it leaves the machine: `<private>` spans and obvious credentials.
 * Every rule runs in linear time on any input (no quantifier can rescan what another already covered; spans
 * are found with an index scanner): a prompt hook has 20 s, and prompts are pasted logs.
 */

/** Placeholder that replaces a secret. */
export const REDACTED = "[REDACTED]";

/** The key names of `.env`-style lines whose value is a secret. */
const SECRET_NAME = /SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?/;

/** Credential rules: each pattern and its replacement. */
const RULES: readonly [RegExp, string | ((...groups: string[]) => string)][] = [
  // Provider keys and tokens.
  [/\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // .env-style lines whose key says secret / token / password / key. Blanks only within the line (`\s`
  // would run across blank lines, and CRLF lines, from every line start); the key is one greedy run,
  // checked for its secret word afterwards.
  [
    /^([ \t]*(?:export[ \t]+)?([A-Z0-9_]+)[ \t]*=[ \t]*)(\S.*)$/gm,
    (line, head, name) => (SECRET_NAME.test(name) ? `${head}${REDACTED}` : line),
  ],
  // Inline assignments: password=…, token=…, secret=…, api_key=… (also JSON/YAML-quoted).
  [
    /\b((?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?token|client[_-]?secret)["']?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s,;&"'}]+)/gi,
    `$1${REDACTED}`,
  ],
];

/** A kind of span: how it opens, where its opener ends, what closes it, and what replaces it. */
export interface SpanRule {
  /** The opener's start (a global regex). */
  open: RegExp;
  /** Index just past the opener that starts with `m`, or -1 when it never ends (then no later one does). */
  openerEnd: (text: string, m: RegExpExecArray) => number;
  /** The closer of the span opened by `m` (a global regex). */
  close: (m: RegExpExecArray) => RegExp;
  replacement: string;
}

/**
 * Removes every span of `rule`; an opened span without its close runs to the end of the text. One scan:
 * each search starts where the previous one stopped, and a failed search ends the scan.
 */
function removeSpans(text: string, rule: SpanRule): string {
  let out = "";
  let at = 0;
  for (;;) {
    rule.open.lastIndex = at;
    const m = rule.open.exec(text);
    if (!m) break;
    const body = rule.openerEnd(text, m);
    if (body < 0) break;
    const close = rule.close(m);
    close.lastIndex = body;
    const closed = close.exec(text);
    out += text.slice(at, m.index) + rule.replacement;
    if (!closed) return out;
    at = closed.index + closed[0].length;
  }
  return out + text.slice(at);
}

const PRIVATE: SpanRule = {
  open: /<private\b/gi,
  openerEnd: (text, m) => {
    const gt = text.indexOf(">", m.index + m[0].length);
    return gt < 0 ? -1 : gt + 1;
  },
  close: () => /<\/private\s*>/gi,
  replacement: "",
};

/**
 * Removes `<private>…</private>` spans. An unclosed `<private>` hides everything after it: privacy beats
 * completeness.
 */
function stripPrivate(text: string): string {
  return removeSpans(text, PRIVATE);
}

const KEY_BLOCK: SpanRule = {
  open: /-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY-----/g,
  openerEnd: (_text, m) => m.index + m[0].length,
  close: (m) => new RegExp(`-----END ${m[1]}PRIVATE KEY-----`, "g"),
  replacement: REDACTED,
};

/** Replaces PEM / OpenSSH private key blocks; an unclosed one is redacted to the end of the text. */
function redactKeyBlocks(text: string): string {
  return removeSpans(text, KEY_BLOCK);
}

/** Replaces obvious credentials with `[REDACTED]`. */
function redactSecrets(text: string): string {
  let out = redactKeyBlocks(text);
  for (const [pattern, replacement] of RULES) {
    out = typeof replacement === "string"
      ? out.replace(pattern, replacement)
      : out.replace(pattern, replacement as (...groups: string[]) => string);
  }
  return out;
}

/** Full redaction: private spans first, then credentials. */
export function redact(text: string): string {
  return redactSecrets(stripPrivate(text));
}
