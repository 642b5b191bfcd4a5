/**
 * Worst-case inputs for text rules, and a check that a rule is linear on its worst case (a super-linear rule
 * takes minutes on 1 MB of it).
 */

import { assertTrue } from "./assert.ts";

/** About one megabyte of `unit` repeated (whole units only). */
export function mb(unit: string, size = 1 << 20): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

/** Generous bound for one rule per MB of its worst case; the quadratic rules took minutes on 1 MB. */
export const LINEAR_BOUND_MS = 1500;

/**
 * Runs `fn(input)` for every named worst case and asserts each is linear: done within `bound` ms per MB of
 * input, or — on a machine slow or loaded enough to miss it — taking (the best of three runs) at most 8 times
 * as long as on a quarter of the input (a linear rule takes about 4 times, a quadratic one 16), so the
 * machine's speed does not decide.
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
    const limit = bound * input.length / (1 << 20);
    let ms = time(input);
    if (ms < limit) continue;
    // A pause of the loaded machine is no super-linear rule: the best of three runs of each.
    const best = (text: string) => Math.min(time(text), time(text), time(text));
    const quarter = best(input.slice(0, input.length >> 2));
    ms = Math.min(ms, best(input));
    assertTrue(
      ms < limit || ms < 8 * Math.max(quarter, 1),
      `${rule}, ${name} (${input.length} chars): ${ms.toFixed(0)} ms, a quarter of it ${
        quarter.toFixed(0)
      } ms`,
    );
  }
}
