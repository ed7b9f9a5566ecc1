import type { Cluster, Redis } from "ioredis";

/**
 * A connection to Threadline's Redis: one server (ioredis `Redis`) or a Redis Cluster (ioredis `Cluster`).
 * Everything in src/runs accepts either: a multi-key script or transaction touches only one thread's keys,
 * which share the hash tag `{<thread id>}` and so one cluster slot.
 */
export type RedisClient = Redis | Cluster;
