/** The one plain-object guard and structural equality. */

import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { asRecord, deepEqual, isRecord } from "./parsed.ts";

Deno.test("isRecord: a plain object only (not null, not an array, not a primitive)", () => {
  assertEquals([{}, { a: 1 }, Object.create(null)].map(isRecord), [true, true, true]);
  assertEquals([null, undefined, [], [1], "x", 1, true].filter(isRecord), []);
  assertEquals(asRecord([1, 2]), {});
  assertEquals(asRecord({ a: 1 }).a, 1);
});

Deno.test("deepEqual: key order ignored, arrays in order, dates by value, nothing else equal by shape", () => {
  assertTrue(deepEqual({ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }));
  assertTrue(!deepEqual({ a: 1 }, { a: 1, b: undefined }), "a key more is a difference");
  assertTrue(!deepEqual([1, 2], [2, 1]));
  assertTrue(deepEqual(new Date("2026-12-01T00:00:00Z"), new Date("2026-12-01T00:00:00Z")));
  assertTrue(!deepEqual(new Date("2026-12-01T00:00:00Z"), new Date("2026-12-02T00:00:00Z")));
  assertTrue(!deepEqual(new Date(0), {}), "a date is not an empty object");
  assertTrue(!deepEqual("1", 1));
  assertTrue(deepEqual(Number.NaN, Number.NaN));
});
