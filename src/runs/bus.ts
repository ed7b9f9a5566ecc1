import type { Redis } from "ioredis";
import type { ChatUser } from "../chat/index.js";
import { eventsChannel } from "./keys.js";

/** Messages on the events channel. */
export type BusEvent =
  | { type: "abort"; runId: string; by?: ChatUser | null }
  | {
      type: "approval";
      approvalId: string;
      threadId: string;
      status: "approved" | "denied" | "always" | "expired";
      by?: ChatUser;
      at?: number;
    };

type Handler = (event: BusEvent) => void;

/**
 * One subscriber connection per process, dispatching abort and approval events to whoever waits for
 * them by run id or approval id. Cheap per waiter: a map entry.
 */
export class EventBus {
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly subscriber: Redis;
  private ready: Promise<unknown> | undefined;

  constructor(
    redis: Redis,
    readonly channel: string,
  ) {
    this.subscriber = redis.duplicate();
    this.subscriber.on("message", (_channel: string, payload: string) => this.dispatch(payload));
  }

  /** Creates a bus on the events channel of `prefix`. */
  static forPrefix(redis: Redis, prefix: string): EventBus {
    return new EventBus(redis, eventsChannel(prefix));
  }

  /** Resolves once the subscription is active; events published before that are not seen. */
  start(): Promise<unknown> {
    this.ready ??= this.subscriber.subscribe(this.channel);
    return this.ready;
  }

  /** Calls `handler` for events keyed by `key` (a run id or approval id). Returns an unsubscribe function. */
  on(key: string, handler: Handler): () => void {
    let set = this.handlers.get(key);
    if (!set) {
      set = new Set();
      this.handlers.set(key, set);
    }
    set.add(handler);
    return () => {
      set.delete(handler);
      if (set.size === 0) this.handlers.delete(key);
    };
  }

  private dispatch(payload: string): void {
    let event: BusEvent;
    try {
      event = JSON.parse(payload) as BusEvent;
    } catch {
      return;
    }
    const key = event.type === "abort" ? event.runId : event.approvalId;
    for (const handler of this.handlers.get(key) ?? []) handler(event);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.subscriber.disconnect();
  }
}
