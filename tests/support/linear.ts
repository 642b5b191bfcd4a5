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
export const LINEAR_BOUND_MS = 1500;

/**
 * Runs `fn(input)` for every named worst case and asserts each is linear: done within `bound` ms, or — on a
 * machine slow or loaded enough to miss it — taking (the best of three runs) at most 8 times as long as on a
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
    // A pause of the loaded machine is no super-linear rule: the best of three runs of each, in turns.
    let quarter = Infinity;
    for (let i = 0; i < 3; i++) {
      quarter = Math.min(quarter, time(input.slice(0, input.length >> 2)));
      ms = Math.min(ms, time(input));
    }
    assertTrue(
      ms < bound || ms < 8 * Math.max(quarter, 1),
      `${rule}, ${name} (${input.length} chars): ${ms.toFixed(0)} ms, a quarter of it ${
        quarter.toFixed(0)
      } ms`,
    );
  }
}

/**
 * 65,536 prints of 6 characters (lib/redact.ts `secretPrint`), one per top of the first hash, counting lookups: to
 * redaction by prints every position is a hit, so `lookups` counts the positions it looked at.
 */
export class EveryTop extends Set<string> {
  lookups = 0;
  constructor() {
    super(Array.from({ length: 1 << 16 }, (_, i) => `6:${((i << 16) >>> 0).toString(36)}:0`));
  }
  override has(print: string): boolean {
    this.lookups++;
    return super.has(print);
  }
}
