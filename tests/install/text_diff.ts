/** Test helpers that tell whether one text is another with a single piece inserted or deleted. */

/** The piece inserted into `before` to give `after`, or undefined when `after` is not `before` + one insertion. */
export function insertionOf(before: string, after: string): string | undefined {
  if (after.length < before.length) return undefined;
  let p = 0;
  while (p < before.length && before[p] === after[p]) p++;
  const rest = before.slice(p);
  return after.endsWith(rest) ? after.slice(p, after.length - rest.length) : undefined;
}

/** The piece deleted from `before` to give `after`, or undefined when it is not one deletion. */
export function deletionOf(before: string, after: string): string | undefined {
  return insertionOf(after, before);
}

/** The first and last index where two texts differ: `before.slice(start, before.length - tail)` changed. */
export function changedRegion(before: string, after: string): { start: number; tail: number } {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let tail = 0;
  while (
    tail < before.length - start && tail < after.length - start &&
    before[before.length - 1 - tail] === after[after.length - 1 - tail]
  ) tail++;
  return { start, tail };
}

/** JSON.parse after dropping a leading BOM. */
export function parseLoose(text: string): unknown {
  return JSON.parse(text.replace(/^\ufeff/, ""));
}
