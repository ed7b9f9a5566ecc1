/**
 * Promise helpers for tests that order events themselves instead of waiting on timers: a {@link deferred}
 * the test settles, a {@link gate} it opens, and {@link until} for state another process or connection
 * changes.
 */

/** A promise the test settles itself, so ordering never depends on timers. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A promise the test resolves later by opening the gate. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  const { promise, resolve } = deferred<T>();
  return { promise, open: resolve };
}

/**
 * Resolves once `condition` holds, checking every `intervalMs` (default 25). It has no timeout of its own:
 * the test's timeout ends a wait for something that never happens.
 */
export async function until(condition: () => boolean | Promise<boolean>, intervalMs = 25): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
