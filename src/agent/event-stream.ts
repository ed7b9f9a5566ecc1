import type { AssistantMessage, AssistantMessageEvent } from "./types.js";

/** Options of an {@link EventStream}. */
export interface EventStreamOptions<T, R> {
  /** True for the event that completes the stream (it is still delivered to iterators). */
  isComplete?: (event: T) => boolean;
  /** The stream's result, taken from the completing event. */
  extractResult?: (event: T) => R;
}

/**
 * An async-iterable push queue. Producers `push` without waiting for consumers (no back-pressure);
 * events pushed after the stream completed are dropped. `result()` resolves with the final value once the
 * completing event was pushed or `end(result)` was called. Iterate it at most once.
 */
export class EventStream<T, R = void> implements AsyncIterable<T> {
  private readonly queue: T[] = [];
  private head = 0;
  private waiting: ((next: IteratorResult<T>) => void) | undefined;
  private done = false;
  private readonly finalResult: Promise<R>;
  private resolveResult!: (value: R) => void;
  private readonly isComplete: ((event: T) => boolean) | undefined;
  private readonly extractResult: ((event: T) => R) | undefined;

  constructor(options: EventStreamOptions<T, R> = {}) {
    this.isComplete = options.isComplete;
    this.extractResult = options.extractResult;
    this.finalResult = new Promise<R>((resolve) => {
      this.resolveResult = resolve;
    });
  }

  /** Queues an event (or hands it to a waiting iterator). A completing event also ends the stream. */
  push(event: T): void {
    if (this.done) return;
    const completes = this.isComplete?.(event) ?? false;
    if (completes) {
      this.done = true;
      if (this.extractResult) this.resolveResult(this.extractResult(event));
    }
    const waiter = this.waiting;
    if (waiter) {
      this.waiting = undefined;
      waiter({ value: event, done: false });
    } else {
      this.queue.push(event);
    }
    if (completes) this.wakeAtEnd();
  }

  /** Ends the stream; `result` (when given) resolves `result()` unless a completing event already did. */
  end(...result: [R] | []): void {
    if (!this.done) {
      this.done = true;
      if (result.length > 0) this.resolveResult(result[0] as R);
    }
    this.wakeAtEnd();
  }

  /** The final value. Never resolves if the stream ended without one. */
  result(): Promise<R> {
    return this.finalResult;
  }

  private wakeAtEnd(): void {
    const waiter = this.waiting;
    if (waiter && this.head >= this.queue.length) {
      this.waiting = undefined;
      waiter({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: (): Promise<IteratorResult<T>> => {
        if (this.head < this.queue.length) {
          const value = this.queue[this.head] as T;
          this.queue[this.head] = undefined as T;
          this.head++;
          if (this.head > 1024 && this.head * 2 > this.queue.length) {
            this.queue.splice(0, this.head);
            this.head = 0;
          }
          return Promise.resolve({ value, done: false });
        }
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiting = resolve;
        });
      },
      return: (): Promise<IteratorResult<T>> => {
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/** A stream of provider events that completes at `done`/`error` with the final assistant message. */
export function createAssistantMessageEventStream(): EventStream<AssistantMessageEvent, AssistantMessage> {
  return new EventStream({
    isComplete: (event) => event.type === "done" || event.type === "error",
    extractResult: (event) => {
      if (event.type === "done") return event.message;
      if (event.type === "error") return event.error;
      throw new Error(`not a final event: ${event.type}`);
    },
  });
}
