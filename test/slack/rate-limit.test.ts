import { afterAll, describe, expect, it } from "vitest";
import { slackKeys } from "../../src/runs/index.js";
import { createRedisRateLimiter } from "../../src/slack/index.js";
import { connect, deletePrefix, keysMatching, requireRedis, uniquePrefix } from "../support/redis.js";

const redis = connect();
const prefix = uniquePrefix("slack-rl");
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

describe("Redis-backed Slack method budgets", () => {
  it("shares one budget per workspace between processes and keeps workspaces apart", async () => {
    await requireRedis(redis);
    const budgets = { "assistant.threads.setStatus": { limit: 3, windowMs: 60_000, bestEffort: true } };
    const gateway = createRedisRateLimiter({ redis, keyPrefix: slackKeys(prefix).rateLimit, budgets });
    const worker = createRedisRateLimiter({ redis, keyPrefix: slackKeys(prefix).rateLimit, budgets });
    const method = "assistant.threads.setStatus";
    expect(await gateway.acquire(method, "T1")).toBe(true);
    expect(await worker.acquire(method, "T1")).toBe(true);
    expect(await worker.acquire(method, "T1")).toBe(true);
    expect(await gateway.acquire(method, "T1")).toBe(false);
    expect(await worker.acquire(method, "T2")).toBe(true);
    expect(await worker.acquire("some.unbudgeted", "T1")).toBe(true);
  });

  it("makes waiting callers queue in order until the window allows them", async () => {
    const limiter = createRedisRateLimiter({
      redis,
      keyPrefix: slackKeys(prefix).rateLimit,
      budgets: { "chat.update": { limit: 2, windowMs: 1000 } },
    });
    const order: number[] = [];
    await Promise.all(
      [0, 1, 2, 3].map((index) => limiter.acquire("chat.update", "T9").then(() => order.push(index))),
    );
    expect(order).toEqual([0, 1, 2, 3]);
    // The last two waited for a new window: it holds exactly them (without waiting it would hold all four).
    const [counter] = await keysMatching(redis, `${prefix}:slack-rl:chat.update*`);
    expect(await redis.get(counter!)).toBe("2");
  });

  it("counts posting budgets per channel", async () => {
    const limiter = createRedisRateLimiter({
      redis,
      keyPrefix: slackKeys(prefix).rateLimit,
      budgets: { "chat.postMessage": { limit: 1, windowMs: 60_000, perChannel: true, bestEffort: true } },
    });
    expect(await limiter.acquire("chat.postMessage", "T1", "C1")).toBe(true);
    expect(await limiter.acquire("chat.postMessage", "T1", "C2")).toBe(true);
    expect(await limiter.acquire("chat.postMessage", "T1", "C1")).toBe(false);
  });
});
