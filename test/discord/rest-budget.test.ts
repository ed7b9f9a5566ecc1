import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisRestBudget, requestPriority } from "../../src/discord/index.js";
import { connect, deletePrefix, requireRedis, uniquePrefix } from "../support/redis.js";

const redis = connect();
const prefix = uniquePrefix("discord-budget");
beforeAll(() => requireRedis(redis));
afterAll(async () => {
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

/** Admissions per wall-clock second, by priority. */
function perSecond(admitted: { second: number; priority: string }[], priority: string): number[] {
  const counts = new Map<number, number>();
  for (const entry of admitted.filter((e) => e.priority === priority)) {
    counts.set(entry.second, (counts.get(entry.second) ?? 0) + 1);
  }
  return [...counts.values()];
}

describe("the Redis-shared Discord REST budget", () => {
  it("admits at most the budget (with its headroom) per second across every client of it", async () => {
    // Two "processes" sharing one Redis budget of 10/s (9 admitted with the 10% headroom).
    const options = { redis, keyPrefix: `${prefix}:a`, perSecond: 10 };
    const budgets = [createRedisRestBudget(options), createRedisRestBudget(options)];
    const admitted: { second: number; priority: string }[] = [];
    await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        await budgets[i % 2]!.acquire("high");
        admitted.push({ second: Math.floor(Date.now() / 1000), priority: "high" });
      }),
    );
    expect(admitted).toHaveLength(24);
    expect(Math.max(...perSecond(admitted, "high"))).toBeLessThanOrEqual(9);
    expect(budgets[0]!.waits.high + budgets[1]!.waits.high).toBeGreaterThan(0);
  });

  it("paces low-priority requests within their share so high-priority ones never wait for them", async () => {
    const budget = createRedisRestBudget({ redis, keyPrefix: `${prefix}:b`, perSecond: 10 });
    const admitted: { second: number; priority: string }[] = [];
    const take = async (priority: "high" | "low") => {
      await budget.acquire(priority);
      admitted.push({ second: Math.floor(Date.now() / 1000), priority });
    };
    const lows = Array.from({ length: 16 }, () => take("low"));
    const highs: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      highs.push(take("high"));
    }
    await Promise.all([...lows, ...highs]);
    expect(budget.waits.high).toBe(0);
    expect(budget.waits.low).toBeGreaterThan(0);
    // Lows may use 60% of the 9 admitted per second: 5.
    expect(Math.max(...perSecond(admitted, "low"))).toBeLessThanOrEqual(5);
  });

  it("gives a burst's acknowledgements the second's budget before the thread creations asked with them", async () => {
    // 9 admitted a second; 9 mentions arrive at once, each asking for its 👀 and its thread, interleaved.
    const budget = createRedisRestBudget({ redis, keyPrefix: `${prefix}:c`, perSecond: 10 });
    const order: string[] = [];
    const take = (priority: "ack" | "high") => budget.acquire(priority).then(() => order.push(priority));
    const asked: Promise<number>[] = [];
    for (let i = 0; i < 9; i++) asked.push(take("high"), take("ack"));
    await Promise.all(asked);
    expect(order.slice(0, 9)).toEqual(Array(9).fill("ack"));
    expect(budget.waits.ack).toBe(0);
    expect(budget.waits.high).toBeGreaterThan(0);
  });

  it("classifies requests: interaction endpoints exempt, own reactions ack, edits, typing and deletions low, the rest high", () => {
    const api = "https://discord.com/api/v10";
    expect(requestPriority("POST", `${api}/interactions/1/tok/callback`)).toBe("exempt");
    expect(requestPriority("POST", `${api}/webhooks/1/tok?wait=true`)).toBe("exempt");
    expect(requestPriority("PATCH", `${api}/channels/1/messages/2`)).toBe("low");
    expect(requestPriority("DELETE", `${api}/channels/1/messages/2`)).toBe("low");
    expect(requestPriority("POST", `${api}/channels/1/typing`)).toBe("low");
    expect(requestPriority("POST", `${api}/channels/1/messages`)).toBe("high");
    expect(requestPriority("PUT", `${api}/channels/1/messages/2/reactions/%F0%9F%91%80/@me`)).toBe("ack");
    expect(requestPriority("DELETE", `${api}/channels/1/messages/2/reactions/%F0%9F%91%80/@me`)).toBe("high");
    expect(requestPriority("POST", `${api}/channels/1/messages/2/threads`)).toBe("high");
    expect(requestPriority("PATCH", `${api}/channels/1/messages/2`, "high")).toBe("high");
    expect(requestPriority("POST", `${api}/channels/1/messages`, "low")).toBe("low");
    expect(requestPriority("POST", `${api}/interactions/1/tok/callback`, "low")).toBe("exempt");
  });
});
