import { ExpiringMap } from "./expiring-map.js";

/** Options of {@link DeliveryDedupe}. */
export interface DeliveryDedupeOptions {
  /** Keys remembered at most (the oldest is forgotten first). Default 20,000. */
  maxEntries?: number;
  /** How long a handled key is remembered. Default 10 minutes (platform redeliveries come within that). */
  ttlMs?: number;
}

/**
 * Handles each delivery of an event once, in this process: the first delivery of a key runs its task, and
 * a second delivery while that task is in flight or after it succeeded (within `ttlMs`) gets the same
 * promise instead of running again. A task that rejects is forgotten, so the next delivery tries again.
 * Adapters use it for what a platform may deliver twice — Slack's retried events, Discord's replayed
 * events after a RESUME, the playground's double submissions — as the cheap first line before the
 * intake, which dedupes again by message id across processes.
 */
export class DeliveryDedupe {
  private readonly seen: ExpiringMap<Promise<unknown>>;

  constructor(options: DeliveryDedupeOptions = {}) {
    this.seen = new ExpiringMap(options.maxEntries ?? 20_000, options.ttlMs ?? 10 * 60 * 1000);
  }

  /** Runs `task` unless `key` was delivered already; resolves or rejects as the first delivery's task. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const running = this.seen.get(key);
    if (running) return running as Promise<T>;
    const handling = task();
    this.seen.set(key, handling);
    handling.catch(() => {
      if (this.seen.get(key) === handling) this.seen.delete(key);
    });
    return handling;
  }

  /** Whether `key` was delivered and is still remembered (in flight or succeeded). */
  has(key: string): boolean {
    return this.seen.get(key) !== undefined;
  }
}
