import { Redis } from "ioredis";
import type { ChatUser } from "../chat/index.js";
import { eventsChannel } from "./keys.js";
import type { RedisClient } from "./redis-client.js";

/** Messages on the events channel. */
export type BusEvent =
  | { type: "abort"; runId: string; by?: ChatUser | null }
  /** A steer or interrupt was queued (or switched to) for the run: its loop yields to it now. */
  | { type: "inbox"; runId: string; disposition: "steer" | "interrupt"; by?: string }
  | {
      type: "approval";
      approvalId: string;
      threadId: string;
      runId?: string;
      status: "approved" | "denied" | "always" | "alwaysThread" | "expired";
      by?: ChatUser;
      at?: number;
    };

type Handler = (event: BusEvent) => void;

/** The key an approval event is dispatched by: its thread and id together (ids are only unique per thread). */
export function approvalEventKey(threadId: string, approvalId: string): string {
  return `approval\u0000${threadId}\u0000${approvalId}`;
}

/**
 * One subscriber connection per process, dispatching abort and approval events to whoever waits for
 * them by run id or by (thread, approval id). Cheap per waiter: a map entry. Pub/sub is only the fast
 * path: a message published while the subscriber reconnects is lost, so waiters also read the state in
 * Redis on {@link EventBus.onReconnect} (and on their own heartbeat).
 */
export class EventBus {
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private readonly subscriber: RedisClient;
  private ready: Promise<unknown> | undefined;
  private connectedOnce = false;

  constructor(
    redis: RedisClient,
    readonly channel: string,
  ) {
    // Named, so operators (and tests) can tell the bus's subscriber apart in CLIENT LIST. A Cluster client
    // takes node options under `redisOptions` (PUBLISH reaches subscribers on every node of a cluster).
    const connectionName = `${channel}:bus`;
    this.subscriber =
      redis instanceof Redis
        ? redis.duplicate({ connectionName })
        : redis.duplicate([], { redisOptions: { ...redis.options.redisOptions, connectionName } });
    this.subscriber.on("message", (_channel: string, payload: string) => this.dispatch(payload));
    // ioredis resubscribes by itself after a reconnect; what was published in between is gone.
    this.subscriber.on("ready", () => {
      if (!this.connectedOnce) {
        this.connectedOnce = true;
        return;
      }
      // Wait for the subscription to be active again (the reply follows ioredis's own resubscribe on the
      // same connection), so what waiters read next cannot miss an event published after it.
      this.subscriber.subscribe(this.channel).then(
        () => {
          for (const handler of [...this.reconnectHandlers]) handler();
        },
        () => {},
      );
    });
  }

  /** Calls `handler` after every reconnect of the subscriber (not the first connect). Returns an unsubscribe. */
  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => {
      this.reconnectHandlers.delete(handler);
    };
  }

  /** Creates a bus on the events channel of `prefix`. */
  static forPrefix(redis: RedisClient, prefix: string): EventBus {
    return new EventBus(redis, eventsChannel(prefix));
  }

  /** Resolves once the subscription is active; events published before that are not seen. */
  start(): Promise<unknown> {
    this.ready ??= this.subscriber.subscribe(this.channel);
    return this.ready;
  }

  /** Calls `handler` for events keyed by `key` (a run id or an {@link approvalEventKey}). Returns an unsubscribe function. */
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
    const key = event.type === "approval" ? approvalEventKey(event.threadId, event.approvalId) : event.runId;
    for (const handler of this.handlers.get(key) ?? []) handler(event);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.reconnectHandlers.clear();
    this.subscriber.disconnect();
  }
}
