/**
 * Worst-case inputs for text rules, and a check that a rule is linear on ~1 MB of its worst case (a
 * super-linear rule takes minutes on the same input).
 */

import process from "node:process";
import { assertTrue } from "./assert.ts";

/** About one megabyte of `unit` repeated (whole units only). */
export function mb(unit: string, size = 1 << 20): string {
  return unit.repeat(Math.max(1, Math.floor(size / unit.length)));
}

/** Generous bound for one rule on 1 MB of its worst case; the quadratic rules took minutes. */
export const LINEAR_BOUND_MS = 1500;

/**
 * The process's CPU time in ms: unlike the clock, it stands still while a loaded machine runs other processes
 * (a 398 ms run whose quarter took 43 ms once failed a linear rule at load 10).
 */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** The most rounds of a quarter and the whole input {@link assertLinear} times before it calls a rule super-linear. */
const ROUNDS = 7;

/**
 * Runs `fn(input)` for every named worst case and asserts each is linear: done within `bound` ms of CPU time,
 * or — on a machine slow or loaded enough to miss it — taking (the best of 3 to {@link ROUNDS} runs, in turns
 * with a quarter of the input, until it passes) at most 8 times as long as on the quarter: a linear rule takes
 * about 4 times, a quadratic one 16 however many runs, so neither the machine's speed nor a pause decides.
 */
export function assertLinear(
  rule: string,
  fn: (text: string) => unknown,
  cases: Record<string, string>,
  bound = LINEAR_BOUND_MS,
): void {
  // Each run's process CPU time and clock time: CPU stands still while other processes run, the clock while
  // the process's other threads do (`--parallel` test files, a cold start's type-check); a ratio within 8 on
  // either, judged on the best of 3 rounds at least, is linear.
  const time = (text: string) => {
    const [cpu, clock] = [cpuMs(), performance.now()];
    fn(text);
    return [cpuMs() - cpu, performance.now() - clock];
  };
  for (const [name, input] of Object.entries(cases)) {
    let [ms, quarter, rounds] = [time(input), [Infinity, Infinity], 0];
    const within = (i: number) => ms[i] < 8 * Math.max(quarter[i], 1);
    const linear = () => ms[0] < bound || (rounds >= 3 && (within(0) || within(1)));
    for (; rounds < ROUNDS && !linear(); rounds++) {
      const [q, w] = [time(input.slice(0, input.length >> 2)), time(input)];
      [quarter, ms] = [quarter.map((t, i) => Math.min(t, q[i])), ms.map((t, i) => Math.min(t, w[i]))];
    }
    assertTrue(
      linear(),
      `${rule}, ${name} (${input.length} chars): ${
        ms.map((t) => t.toFixed(0)).join("/")
      } ms (CPU/clock), a quarter of it ${quarter.map((t) => t.toFixed(0)).join("/")} ms`,
    );
  }
}

/**
 * A prints set of `print` but for its second hash (a lib/redact.ts `secretPrint`), counting lookups: where the
 * printed text recurs, its length and first hash match but the print does not, so `lookups` counts how many of
 * its recurrences redaction looked at.
 */
export class NearPrint extends Set<string> {
  lookups = 0;
  constructor(print: string) {
    super([print.replace(/:[^:]*$/, print.endsWith(":1") ? ":2" : ":1")]);
  }
  override has(print: string): boolean {
    this.lookups++;
    return super.has(print);
  }
}
