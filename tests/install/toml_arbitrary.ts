/**
 * fast-check generators of valid TOML documents as a user might write Kimi's config.toml: root keys, tables,
 * sub-tables, arrays of tables (including the user's own `[[hooks]]`), comments, blank and whitespace lines,
 * unicode keys/values/comments, LF or CRLF, with or without a final newline.
 */

import fc from "fast-check";

/** Characters TOML forbids raw in comments and literal strings. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/g;

const text = fc.string({ unit: "grapheme", maxLength: 12 }).map((s) => s.replace(CONTROL, ""));

const basicString = text.map((s) => JSON.stringify(s));
const literalString = text.map((s) => `'${s.replace(/'/g, "")}'`);

const scalar = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String),
  fc.boolean().map(String),
  basicString,
  literalString,
  fc.constantFrom(
    "3.25",
    "-0.5",
    "1e3",
    "inf",
    "nan",
    "1979-05-27T07:32:00Z",
    "1979-05-27",
    "07:32:00",
    "0x1F",
  ),
);

const value = (eol: string) =>
  fc.oneof(
    { weight: 5, arbitrary: scalar },
    {
      weight: 1,
      arbitrary: fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 4 }).map((a) => `[${a.join(", ")}]`),
    },
    { weight: 1, arbitrary: fc.tuple(basicString, fc.integer()).map(([s, n]) => `{ s = ${s}, n = ${n} }`) },
    { weight: 1, arbitrary: fc.tuple(text, text).map(([a, b]) => `"""${eol}${a}${eol}${b}"""`) },
  );

const keyNames = fc.constantFrom(
  "name",
  "model",
  "a",
  "b_2",
  "x-y",
  "Key9",
  '"ключ"',
  '"名前 key"',
  '"é"',
  '"a.b"',
  '"🙂"',
  "enabled",
  "timeout",
);

const comment = text.map((s) => `#${s}`);

/** One line inside a table: blank, whitespace, comment or `key = value [# comment]`. */
function filler(eol: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constant(""),
    fc.constantFrom(" ", "\t", "   "),
    comment,
    comment.map((c) => `  ${c}`),
  ).map((l) => l + eol);
}

function keyValues(eol: string): fc.Arbitrary<string> {
  return fc.uniqueArray(keyNames, { maxLength: 4 }).chain((keys) =>
    fc.tuple(
      ...keys.map((k) =>
        fc.tuple(value(eol), fc.option(comment, { nil: undefined }), fc.array(filler(eol), { maxLength: 2 }))
          .map((
            [v, c, fill],
          ) => `${k} = ${v}${c ? ` ${c}` : ""}${eol}${fill.join("")}`)
      ),
    ).map((lines) => lines.join(""))
  );
}

function userHook(eol: string, i: number): fc.Arbitrary<string> {
  return fc.tuple(
    fc.constantFrom("Stop", "PreToolUse", "SessionStart", "Notification"),
    fc.option(fc.constantFrom("Bash", "Read|Write", ""), { nil: undefined }),
    fc.option(fc.integer({ min: 1, max: 600 }), { nil: undefined }),
  ).map(([event, matcher, timeout]) =>
    [
      `event = "${event}"`,
      ...(matcher === undefined ? [] : [`matcher = "${matcher}"`]),
      `command = "echo user-hook-${i} ✓"`,
      ...(timeout === undefined ? [] : [`timeout = ${timeout}`]),
    ].map((l) => l + eol).join("")
  );
}

function section(eol: string, i: number): fc.Arbitrary<string> {
  const header = fc.oneof(
    fc.constant(`[t${i}]`),
    fc.constant(`[t${i}.sub]`),
    fc.constant(`["ключ ${i}"]`),
    fc.constant(`[providers.p${i}]`),
    fc.constant(`[[arr]]`),
    fc.constant(`[[hooks]]`),
  );
  return fc.tuple(header, fc.option(comment, { nil: undefined }), fc.constantFrom("", "  ")).chain((
    [h, c, indent],
  ) => {
    const head = `${indent}${h}${c ? ` ${c}` : ""}${eol}`;
    const body = h === "[[hooks]]" ? userHook(eol, i) : keyValues(eol);
    return fc.tuple(body, fc.array(filler(eol), { maxLength: 2 })).map(([b, f]) => head + b + f.join(""));
  });
}

/** A valid TOML document (not guaranteed: callers filter with a parser). */
export function tomlDocument(): fc.Arbitrary<string> {
  return fc.record({
    eol: fc.constantFrom("\n", "\r\n"),
    finalNewline: fc.boolean(),
    sections: fc.integer({ min: 0, max: 5 }),
  }).chain(({ eol, finalNewline, sections }) =>
    fc.tuple(
      fc.array(filler(eol), { maxLength: 3 }),
      keyValues(eol),
      fc.tuple(...Array.from({ length: sections }, (_, i) => section(eol, i))),
    ).map(([lead, root, secs]) => {
      const doc = lead.join("") + root + secs.join("");
      if (finalNewline || doc === "") return doc;
      // Drop the final line ending (keep the document non-empty and valid).
      return doc.endsWith(eol) ? doc.slice(0, -eol.length) : doc;
    })
  );
}

/** A table section to append after a document (starts with a header). */
export function trailingSection(): fc.Arbitrary<string> {
  return fc.constantFrom("\n", "\r\n").chain((eol) => section(eol, 99).map((s) => s));
}
