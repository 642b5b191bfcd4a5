/**
 * Parsed, untrusted values: the one "plain JSON object" test, structural equality of parsed JSON and TOML,
 * and a zod/mini issue in words (zod/mini loads no locale: its messages all read "Invalid input").
 */

import type * as z from "zod/mini";

/** A JSON object's members. */
export type JsonRecord = Record<string, unknown>;

/** Whether `value` is a plain object (what `JSON.parse` makes of `{…}`), not null and not an array. */
export function isRecord(value: unknown): value is JsonRecord {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Structural equality of parsed JSON or TOML values: object key order ignored, dates by value. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && String(a) === String(b) &&
      Object.is(a.getTime(), b.getTime());
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((x, i) => deepEqual(x, b[i]));
  }
  if (!isRecord(a) || !isRecord(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length &&
    keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
}

/** `value` when it is a plain object, else an empty one (reading a member of it then gives `undefined`). */
export function asRecord(value: unknown): JsonRecord {
  return isRecord(value) ? value : {};
}

/** The first issue of a failed parse in words ("expected number", "must be at most 100", …). */
export function issueText(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return "is invalid";
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected}`;
    case "too_small":
      return isNumeric(issue.origin)
        ? `must be at least ${issue.minimum}`
        : `needs at least ${count(Number(issue.minimum), issue.origin)}`;
    case "too_big":
      return isNumeric(issue.origin)
        ? `must be at most ${issue.maximum}`
        : `takes at most ${count(Number(issue.maximum), issue.origin)}`;
    case "invalid_value":
      return `must be ${issue.values.map((v) => JSON.stringify(v)).join(" or ")}`;
    case "invalid_union":
      return "has none of the accepted types";
    default:
      return issue.message;
  }
}

/** Whether a size issue is about a number's value (else a length). */
const isNumeric = (origin: string) => origin === "number" || origin === "int" || origin === "bigint";

/** `n` characters (of a string) or items (of anything else), in words. */
function count(n: number, origin: string): string {
  const unit = origin === "string" ? "character" : "item";
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}
