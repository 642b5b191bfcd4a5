/**
 * Worst-case inputs for text rules, and a check that a rule is linear: it must finish ~1 MB of its worst
 * case inside a generous fixed bound (a super-linear rule takes minutes on the same input).
 */

import { assertTrue } from "./assert.ts";

/** About one megabyte of `unit` repeated (whole units only). */
export function mb(unit: string, size = 1 << 20): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

/** Generous bound for one rule on 1 MB of its worst case; the quadratic rules took minutes. */
export const LINEAR_BOUND_MS = 1500;

/** Runs `fn(input)` for every named worst case and asserts each finished within `bound` ms. */
export function assertLinear(
  rule: string,
  fn: (text: string) => unknown,
  cases: Record<string, string>,
  bound = LINEAR_BOUND_MS,
): void {
  for (const [name, input] of Object.entries(cases)) {
    const start = performance.now();
    fn(input);
    const ms = performance.now() - start;
    assertTrue(ms < bound, `${rule}, ${name} (${input.length} chars): ${ms.toFixed(0)} ms ≥ ${bound} ms`);
  }
}
