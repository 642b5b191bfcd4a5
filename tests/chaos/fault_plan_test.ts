/** The fault plan of a chaos schedule: every kind drawn in any run of enough schedules, the same for a seed. */

import { assertEquals } from "../support/assert.ts";
import { FAULT_KINDS, faultPlan } from "./campaign.ts";
import { Rng } from "./rng.ts";

/** The kinds of the plan of `seed` with `stages` stages, as the campaign draws it (its Rng from the seed). */
const kindsOf = (seed: number, stages: number) =>
  faultPlan(new Rng(seed), seed, stages).flat().map((p) => p.kind);

Deno.test("chaos plan: any FAULT_KINDS consecutive seeds draw every fault kind, even with the fewest stages", () => {
  for (let base = 0; base < 2000; base += 13) {
    const kinds = new Set<number>();
    for (let seed = base; seed < base + FAULT_KINDS; seed++) kindsOf(seed, 4).forEach((k) => kinds.add(k));
    assertEquals([...kinds].sort((a, b) => a - b), [...Array(FAULT_KINDS).keys()], `seeds ${base}…`);
  }
});

Deno.test("chaos plan: a seed gives the same plan on every run", () => {
  for (const seed of [0, 7, 429516, 999_999]) {
    assertEquals(faultPlan(new Rng(seed), seed, 6), faultPlan(new Rng(seed), seed, 6));
  }
});
