import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";

/** The Redis every Redis test uses. Tests fail (never skip) when it does not answer. */
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A connection for ordinary commands; fails fast instead of queueing forever when Redis is down. */
export function connect(options: { blocking?: boolean } = {}): Redis {
  return new Redis(REDIS_URL, {
    maxRetriesPerRequest: options.blocking ? null : 3,
    lazyConnect: false,
    enableOfflineQueue: true,
  });
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
      `Redis tests need a Redis at ${REDIS_URL} (set REDIS_URL, or run .ci/run which starts one): ${(err as Error).message}`,
    );
  }
}

/** A key prefix no other test uses. */
export function uniquePrefix(name: string): string {
  return `tltest-${name}-${randomUUID().slice(0, 8)}`;
}

/** Deletes every key under `prefix` (per-thread keys and BullMQ's). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [`${prefix}:*`, `{${prefix}:bull}:*`]) {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  }
}
