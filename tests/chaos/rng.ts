/** A seeded PRNG (mulberry32): a chaos schedule is reproducible from its seed. */
export class Rng {
  private state: number;
  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    let t = this.state = (this.state + 0x6d2b79f5) >>> 0;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [min, max]. */
  int = (min: number, max: number) => min + Math.floor(this.next() * (max - min + 1));
  chance = (p: number) => this.next() < p;
  pick = <T>(items: readonly T[]): T => items[Math.floor(this.next() * items.length)];
}
