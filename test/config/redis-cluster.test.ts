import { describe, expect, it } from "vitest";
import { describeRedisTarget, redisTarget } from "../../src/app/redis.js";
import { ConfigError, parseEnv } from "../../src/config/index.js";

function problems(env: Record<string, string>): string[] {
  try {
    parseEnv(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("REDIS_CLUSTER_NODES", () => {
  it("takes host:port seeds, and credentials and TLS from a URL item for every node", () => {
    expect(
      parseEnv({ REDIS_CLUSTER_NODES: " 10.0.0.1:7000, 10.0.0.2 ,[::1]:7002" }).REDIS_CLUSTER_NODES,
    ).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 6379 },
        { host: "::1", port: 7002 },
      ],
      tls: false,
    });
    const env = parseEnv({
      REDIS_CLUSTER_NODES: "rediss://default:p%40ss@node-1.example.com:6380,node-2.example.com:6380",
    });
    expect(env.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: "node-1.example.com", port: 6380 },
        { host: "node-2.example.com", port: 6380 },
      ],
      username: "default",
      password: "p@ss",
      tls: true,
    });
    expect(redisTarget(env)).toEqual({ kind: "cluster", seeds: env.REDIS_CLUSTER_NODES });
    expect(describeRedisTarget(redisTarget(env))).toBe(
      "cluster node-1.example.com:6380,node-2.example.com:6380 (TLS)",
    );
    expect(redisTarget(parseEnv({}))).toEqual({ kind: "single", url: "redis://127.0.0.1:6379" });
    expect(parseEnv({ REDIS_CLUSTER_NODES: "" }).REDIS_CLUSTER_NODES).toBeUndefined();
  });

  it("says what is wrong, never echoing a password", () => {
    expect(problems({ REDIS_CLUSTER_NODES: "10.0.0.1:notaport" })).toEqual([
      "REDIS_CLUSTER_NODES must be host:port items or redis:// URLs separated by commas, for example 10.0.0.1:6379,10.0.0.2:6379 or rediss://default:secret@node-1.example.com:6379",
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: "http://10.0.0.1:7000" })).toEqual([
      "REDIS_CLUSTER_NODES must use redis:// or rediss:// (TLS) URLs, for example 10.0.0.1:6379,10.0.0.2:6379 or rediss://default:secret@node-1.example.com:6379",
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: "redis://10.0.0.1:7000/2" })).toEqual([
      "REDIS_CLUSTER_NODES must not select a database: a Redis Cluster has only database 0",
    ]);
    const disagreeing = problems({ REDIS_CLUSTER_NODES: "redis://:hunter2@a:7000,rediss://:hunter2@b:7000" });
    expect(disagreeing).toEqual([
      "REDIS_CLUSTER_NODES has URLs with different schemes or credentials: a cluster has one password and one TLS setting (give them once; host:port items inherit them)",
    ]);
    expect(disagreeing.join("")).not.toContain("hunter2");
    expect(problems({ REDIS_URL: "redis://127.0.0.1:6379", REDIS_CLUSTER_NODES: "10.0.0.1:7000" })).toEqual([
      "REDIS_URL and REDIS_CLUSTER_NODES are both set: set REDIS_URL for one Redis, or REDIS_CLUSTER_NODES for a Redis Cluster",
    ]);
  });
});
