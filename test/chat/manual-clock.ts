import type { RenderClock } from "../../src/chat/index.js";

/** A clock that only moves when the test says so; timers fire in due order during {@link advance}. */
export class ManualClock implements RenderClock {
  private time = 0;
  private nextHandle = 1;
  private readonly timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const handle = this.nextHandle++;
    this.timers.set(handle, { at: this.time + Math.max(0, ms), callback });
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Timers waiting to fire. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promise callbacks run between them. */
  async advance(ms: number): Promise<void> {
    const target = this.time + ms;
    for (;;) {
      await settle();
      const next = [...this.timers.entries()]
        .filter(([, timer]) => timer.at <= target)
        .sort(([a, x], [b, y]) => x.at - y.at || a - b)[0];
      if (next === undefined) break;
      const [handle, timer] = next;
      this.timers.delete(handle);
      this.time = timer.at;
      timer.callback();
    }
    this.time = target;
    await settle();
  }
}

/** Lets queued microtasks (promise callbacks) run; enough rounds for chained awaits. */
export async function settle(rounds = 20): Promise<void> {
  for (let round = 0; round < rounds; round++) await Promise.resolve();
}
