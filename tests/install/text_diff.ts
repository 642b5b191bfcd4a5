/** Test helpers for the text of Kimi's JSON files. */

/** The piece deleted from `before` to give `after`, or undefined when `after` is not `before` less one piece. */
export function deletionOf(before: string, after: string): string | undefined {
  if (before.length < after.length) return undefined;
  let p = 0;
  while (p < after.length && after[p] === before[p]) p++;
  const rest = after.slice(p);
  return before.endsWith(rest) ? before.slice(p, before.length - rest.length) : undefined;
}

/** JSON.parse after dropping a leading BOM. */
export function parseLoose(text: string): unknown {
  return JSON.parse(text.replace(/^\ufeff/, ""));
}
