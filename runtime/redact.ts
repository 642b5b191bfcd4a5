/** Redaction applied to captured text before it leaves the machine: `<private>` spans and obvious credentials. */

/** Placeholder that replaces a secret. */
export const REDACTED = "[REDACTED]";

const RULES: [RegExp, string][] = [
  // Private key blocks (PEM / OpenSSH).
  [/-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g, REDACTED],
  // Provider keys and tokens.
  [/\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}/g, REDACTED],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}\b/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // .env-style lines whose key says secret / token / password / key.
  [
    /^(\s*(?:export\s+)?[A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_]*\s*=\s*)\S.*$/gm,
    `$1${REDACTED}`,
  ],
  // Inline assignments: password=…, token=…, secret=…, api_key=… (also JSON/YAML-quoted).
  [
    /\b((?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?token|client[_-]?secret)["']?\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s,;&"'}]+)/gi,
    `$1${REDACTED}`,
  ],
];

/** Removes `<private>…</private>` spans (an unclosed one runs to the end of the text). */
export function stripPrivate(text: string): string {
  return text.replace(/<private\b[^>]*>[\s\S]*?(?:<\/private\s*>|$)/gi, "");
}

/** Replaces obvious credentials with `[REDACTED]`. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  return out;
}

/** Full redaction: private spans first, then credentials. */
export function redact(text: string): string {
  return redactSecrets(stripPrivate(text));
}
