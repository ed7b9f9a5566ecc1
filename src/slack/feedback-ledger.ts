import type { Cluster, Redis } from "ioredis";
import type { FeedbackValue } from "./feedback-blocks.js";
import { ExpiringMap } from "./lookups.js";

/** How long the feedback a user gave on a message is remembered (a repeat within it is not recorded). */
const FEEDBACK_MEMORY_MS = 24 * 60 * 60 * 1000;

/**
 * The feedback each user last gave on each message, shared by every gateway instance when it is in Redis:
 * a user who clicks 👍 twice has the second click skipped whichever gateway Slack delivers it to.
 */
export interface FeedbackLedger {
  /** Stores `value` under `key` (user and message); resolves to the value stored before, if any. */
  swap(key: string, value: FeedbackValue): Promise<FeedbackValue | undefined>;
}

/** A {@link FeedbackLedger} in this process only (a day; the newest 20,000). */
export function memoryFeedbackLedger(): FeedbackLedger {
  const given = new ExpiringMap<FeedbackValue>(20_000, FEEDBACK_MEMORY_MS);
  return {
    swap: async (key, value) => {
      const before = given.get(key);
      given.set(key, value);
      return before;
    },
  };
}

/**
 * A {@link FeedbackLedger} in Redis: one string per user and message under `keyPrefix`, kept a day, swapped
 * with one `SET … PX … GET` (atomic, so two gateways receiving the same user's clicks at once record one).
 */
export function redisFeedbackLedger(redis: Redis | Cluster, keyPrefix: string): FeedbackLedger {
  return {
    async swap(key, value) {
      const before = await redis.set(`${keyPrefix}:${key}`, value, "PX", FEEDBACK_MEMORY_MS, "GET");
      return before === "positive" || before === "negative" ? before : undefined;
    },
  };
}
