import { Cluster, type Redis } from "ioredis";
import type { RedisClusterSeeds } from "../config/index.js";
import type { DoctorCheck } from "./doctor.js";
import { describeRedisTarget } from "./redis.js";

const TIMEOUT_MS = 3000;

/** `promise`, or a rejection "no answer within N s" after `ms`; the timer is cleared either way. */
export function within<T>(promise: Promise<T>, ms = TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The doctor's check of `REDIS_CLUSTER_NODES`: the seeds answer, the cluster serves every slot
 * (`cluster_state:ok`) and how many primaries it has. Never throws; closes its connection.
 */
export async function checkRedisCluster(seeds: RedisClusterSeeds): Promise<DoctorCheck> {
  const where = describeRedisTarget({ kind: "cluster", seeds });
  const redisOptions: NonNullable<ConstructorParameters<typeof Cluster>[1]>["redisOptions"] = {
    maxRetriesPerRequest: 0,
    connectTimeout: TIMEOUT_MS,
  };
  if (seeds.username !== undefined) redisOptions.username = seeds.username;
  if (seeds.password !== undefined) redisOptions.password = seeds.password;
  if (seeds.tls) redisOptions.tls = {};
  const cluster = new Cluster(seeds.nodes, {
    lazyConnect: true,
    clusterRetryStrategy: () => null,
    enableOfflineQueue: false,
    redisOptions,
    ...(seeds.tls
      ? { dnsLookup: (address: string, callback: (err: null, a: string) => void) => callback(null, address) }
      : {}),
  });
  cluster.on("error", () => {});
  try {
    await within(cluster.connect());
    const info = String(await within(cluster.cluster("INFO")));
    const primaries = cluster.nodes("master").length;
    if (!info.includes("cluster_state:ok")) {
      return {
        name: "Redis",
        ok: false,
        detail: `${where} answers but is not serving every slot (cluster_state is not ok)`,
        fix: "Check the cluster with `redis-cli --cluster check <host:port>` and fix its slots or failed nodes.",
      };
    }
    return { name: "Redis", ok: true, detail: `${where} answers: ${primaries} primaries, every slot served` };
  } catch (err) {
    return {
      name: "Redis",
      ok: false,
      detail: `no answer from ${where}: ${err instanceof Error ? err.message : String(err)}`,
      fix: "Check REDIS_CLUSTER_NODES (some of the cluster's nodes as host:port; credentials and TLS as a rediss:// URL item).",
    };
  } finally {
    cluster.disconnect();
  }
}

/**
 * A failed check when the server at `REDIS_URL` (connected, answering) is a node of a Redis Cluster: a
 * single-node client gets `MOVED` for keys of other nodes, so the first message would fail. Else undefined.
 */
export async function clusterNodeAtUrl(redis: Redis, url: string): Promise<DoctorCheck | undefined> {
  const info = await within(redis.info("cluster")).catch(() => "");
  if (!/cluster_enabled:1/.test(info)) return undefined;
  const host = new URL(url).host;
  return {
    name: "Redis",
    ok: false,
    detail: `REDIS_URL points at ${host}, a node of a Redis Cluster: commands for keys on other nodes would fail with MOVED`,
    fix: `Set REDIS_CLUSTER_NODES=${host} (more nodes, comma-separated, if you like) instead of REDIS_URL.`,
  };
}
