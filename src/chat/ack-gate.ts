/** Options of {@link AckGate}. */
export interface AckGateOptions {
  /**
   * The longest an event's handling is held for acknowledgements, ms: a reaction that waits for its
   * platform budget, or a slow platform, must not hold the intake. Default {@link DEFAULT_ACK_HOLD_MS}.
   */
  maxHoldMs?: number;
}

/** Default {@link AckGateOptions.maxHoldMs}. */
export const DEFAULT_ACK_HOLD_MS = 250;

interface Waiter {
  /** The last acknowledgement tracked when the waiter came; it passes once that one and all before are sent. */
  upTo: number;
  release: () => void;
  timer: NodeJS.Timeout;
}

/**
 * Lets a gateway's acknowledgements (a mention's 👀) leave before the intake work of the events that
 * arrived with them. A platform delivers a burst of mentions in one read; handled as they come, every
 * mention's lookups, intake script and job add run interleaved on the one event loop, and each
 * acknowledgement's two round trips (its budget check in Redis, its request to the platform) wait behind
 * all of that work at each step (issue 17: 50 mentions, 👀 after 260–900 ms). An adapter {@link track}s each
 * acknowledgement as it asks for it, on arrival, and runs each event's handling after {@link hold}: at once
 * when no acknowledgement is on its way, else once those pending at the time are sent (or after
 * `maxHoldMs`). Held events are let go in arrival order.
 */
export class AckGate {
  private readonly maxHoldMs: number;
  /** Numbers the acknowledgements tracked so far. */
  private tracked = 0;
  /** The acknowledgements not sent yet, by number, in the order they were tracked. */
  private readonly unsent = new Set<number>();
  private readonly waiters: Waiter[] = [];

  constructor(options: AckGateOptions = {}) {
    this.maxHoldMs = options.maxHoldMs ?? DEFAULT_ACK_HOLD_MS;
  }

  /** Acknowledgements not yet sent. */
  get pending(): number {
    return this.unsent.size;
  }

  /**
   * Counts `sending` as on its way until it settles (the acknowledgement's budget check and request), or
   * for `maxHoldMs` at most: one stuck behind a used-up budget holds only the events of that moment.
   */
  track(sending: Promise<unknown>): void {
    const id = ++this.tracked;
    this.unsent.add(id);
    const done = () => {
      clearTimeout(expiry);
      if (!this.unsent.delete(id)) return;
      this.releaseReady();
    };
    const expiry = setTimeout(done, this.maxHoldMs);
    expiry.unref();
    sending.then(done, done);
  }

  /**
   * `undefined` when no acknowledgement is on its way (handle the event now); else a promise that resolves
   * once the acknowledgements tracked before this call are sent, or after `maxHoldMs`, and never before an
   * earlier hold's. Never rejects.
   */
  hold(): Promise<void> | undefined {
    if (this.unsent.size === 0 && this.waiters.length === 0) return undefined;
    return new Promise<void>((resolve) => {
      const waiter: Waiter = {
        upTo: this.tracked,
        release: resolve,
        timer: setTimeout(() => this.releaseUpTo(waiter), this.maxHoldMs),
      };
      waiter.timer.unref();
      this.waiters.push(waiter);
    });
  }

  /** Lets go the waiters at the head whose acknowledgements are all sent. */
  private releaseReady(): void {
    const oldest = this.unsent.values().next();
    const sentUpTo = oldest.done ? this.tracked : oldest.value - 1;
    while (this.waiters.length > 0 && this.waiters[0]!.upTo <= sentUpTo) this.releaseHead();
  }

  /** `waiter`'s time is up: it goes, and every waiter before it (arrival order). */
  private releaseUpTo(waiter: Waiter): void {
    if (!this.waiters.includes(waiter)) return;
    while (this.waiters[0] !== waiter) this.releaseHead();
    this.releaseHead();
    this.releaseReady();
  }

  private releaseHead(): void {
    const waiter = this.waiters.shift()!;
    clearTimeout(waiter.timer);
    waiter.release();
  }
}
