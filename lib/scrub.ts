/** Secrets out of everything we show or write: given secrets, every credential shape, secret-named fields. */

import { redactCredentials } from "./redact.ts";

/** The `user:password@` of an address: after `//`, up to the last `@` before the path (a password may hold one). */
const USERINFO = /\/\/[^/?#\s"'<>]*@/g;

/** A URL — or any text naming URLs — with every `user:password@` removed (for messages and logs). */
export function withoutUserinfo(text: string): string {
  return text.replace(USERINFO, "//");
}

/** Text with every secret masked: the given ones, every credential, bearer tokens and URL userinfo. */
export function scrubText(text: string, secrets: readonly string[] = []): string {
  let s = text;
  for (const secret of secrets) if (secret && secret.length >= 4) s = s.split(secret).join("***");
  return withoutUserinfo(redactCredentials(s).replace(/\b(Bearer)\s+[^\s"',;]+/gi, "$1 ***"));
}

const SECRET_KEY =
  /^(api[_-]?key|apikey|token|access[_-]?token|secret|password|authorization|bearer|credentials?)$/i;

/** Deep copy of `value` with secret-looking fields and any of `secrets` masked. */
export function scrub(value: unknown, secrets: readonly string[] = [], depth = 0): unknown {
  if (typeof value === "string") {
    return scrubText(value, secrets);
  }
  if (value === null || typeof value !== "object" || depth > 8) return value;
  if (value instanceof Error) return { name: value.name, message: scrub(value.message, secrets, depth + 1) };
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_KEY.test(k) && v !== undefined && v !== "" && typeof v !== "boolean"
      ? "***"
      : scrub(v, secrets, depth + 1);
  }
  return out;
}
