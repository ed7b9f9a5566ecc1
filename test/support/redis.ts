import { randomUUID } from "node:crypto";
import { Cluster, Redis } from "ioredis";

/**
 * The Redis Cluster every Redis test uses instead of one server, when `REDIS_CLUSTER_NODES` is set
 * (`host:port,…`; `.ci/run` starts a three-node cluster and runs the Redis-backed suites a second time with
 * it). Unset: one server at {@link REDIS_URL}.
 */
export const REDIS_CLUSTER_NODES = process.env.REDIS_CLUSTER_NODES?.trim() || undefined;

/** The Redis every Redis test uses. Tests fail (never skip) when it does not answer. */
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** Where the suites' Redis is, for messages. */
export const REDIS_TARGET = REDIS_CLUSTER_NODES ? `the Redis Cluster at ${REDIS_CLUSTER_NODES}` : REDIS_URL;

/**
 * The environment a child process (a `threadline` gateway or worker, a fixture) needs to reach the suites'
 * Redis: `REDIS_URL` for one server, `REDIS_CLUSTER_NODES` for the cluster (never both: the product refuses
 * that, and `.ci/run` unsets `REDIS_URL` for the cluster pass).
 */
export function redisEnv(): Record<string, string> {
  return REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES } : { REDIS_URL };
}

function clusterNodes(): { host: string; port: number }[] {
  return REDIS_CLUSTER_NODES!.split(",").map((item) => {
    const [host, port] = item.trim().split(":");
    return { host: host!, port: Number(port) };
  });
}

/**
 * A connection for ordinary commands; fails fast instead of queueing forever when Redis is down. Typed as
 * `Redis` so tests call commands directly; on the cluster it is an ioredis `Cluster`, which routes each
 * command (and each script, by its keys' hash tag) to the node that owns the slot. Auto-pipelined as the
 * product's `commandConnection`; `blocking` (BullMQ's) is not, as the product's `blockingConnection`.
 */
export function connect(options: { blocking?: boolean } = {}): Redis {
  const maxRetriesPerRequest = options.blocking ? null : 3;
  const enableAutoPipelining = !options.blocking;
  if (REDIS_CLUSTER_NODES) {
    return new Cluster(clusterNodes(), {
      scaleReads: "master",
      enableOfflineQueue: true,
      enableAutoPipelining,
      redisOptions: { maxRetriesPerRequest },
    }) as unknown as Redis;
  }
  return new Redis(REDIS_URL, {
    maxRetriesPerRequest,
    lazyConnect: false,
    enableOfflineQueue: true,
    enableAutoPipelining,
  });
}

/** Whether `redis` is a cluster client (a test that needs one server's commands, like CLIENT KILL, asks). */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown) instanceof Cluster;
}

/** Pings Redis and throws a clear error when it is unreachable. */
export async function requireRedis(redis: Redis): Promise<void> {
  try {
    const reply = await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), 3000)),
    ]);
    if (reply !== "PONG") throw new Error(`unexpected reply ${String(reply)}`);
  } catch (err) {
    throw new Error(
      `Redis tests need ${REDIS_TARGET} (set REDIS_URL, or run .ci/run which starts one): ${(err as Error).message}`,
    );
  }
}

/** A key prefix no other test uses. */
export function uniquePrefix(name: string): string {
  return `tltest-${name}-${randomUUID().slice(0, 8)}`;
}

/**
 * The servers behind `redis`: itself for one server, a connection to each primary of a cluster. For the
 * commands that concern one server (SCAN, CLIENT LIST / KILL).
 */
export function serversOf(redis: Redis): Redis[] {
  return isCluster(redis) ? (redis as unknown as Cluster).nodes("master") : [redis];
}

/** Every key matching `pattern`, from every primary of a cluster (SCAN, never KEYS). */
export async function keysMatching(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const server of serversOf(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await server.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== "0");
  }
  return found;
}

/** Deletes every key under `prefix` (per-thread keys and BullMQ's), on every primary of a cluster. */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  for (const server of serversOf(redis)) {
    for (const pattern of [`${prefix}:*`, `{${prefix}:*`]) {
      const keys = await keysMatching(server, pattern);
      // One key per DEL: on a cluster, the keys of one command must share a slot.
      if (keys.length > 0) await keys.reduce((batch, key) => batch.del(key), server.pipeline()).exec();
    }
  }
}
