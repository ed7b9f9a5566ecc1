/**
 * Time as the renderer sees it. Injectable so throttling is testable without real waiting; the default
 * is the system clock and timers.
 */
export interface RenderClock {
  /** Milliseconds since some fixed origin; never decreases. */
  now(): number;
  /** Runs `callback` once after `ms` milliseconds; returns a handle for {@link RenderClock.clearTimeout}. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancels a pending callback; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: unknown): void;
}

/** `Date.now` and the global timers (so `vi.useFakeTimers()` controls it too). */
export const systemClock: RenderClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
