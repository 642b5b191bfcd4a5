/** Parsed, untrusted values: the one "plain JSON object" test, the tolerant field, equality of parsed JSON/TOML. */

import * as z from "zod/mini";

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

/** An optional field that reads as absent when it has another shape (one odd field never sinks the record). */
export const tolerant = <T extends z.ZodMiniType>(schema: T) => z.catch(z.optional(schema), undefined);

/** `value` when it is a plain object, else an empty one (reading a member of it then gives `undefined`). */
export function asRecord(value: unknown): JsonRecord {
  return isRecord(value) ? value : {};
}
