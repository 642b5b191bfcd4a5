/** The assertions the tests use, in @std/assert's names, on top of node:assert (JSR is unreachable here). */

import assert from "node:assert/strict";

/** Deep strict equality. */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message);
}

/** Truthiness. */
export function assertTrue(condition: unknown, message?: string): asserts condition {
  assert.ok(condition, message);
}

/** A string matches a pattern. */
export function assertMatch(actual: string, pattern: RegExp, message?: string): void {
  assert.match(actual, pattern, message);
}

/** A string does not match a pattern. */
export function assertNotMatch(actual: string, pattern: RegExp, message?: string): void {
  assert.doesNotMatch(actual, pattern, message);
}

/** A string contains a substring. */
export function assertStringIncludes(actual: string, expected: string, message?: string): void {
  assert.ok(
    actual.includes(expected),
    message ?? `expected ${JSON.stringify(actual)} to include ${JSON.stringify(expected)}`,
  );
}

/** `fn` throws an instance of `ErrorClass` (whose message includes `includes`, when given). */
export function assertThrows(
  fn: () => unknown,
  // deno-lint-ignore no-explicit-any
  ErrorClass: new (...args: any[]) => Error = Error,
  includes?: string,
  message?: string,
): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof ErrorClass, message ?? `expected ${ErrorClass.name}, got ${String(thrown)}`);
  if (includes !== undefined) assert.ok((thrown as Error).message.includes(includes), message);
}
