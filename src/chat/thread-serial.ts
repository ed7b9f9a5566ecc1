import { threadId } from "./thread-ref.js";
import type { ThreadRef } from "./types.js";

/** Options of {@link ThreadSerial}. */
export interface ThreadSerialOptions {
  /**
   * How long one task may hold its thread before the next task of that thread starts anyway, ms: a lookup
   * that never returns must not silence the thread. Longer than the gateway's intake retries, so order
   * holds through a Redis outage. Default 60,000.
   */
  holdMs?: number;
  /** Told when a task held its thread for `holdMs` and the next one was let through. Must not throw. */
  onHeld?: (thread: ThreadRef) => void;
}

const DEFAULT_HOLD_MS = 60_000;

/**
 * Keeps the order of a platform's events per thread (no message overtakes another; docs/architecture.md
 * §4): an adapter hands each event's whole handling (lookups, history, the gateway call and its retries)
 * to `run` as the event arrives, and the tasks of one thread run one after another in arrival order while
 * other threads proceed concurrently. A failing task does not stop the ones queued after it. Memory is
 * bounded by the tasks queued now: a thread's entry is removed as soon as its last task settles.
 */
export class ThreadSerial {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly holdMs: number;

  constructor(private readonly options: ThreadSerialOptions = {}) {
    this.holdMs = options.holdMs ?? DEFAULT_HOLD_MS;
  }

  /** Queues `task` behind the earlier tasks of `thread`; resolves or rejects as `task` does. */
  run<T>(thread: ThreadRef, task: () => Promise<T>): Promise<T> {
    const key = threadId(thread);
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = previous.then(() => this.released(thread, result));
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Threads with queued or running tasks. */
  get size(): number {
    return this.tails.size;
  }

  /** Settles when `result` settles, or after `holdMs` at the latest; never rejects. */
  private released(thread: ThreadRef, result: Promise<unknown>): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.options.onHeld?.(thread);
        resolve();
      }, this.holdMs);
      timer.unref();
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      result.then(done, done);
    });
  }
}
