import type { ConnectionOptions as TlsOptions } from "node:tls";
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import type { Env, RedisClusterSeeds } from "../config/index.js";
import type { RedisClient } from "../runs/index.js";

export type { RedisClient } from "../runs/index.js";

/**
 * Where Threadline's Redis is: one server by URL (`REDIS_URL`), or a Redis Cluster by its seed nodes
 * (`REDIS_CLUSTER_NODES`). Every connection the product opens is made from one of these by
 * {@link commandConnection} or {@link blockingConnection}.
 */
export type RedisTarget = { kind: "single"; url: string } | { kind: "cluster"; seeds: RedisClusterSeeds };

/** The default when neither REDIS_URL nor REDIS_CLUSTER_NODES is set (and no private redis-server runs). */
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

/** The {@link RedisTarget} of the environment: the cluster when REDIS_CLUSTER_NODES is set, else REDIS_URL. */
export function redisTarget(env: Pick<Env, "REDIS_URL" | "REDIS_CLUSTER_NODES">): RedisTarget {
  if (env.REDIS_CLUSTER_NODES) return { kind: "cluster", seeds: env.REDIS_CLUSTER_NODES };
  return { kind: "single", url: env.REDIS_URL ?? DEFAULT_REDIS_URL };
}

/** Where `target` points, for logs and health output: a URL's host, or the cluster's seed nodes. No secrets. */
export function describeRedisTarget(target: RedisTarget): string {
  if (target.kind === "single") return new URL(target.url).host;
  const nodes = target.seeds.nodes.map((node) =>
    node.host.includes(":") ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`,
  );
  return `cluster ${nodes.join(",")}${target.seeds.tls ? " (TLS)" : ""}`;
}

/**
 * Reconnect at once, then back off to one attempt a second: a Redis restart or failover of a few seconds
 * costs a short wait, never a failed command.
 */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(100 * attempt, 1000);
}

/**
 * Reconnect attempts a queued command waits through before it fails: with {@link reconnectDelayMs}, about
 * 15 s of outage. Callers that must not give up (the gateway's intake) retry on top of it.
 */
export const COMMAND_RECONNECT_ATTEMPTS = 20;

const RIDE_OUT: RedisOptions = {
  retryStrategy: reconnectDelayMs,
  // Commands sent while disconnected wait in the offline queue and are sent, in order, on reconnect.
  enableOfflineQueue: true,
  // After a failover the old primary answers READONLY: reconnect (and resend) so writes reach the new one.
  reconnectOnError: (err) => (err.message.startsWith("READONLY") ? 2 : false),
};

/** How a connection is used: {@link commandConnection}'s ordinary commands or BullMQ's. */
interface ConnectionUse {
  maxRetriesPerRequest: number | null;
  /** ioredis auto-pipelining: the commands of one event-loop turn go out in one socket write. */
  autoPipelining: boolean;
}

/**
 * Ordinary commands. A command sent while Redis is unreachable waits (offline queue) and fails only after
 * about 15 s of reconnect attempts ({@link COMMAND_RECONNECT_ATTEMPTS}), so a restart is ridden out. A URL
 * is a single server ({@link RedisTarget} `single`). Never throws; connection errors surface on commands.
 *
 * Auto-pipelined (issue #17: one write syscall per command was a tenth of a busy worker's CPU): the
 * commands and scripts issued in one event-loop turn are queued until `setImmediate` and written together
 * (on a cluster, one batch per node). Ordering contract: plain commands and scripts keep their call order,
 * but a `multi()`/`pipeline()` batch and the commands ioredis never auto-pipelines (SUBSCRIBE, SCRIPT,
 * CLIENT, INFO, CLUSTER, SELECT, AUTH, QUIT) are written at once, ahead of plain commands still queued. So
 * code that issues a command without awaiting it must not follow it with one of those on the same
 * connection when it relies on the order. A `duplicate()` inherits the setting, which is harmless for a
 * subscriber (SUBSCRIBE and UNSUBSCRIBE are never auto-pipelined). BullMQ queues go on
 * {@link blockingConnection}, never on this one.
 */
export function commandConnection(target: RedisTarget | string): RedisClient {
  return connect(target, { maxRetriesPerRequest: COMMAND_RECONNECT_ATTEMPTS, autoPipelining: true });
}

/**
 * BullMQ's connections (BullMQ requires `maxRetriesPerRequest: null`: its commands wait for Redis however
 * long it is away), reconnecting as {@link commandConnection} does. On a cluster BullMQ needs its keys in
 * one slot, which the runs queue's prefix `{<prefix>:bull}` (one hash tag) gives it. Not auto-pipelined:
 * BullMQ's blocking commands and its own batches go out as BullMQ sends them.
 */
export function blockingConnection(target: RedisTarget | string): RedisClient {
  return connect(target, { maxRetriesPerRequest: null, autoPipelining: false });
}

function connect(target: RedisTarget | string, use: ConnectionUse): RedisClient {
  const resolved: RedisTarget = typeof target === "string" ? { kind: "single", url: target } : target;
  if (resolved.kind === "single") {
    return new Redis(resolved.url, {
      ...RIDE_OUT,
      maxRetriesPerRequest: use.maxRetriesPerRequest,
      enableAutoPipelining: use.autoPipelining,
    });
  }
  return new Cluster(resolved.seeds.nodes, clusterOptions(resolved.seeds, use));
}

/**
 * A cluster client that rides out what a single connection does: the whole cluster unreachable (the client
 * reconnects with {@link reconnectDelayMs}, commands wait in its offline queue), a node lost or failed over
 * (ioredis refreshes the slot map and follows MOVED / ASK / TRYAGAIN / CLUSTERDOWN with short retries).
 */
function clusterOptions(seeds: RedisClusterSeeds, use: ConnectionUse): ClusterOptions {
  const redisOptions: NonNullable<ClusterOptions["redisOptions"]> = {
    maxRetriesPerRequest: use.maxRetriesPerRequest,
  };
  if (seeds.username !== undefined) redisOptions.username = seeds.username;
  if (seeds.password !== undefined) redisOptions.password = seeds.password;
  const tls: TlsOptions | undefined = seeds.tls ? {} : undefined;
  if (tls) redisOptions.tls = tls;
  const options: ClusterOptions = {
    clusterRetryStrategy: reconnectDelayMs,
    enableOfflineQueue: true,
    // Reads from primaries only: a run reads its own writes (replicas lag).
    scaleReads: "master",
    // A cluster auto-pipelines per node: one batch for the commands of one turn whose slots it serves.
    enableAutoPipelining: use.autoPipelining,
    redisOptions,
  };
  // Managed clusters with TLS (e.g. AWS ElastiCache) announce host names their certificates are issued for:
  // connect by those names instead of resolving them to addresses first, so certificate checks pass.
  if (seeds.tls) options.dnsLookup = (address, callback) => callback(null, address);
  return options;
}
