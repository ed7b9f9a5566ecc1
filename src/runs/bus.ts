import { type Cluster, Redis, type RedisOptions } from "ioredis";
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
 *
 * On a Redis Cluster the subscriber is a plain connection to one of the cluster's nodes (a cluster
 * delivers PUBLISH to subscribers on every node), not the Cluster client's own subscriber: that one
 * replaces a dropped connection silently, so nobody would read back what was published meanwhile. Ours
 * reconnects to its node a few times, then moves to another node; every time it is subscribed again the
 * reconnect handlers run.
 */
export class EventBus {
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private subscriber: RedisClient;
  private ready: Promise<unknown> | undefined;
  private closed = false;
  /** The node the cluster subscriber uses now (an index into the cluster's nodes, rotating). */
  private nodeIndex = 0;
  private readonly connectionName: string;

  constructor(
    private readonly redis: RedisClient,
    readonly channel: string,
  ) {
    // Named, so operators (and tests) can tell the bus's subscriber apart in CLIENT LIST.
    this.connectionName = `${channel}:bus`;
    this.subscriber =
      redis instanceof Redis
        ? this.watch(redis.duplicate({ connectionName: this.connectionName }), false)
        : this.nodeSubscriber(false);
  }

  /**
   * Dispatches the subscriber's messages and reads back after each reconnect — and after its first connect
   * when it replaces another subscriber (`replacement`).
   */
  private watch(subscriber: RedisClient, replacement: boolean): RedisClient {
    subscriber.on("message", (_channel: string, payload: string) => this.dispatch(payload));
    // ioredis resubscribes by itself after a reconnect; what was published in between is gone.
    let connectedOnce = replacement;
    subscriber.on("ready", () => {
      if (!connectedOnce) {
        connectedOnce = true;
        return;
      }
      if (this.ready) this.resubscribed(subscriber);
    });
    return subscriber;
  }

  /**
   * Waits for the subscription to be active again (the reply follows ioredis's own resubscribe on the same
   * connection), so what waiters read next cannot miss an event published after it; then tells them.
   */
  private resubscribed(subscriber: RedisClient): void {
    subscriber.subscribe(this.channel).then(
      () => {
        if (this.closed || subscriber !== this.subscriber) return;
        for (const handler of [...this.reconnectHandlers]) handler();
      },
      () => {},
    );
  }

  /**
   * The cluster's subscriber: a connection to one node, retried there {@link NODE_RECONNECTS} times, then
   * replaced by one to the next node the cluster client knows (or a seed node, before it knows any).
   */
  private nodeSubscriber(replacement: boolean): RedisClient {
    const cluster = this.redis as unknown as Cluster;
    const known = cluster.nodes("all").map((node) => node.options);
    const nodes: RedisOptions[] = known.length > 0 ? known : seedNodes(cluster);
    const node = nodes[this.nodeIndex++ % nodes.length] ?? {};
    const common = (cluster.options.redisOptions ?? {}) as RedisOptions;
    const options: RedisOptions = {
      connectionName: this.connectionName,
      enableReadyCheck: true,
      retryStrategy: (attempt) => (attempt > NODE_RECONNECTS ? null : Math.min(100 * attempt, 1000)),
    };
    const username = node.username ?? common.username;
    const password = node.password ?? common.password;
    const tls = node.tls ?? common.tls;
    if (node.host !== undefined) options.host = node.host;
    if (node.port !== undefined) options.port = node.port;
    if (username !== undefined) options.username = username;
    if (password !== undefined) options.password = password;
    if (tls !== undefined) options.tls = tls;
    const subscriber = new Redis(options);
    subscriber.on("error", () => {}); // reconnects (or moves on) by itself; commands report their own errors
    this.watch(subscriber, replacement);
    subscriber.once("end", () => {
      // The node stays unreachable: subscribe on another one (and read back what may have been missed).
      if (!this.closed && subscriber === this.subscriber) this.subscriber = this.nodeSubscriber(true);
    });
    return subscriber;
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
    this.ready ??= this.subscribeCurrent();
    return this.ready;
  }

  /** Subscribes the current subscriber; when it is replaced meanwhile (its node unreachable), the next. */
  private async subscribeCurrent(): Promise<unknown> {
    for (;;) {
      const subscriber = this.subscriber;
      try {
        return await subscriber.subscribe(this.channel);
      } catch (err) {
        if (this.closed || subscriber === this.subscriber) throw err;
      }
    }
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
    this.closed = true;
    this.handlers.clear();
    this.reconnectHandlers.clear();
    this.subscriber.disconnect();
  }
}

/** Reconnect attempts to one cluster node before the bus's subscriber moves to another node. */
const NODE_RECONNECTS = 3;

/** The cluster client's seed nodes, before it has connected to any. */
function seedNodes(cluster: Cluster): RedisOptions[] {
  const seeds = (cluster as unknown as { startupNodes?: unknown[] }).startupNodes ?? [];
  return seeds.map((seed) => {
    if (typeof seed === "number") return { port: seed };
    if (typeof seed === "string") {
      const url = new URL(seed.includes("://") ? seed : `redis://${seed}`);
      return { host: url.hostname, port: Number(url.port || 6379) };
    }
    return seed as RedisOptions;
  });
}
