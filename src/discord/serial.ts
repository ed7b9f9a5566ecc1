/**
 * Runs tasks one after another per key and concurrently across keys: events of one thread are handled in
 * the order they arrived (a reply never overtakes the mention that engages the thread), other threads are
 * not held up. A failing task does not stop the ones queued after it.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  /** Queues `task` behind the earlier tasks of `key`; resolves or rejects with it. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with queued or running tasks. */
  get size(): number {
    return this.tails.size;
  }
}
