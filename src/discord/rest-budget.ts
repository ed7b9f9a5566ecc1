import type { Cluster, Redis } from "ioredis";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { ChatLogger } from "../chat/index.js";

/**
 * How urgent a REST request is for the people in the chat: `ack` (the bot's own reaction marks, 👀 first
 * of all), `high` (posts, thread creation, what people wait for) or `low` (streaming edits, typing).
 */
export type RequestPriority = "ack" | "high" | "low";

/**
 * The bot's global REST budget, shared by every process that uses the same token. `acquire` resolves
 * when one request may be sent now; it never rejects.
 */
export interface RestBudget {
  acquire(priority: RequestPriority): Promise<void>;
  /** How many times requests of each priority had to wait for budget so far (a metric). */
  readonly waits: Readonly<Record<RequestPriority, number>>;
}

/** Logs what the budget cannot fix (Redis unreachable): the warning level of {@link ChatLogger}. */
export type BudgetLogger = Pick<ChatLogger, "warn">;

/** Options of {@link createRedisRestBudget}. */
export interface RedisRestBudgetOptions {
  /** A command connection (ioredis). Not closed by the budget. */
  redis: Redis | Cluster;
  /** Key prefix of the budget's counters in Redis, e.g. `tl:discord:rest`. */
  keyPrefix: string;
  /** Discord's global limit in requests per second; default 50. */
  perSecond?: number;
  /**
   * Share of the limit actually admitted per second; default 0.9. The margin absorbs requests admitted at
   * the end of one second that reach Discord in the next, and clock differences.
   */
  headroom?: number;
  /** Share of the admitted requests that low-priority ones may use, paced over the second; default 0.6. */
  lowShare?: number;
  log?: BudgetLogger;
}

/**
 * A global REST budget in Redis (rate-limiter-flexible): one counter per wall-clock second shared by all
 * gateways and workers. High-priority requests (what a user waits for: posts, reactions, thread creation)
 * may use the whole admitted budget at any moment; the bot's reactions (`ack`) go before the other
 * high-priority requests of the same event-loop turn. Low-priority ones (streaming edits, typing, draft
 * deletions) first take a slot from a second, paced counter — spread evenly over the second, so their
 * waiting never inflates the shared counter — and are admitted only while the second's count stays
 * within `lowShare` of the budget: the rest of every second is kept for what people wait for. When Redis fails the budget lets
 * requests through (logged once a minute): @discordjs/rest's per-process limit and 429 handling remain.
 */
export function createRedisRestBudget(options: RedisRestBudgetOptions): RestBudget {
  const admitted = Math.max(1, Math.floor((options.perSecond ?? 50) * (options.headroom ?? 0.9)));
  const lowBudget = Math.max(1, Math.floor(admitted * (options.lowShare ?? 0.6)));
  const slots = Math.min(10, lowBudget);
  const slotMs = 1000 / slots;
  const all = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: options.keyPrefix,
    points: admitted,
    duration: 2,
  });
  const low = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: `${options.keyPrefix}:low`,
    points: Math.floor(lowBudget / slots),
    duration: 2,
  });
  const waits: Record<RequestPriority, number> = { ack: 0, high: 0, low: 0 };
  let lastWarning = 0;
  const failOpen = (err: unknown) => {
    const now = Date.now();
    if (now - lastWarning < 60_000) return;
    lastWarning = now;
    options.log?.warn({ err }, "Discord REST budget unavailable (Redis); sending without the shared limit");
  };
  /** Takes one point of `limiter` under `key`: the count so far, "full" (wait), or "error" (Redis failed). */
  const take = async (limiter: RateLimiterRedis, key: string): Promise<number | "full" | "error"> => {
    try {
      return (await limiter.consume(key, 1)).consumedPoints;
    } catch (err) {
      if (err instanceof RateLimiterRes) return "full";
      failOpen(err);
      return "error";
    }
  };

  return {
    waits,
    async acquire(priority) {
      // Reactions asked for in this event-loop turn take their slots first: in a burst of mentions (each
      // one 👀 and one thread creation) the acknowledgements use the second's budget before the threads do.
      if (priority === "high") await new Promise((resolve) => setImmediate(resolve));
      for (;;) {
        const now = Date.now();
        const second = Math.floor(now / 1000);
        const elapsed = now - second * 1000;
        if (priority === "low") {
          const slot = Math.floor(elapsed / slotMs);
          const paced = await take(low, `${second}:${slot}`);
          if (paced === "error") return;
          if (paced === "full") {
            waits.low++;
            await sleep((slot + 1) * slotMs - elapsed + Math.random() * 5);
            continue;
          }
        }
        const granted = await take(all, String(second));
        if (granted === "error") return;
        if (granted !== "full" && (priority !== "low" || granted <= lowBudget)) return;
        // Full for this priority: the rest of the second is kept for high-priority requests.
        if (granted !== "full") await all.reward(String(second), 1).catch(failOpen);
        waits[priority]++;
        await sleep(1000 - elapsed + Math.random() * 10);
      }
    },
  };
}

/** A budget that never waits (single-process tools, tests of other parts). */
export const UNLIMITED_BUDGET: RestBudget = { acquire: async () => {}, waits: { ack: 0, high: 0, low: 0 } };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
