/** A counting semaphore with a FIFO queue whose waiters can withdraw (a request cancelled before it started). */

/** A slot holder's release function. */
export type Release = () => void;

/** Bounds how many tasks run at once. */
export class Limiter {
  private active = 0;
  private readonly waiting: { grant: (release: Release) => void }[] = [];

  constructor(readonly max: number) {}

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Waits for a slot; resolves to its release, or to `undefined` if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<Release | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => {
      const waiter = {
        grant: (release: Release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(undefined);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.waiting.shift();
      if (next) next.grant(this.releaser());
      else this.active--;
    };
  }
}
