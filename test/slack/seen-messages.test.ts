import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ThreadRef } from "../../src/chat/index.js";
import { slackKeys } from "../../src/runs/index.js";
import { redisSeenMessages } from "../../src/slack/seen-messages.js";
import { connect, deletePrefix, keysMatching, requireRedis, uniquePrefix } from "../support/redis.js";

const prefix = uniquePrefix("seen");
let redis: Redis;
beforeAll(async () => {
  redis = connect();
  await requireRedis(redis);
});
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const thread = (ts: string): ThreadRef => ({ platform: "slack", workspace: "T1", channel: "C1", thread: ts });

describe("the Redis store of the messages the gateway saw", () => {
  it("keeps a thread's messages with edits and deletions applied, in ts order, and knows it saw the root", async () => {
    const seen = redisSeenMessages(redis, slackKeys(prefix));
    const t = thread("100.000100");
    await seen.record(t, "message", { ts: "100.000100", user: "U1", text: "root" }, { self: false });
    await seen.record(t, "message", { ts: "100.000300", user: "U2", text: "second" }, { self: false });
    await seen.record(t, "message", { ts: "100.000200", user: "U3", text: "frist" }, { self: false });
    await seen.record(t, "edited", { ts: "100.000200", user: "U3", text: "first" }, { self: false });
    await seen.record(t, "message", { ts: "100.000400", user: "U4", text: "oops" }, { self: false });
    await seen.record(t, "deleted", { ts: "100.000400" }, { self: false });
    const read = await seen.read(t);
    expect(read.messages.map((m) => m.text)).toEqual(["root", "first", "second"]);
    expect(read.complete).toBe(true);
    expect(read.tookPart).toBe(false);
    expect(await seen.threadOf("T1", "C1", "100.000300")).toBe("100.000100");
  });

  it("is bounded per thread, expires, and shares the thread's hash tag", async () => {
    const seen = redisSeenMessages(redis, slackKeys(prefix), {
      maxEntries: 5,
      ttlMs: 60_000,
      maxTextChars: 10,
    });
    const t = thread("200.000100");
    for (let i = 1; i <= 12; i++) {
      await seen.record(
        t,
        "message",
        { ts: `200.${String(100 + i).padStart(6, "0")}`, user: "U1", text: `message number ${i}` },
        { self: false },
      );
    }
    const read = await seen.read(t);
    expect(read.messages.map((m) => m.text)).toEqual([
      "message nu",
      "message nu",
      "message nu",
      "message nu",
      "message nu",
    ]);
    expect(read.messages.map((m) => m.ts)).toEqual([
      "200.000108",
      "200.000109",
      "200.000110",
      "200.000111",
      "200.000112",
    ]);
    // Not the root: the thread is not complete without Slack.
    expect(read.complete).toBe(false);
    const keys = await keysMatching(redis, `${prefix}:*200.000100*`);
    expect(keys.length).toBe(2);
    for (const key of keys) {
      expect(key).toContain("{slack:T1:C1:200.000100}");
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    expect(await redis.llen(keys.find((key) => key.endsWith(":slack-seen"))!)).toBe(5);
  });

  it("keeps fetched pages apart (they never push out what was seen) and goes on from a cursor", async () => {
    const seen = redisSeenMessages(redis, slackKeys(prefix), { maxEntries: 3 });
    const t = thread("300.000100");
    await seen.record(t, "message", { ts: "300.000900", user: "U9", text: "seen live" }, { self: true });
    await seen.addFetched(
      t,
      [1, 2, 3, 4].map((i) => ({ ts: `300.00010${i}`, user: "U1", text: `old ${i}` })),
      "next-page",
    );
    let read = await seen.read(t);
    expect(read.messages.map((m) => m.text)).toEqual(["old 2", "old 3", "old 4", "seen live"]);
    expect(read).toMatchObject({ complete: false, tookPart: true, cursor: "next-page" });
    await seen.addFetched(t, [], undefined);
    read = await seen.read(t);
    expect(read.complete).toBe(true);
    expect(read.cursor).toBeUndefined();
  });
});
