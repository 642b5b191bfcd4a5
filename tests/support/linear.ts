/**
 * Worst-case inputs for text rules, and a check that a rule is linear on ~1 MB of its worst case (a
 * super-linear rule takes minutes on the same input).
 */

import { assertTrue } from "./assert.ts";

/** About one megabyte of `unit` repeated (whole units only). */
export function mb(unit: string, size = 1 << 20): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

/** Generous bound for one rule on 1 MB of its worst case; the quadratic rules took minutes. */
const LINEAR_BOUND_MS = 1500;

/**
 * Runs `fn(input)` for every named worst case and asserts each is linear: done within `bound` ms, or — on a
 * machine slow or loaded enough to miss it — taking (the better of two runs) at most 8 times as long as on a
 * quarter of the input (a linear rule takes about 4 times, a quadratic one 16), so the machine's speed does not
 * decide.
 */
export function assertLinear(
  rule: string,
  fn: (text: string) => unknown,
  cases: Record<string, string>,
  bound = LINEAR_BOUND_MS,
): void {
  const time = (text: string) => {
    const start = performance.now();
    fn(text);
    return performance.now() - start;
  };
  for (const [name, input] of Object.entries(cases)) {
    let ms = time(input);
    if (ms < bound) continue;
    const quarter = time(input.slice(0, input.length >> 2));
    ms = Math.min(ms, time(input)); // a pause of the loaded machine in one run is no super-linear rule
    assertTrue(
      ms < bound || ms < 8 * Math.max(quarter, 1),
      `${rule}, ${name} (${input.length} chars): ${ms.toFixed(0)} ms, a quarter of it ${
        quarter.toFixed(0)
      } ms`,
    );
  }
}
