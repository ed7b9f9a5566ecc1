import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockingConnection, commandConnection, type RedisClient, redisTarget } from "../../src/app/redis.js";
import { parseEnv } from "../../src/config/index.js";
import { threadKeys } from "../../src/runs/keys.js";
import { ReplyLog } from "../../src/runs/reply-log.js";
import { SILENT_LOGGER } from "../../src/runs/setup.js";
import { MemoryOutbound } from "../fakes/memory-outbound.js";
import { monitorRedis } from "../support/monitor.js";
import { connect, deletePrefix, redisEnv, requireRedis, serversOf, uniquePrefix } from "../support/redis.js";

/**
 * Issue #17: a command connection auto-pipelines (the commands of one event-loop turn leave in one socket
 * write, on a cluster one per node), BullMQ's connection does not, and what relies on one connection's
 * command order keeps it.
 */

const target = redisTarget(parseEnv(redisEnv()));
const prefix = uniquePrefix("pipelining");
const admin = connect();
const opened: RedisClient[] = [];

function open(make: typeof commandConnection): RedisClient {
  const client = make(target);
  opened.push(client);
  return client;
}

/** Counts the socket writes of `client` (every primary's socket on a cluster) from now on. */
async function countWrites(client: RedisClient): Promise<{ readonly count: number }> {
  await client.ping();
  const counter = { count: 0 };
  for (const server of serversOf(client as Redis)) {
    await server.ping();
    const stream = server.stream;
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((...args: unknown[]) => {
      counter.count++;
      return write(...args);
    }) as typeof stream.write;
  }
  return counter;
}

beforeAll(async () => {
  await requireRedis(admin);
});

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await deletePrefix(admin, prefix);
  admin.disconnect();
});

describe("commandConnection", () => {
  it("writes the commands issued in one event-loop turn in one socket write", async () => {
    const redis = open(commandConnection);
    const writes = await countWrites(redis);
    // One hash tag: one slot, so one node of a cluster.
    const key = (i: number) => `${prefix}:{batch}:${i}`;
    const sets = Array.from({ length: 20 }, (_, i) => redis.set(key(i), String(i)));
    const gets = Array.from({ length: 20 }, (_, i) => redis.get(key(i)));
    await Promise.all(sets);
    expect(await Promise.all(gets)).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    expect(writes.count).toBe(1);
  });

  it("applies a script issued without waiting before the commands and scripts issued after it", async () => {
    const redis = open(commandConnection);
    redis.defineCommand("tlTestAppend", {
      numberOfKeys: 1,
      lua: "return redis.call('RPUSH', KEYS[1], ARGV[1])",
    });
    const append = (key: string, value: string) =>
      (redis as unknown as Record<string, (key: string, value: string) => Promise<number>>).tlTestAppend!(
        key,
        value,
      );
    const key = `${prefix}:{order}:list`;
    // Fire-and-forget, as TranscriptSink.finishCall: the next write on the connection is what waits.
    void append(key, "done record");
    const seen = redis.lrange(key, 0, -1);
    const length = await append(key, "appended message");
    expect(await seen).toEqual(["done record"]);
    expect(length).toBe(2);
  });
});

describe("blockingConnection (BullMQ's)", () => {
  it("is not auto-pipelined: each command is written as it is issued", async () => {
    const redis = open(blockingConnection);
    const writes = await countWrites(redis);
    const key = (i: number) => `${prefix}:{bull}:${i}`;
    await Promise.all(Array.from({ length: 5 }, (_, i) => redis.set(key(i), String(i))));
    expect(writes.count).toBe(5);
  });
});

describe("ReplyLog on a command connection", () => {
  it("keeps a message whose running line came back right after it settled (writes applied in call order)", async () => {
    const redis = open(commandConnection);
    const key = threadKeys(prefix, "slack:T1:C1:1.1").replies("run-1");
    const log = new ReplyLog(redis, key, SILENT_LOGGER, {});
    const outbound = log.track(new MemoryOutbound());
    const thread = { platform: "slack", workspace: "T1", channel: "C1", thread: "1.1" } as const;
    // Three writes of one message in one event-loop turn: record, drop, record again.
    const posted = await outbound.post(thread, "🔧 search …");
    await outbound.edit(thread, posted.id, "🔧 search ✓");
    await outbound.edit(thread, posted.id, "🔧 search ✓\n🔧 fetch …");
    // Queued behind the log's writes on the same connection (same key, same slot): reads what they left.
    expect(await redis.hgetall(key)).toEqual({ [posted.id]: "🔧 search ✓\n🔧 fetch …" });
    expect(await redis.pttl(key)).toBeGreaterThan(0);
  });

  it("writes a record and its TTL in one command, so no crash between two leaves the key without one", async () => {
    const redis = open(commandConnection);
    const key = threadKeys(prefix, "slack:T1:C1:2.2").replies("run-2");
    const log = new ReplyLog(redis, key, SILENT_LOGGER, {});
    const outbound = log.track(new MemoryOutbound());
    const thread = { platform: "slack", workspace: "T1", channel: "C1", thread: "2.2" } as const;
    await outbound.post(thread, "🔧 warm …"); // loads the script, so the write below is one EVALSHA
    await redis.del(key);
    const monitor = await monitorRedis(admin);
    try {
      const posted = await outbound.post(thread, "🔧 search …");
      expect(await redis.hgetall(key)).toEqual({ [posted.id]: "🔧 search …" });
      await monitor.flush();
      const touching = monitor.sent.filter((args) => args.some((arg) => arg.endsWith(key)));
      expect(touching.map((args) => args[0]?.toLowerCase())).toEqual(["evalsha", "hgetall"]);
      expect(monitor.inScripts.map((args) => args[0]?.toLowerCase())).toEqual(["hset", "pexpire"]);
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    } finally {
      await monitor.stop();
    }
  });
});
