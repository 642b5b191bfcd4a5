/** The one test for "a plain JSON object": not null, not an array. */

/** A JSON object's members. */
export type JsonRecord = Record<string, unknown>;

/** Whether `value` is a plain object (what `JSON.parse` makes of `{…}`), not null and not an array. */
export function isRecord(value: unknown): value is JsonRecord {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `value` when it is a plain object, else an empty one (reading a member of it then gives `undefined`). */
export function asRecord(value: unknown): JsonRecord {
  return isRecord(value) ? value : {};
}
