/** The one plain-object guard, structural equality, and zod/mini issues in words (zod/mini has no locale of its own). */

import * as z from "zod/mini";
import { assertEquals, assertTrue } from "../tests/support/assert.ts";
import { asRecord, deepEqual, isRecord, issueText } from "./parsed.ts";

Deno.test("isRecord: a plain object only (not null, not an array, not a primitive)", () => {
  assertEquals([{}, { a: 1 }, Object.create(null)].map(isRecord), [true, true, true]);
  assertEquals([null, undefined, [], [1], "x", 1, true].map(isRecord), [
    false,
    false,
    false,
    false,
    false,
    false,
    false,
  ]);
  assertEquals(asRecord([1, 2]), {});
  assertEquals(asRecord({ a: 1 }).a, 1);
});

Deno.test("issueText: what was wrong, in a few words", () => {
  const text = (s: z.ZodMiniType, v: unknown) => issueText(s.safeParse(v).error?.issues[0]);
  assertEquals(text(z.number(), "x"), "expected number");
  assertEquals(text(z.string().check(z.minLength(1)), ""), "needs at least 1 character");
  assertEquals(text(z.array(z.string()).check(z.minLength(2)), ["a"]), "needs at least 2 items");
  assertEquals(text(z.int().check(z.minimum(1), z.maximum(100)), 500), "must be at most 100");
  assertEquals(text(z.int().check(z.minimum(1)), 0), "must be at least 1");
  assertEquals(text(z.enum(["git", "cwd"]), "svn"), 'must be "git" or "cwd"');
  assertEquals(text(z.union([z.string(), z.number()]), null), "has none of the accepted types");
  assertEquals(issueText(undefined), "is invalid");
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
