/**
 * Fuzzing the viking:// guard's finder: a viking URI spelled any way a model or a tool may write it (the
 * scheme in any case, one or more slashes or backslashes, percent-encoded once or twice, JSON-escaped, after
 * a local directory, inside a longer text) is found, as `viking://` and its path; a path that only contains
 * the word (`openviking/`, `viking-notes/`, `…/openviking:x`) is not.
 */

import fc from "fast-check";
import { assertEquals } from "../support/assert.ts";
import { findVikingUri } from "../../memory/guard.ts";
import { params } from "./arbitraries.ts";

/** A path of a viking URI: segments of plain path characters. */
const uriPath = fc.array(fc.stringMatching(/^[A-Za-z0-9_.~-]{1,12}$/), { minLength: 1, maxLength: 5 })
  .map((parts) => parts.join("/"));

/** Percent-encodes the characters of `s` that `pick` chooses (and, with `twice`, the `%` of those again). */
function percent(s: string, pick: (i: number) => boolean, twice: boolean): string {
  return [...s].map((ch, i) => {
    if (!pick(i)) return ch;
    const once = `%${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
    return twice ? once.replace("%", "%25") : once;
  }).join("");
}

/** One way of writing `viking:` + separators + `path`. */
const spelling = fc.record({
  path: uriPath,
  caseMask: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  slashes: fc.integer({ min: 1, max: 4 }),
  separator: fc.constantFrom("/", "\\", "\\/", "\\\\", "\\u002f"),
  encodeMask: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
  encode: fc.boolean(),
  twice: fc.boolean(),
  before: fc.constantFrom("", "/home/u/project/", "C:\\proj\\", "read ", '{"path": "', "'", "<"),
  after: fc.constantFrom("", " please", '"}', "'", ">", ")"),
});

Deno.test("fuzz/guard: every spelling of a viking URI is found, as viking:// and its path", () => {
  fc.assert(
    fc.property(spelling, (s) => {
      const scheme = [..."viking"].map((c, i) => (s.caseMask[i] ? c.toUpperCase() : c)).join("");
      let body = `${scheme}:${s.separator.repeat(s.slashes)}${s.path.replaceAll("/", s.separator)}`;
      if (s.encode) body = percent(body, (i) => s.encodeMask[i % 40], s.twice);
      const found = findVikingUri({ file_path: `${s.before}${body}${s.after}` });
      assertEquals(found.toLowerCase(), `viking://${s.path}`.toLowerCase(), body);
    }),
    params(300),
  );
});

Deno.test("fuzz/guard: a local path that only contains the word viking is never denied", () => {
  const word = fc.constantFrom(
    "openviking",
    "viking-notes",
    "vikings",
    "my_viking",
    "viking.md",
    "openviking:x",
  );
  const segment = fc.oneof(word, fc.stringMatching(/^[A-Za-z0-9_. -]{1,10}$/));
  const path = fc.record({
    root: fc.constantFrom("/", "./", "C:\\", "~/", ""),
    parts: fc.array(segment, { minLength: 1, maxLength: 5 }),
    separator: fc.constantFrom("/", "\\"),
  }).map(({ root, parts, separator }) => `${root}${parts.join(separator)}`);
  fc.assert(
    fc.property(path, (p) => assertEquals(findVikingUri({ path: p, pattern: "**/*.ts" }), "", p)),
    params(300),
  );
});
