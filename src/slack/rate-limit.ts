import type { Cluster, Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterQueue, RateLimiterRedis } from "rate-limiter-flexible";

/** A method budget: at most `limit` calls per `windowMs`, per workspace (or per channel with `perChannel`). */
export interface MethodBudget {
  limit: number;
  windowMs: number;
  /** Count per channel instead of per workspace (Slack's posting limits). */
  perChannel?: boolean;
  /** Drop the call instead of waiting when the budget is used up (cosmetic calls such as statuses). */
  bestEffort?: boolean;
}

const MINUTE = 60_000;

/**
 * Slack's published per-app budgets (tier floors: Tier 2 = 20/min, Tier 3 = 50/min, Tier 4 = 100/min;
 * posting about one message per second per channel, in short bursts). Every process of the bot counts
 * against the same budget through Redis, so many workers never add up to more than this.
 */
export const SLACK_METHOD_BUDGETS: Readonly<Record<string, MethodBudget>> = {
  "chat.postMessage": { limit: 60, windowMs: MINUTE, perChannel: true },
  "chat.startStream": { limit: 60, windowMs: MINUTE, perChannel: true },
  "chat.appendStream": { limit: 100, windowMs: MINUTE },
  "chat.stopStream": { limit: 100, windowMs: MINUTE },
  "chat.update": { limit: 50, windowMs: MINUTE },
  "chat.delete": { limit: 50, windowMs: MINUTE },
  "chat.postEphemeral": { limit: 100, windowMs: MINUTE },
  "reactions.add": { limit: 50, windowMs: MINUTE },
  "reactions.remove": { limit: 20, windowMs: MINUTE },
  // The conservative tier (see SLACK_HISTORY_TIERS); best effort: a mention never waits for history.
  "conversations.replies": { limit: 1, windowMs: MINUTE, bestEffort: true },
  "users.info": { limit: 100, windowMs: MINUTE },
  "assistant.threads.setStatus": { limit: 50, windowMs: MINUTE, bestEffort: true },
  // "Tier 4: 100+ per minute" (https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts).
  "assistant.threads.setSuggestedPrompts": { limit: 100, windowMs: MINUTE, bestEffort: true },
  // Tier 3 (https://docs.rs/crate/slack-morphism/2.29.0/source/src/api/agents.rs; Slack's page names no tier).
  "agents.sessions.setStatus": { limit: 50, windowMs: MINUTE },
};

/**
 * Which `conversations.replies` limits apply to the app (`SLACK_HISTORY_TIER`). Slack: "As of May 29,
 * 2025, for new applications and installation commercially distributed outside of the Marketplace, this
 * method is rate limited to 1 request per minute. The maximum and default values for the limit parameter
 * have both been reduced to 15 objects. For Marketplace and internal customer-built applications, this
 * method has Tier 3 rate limits." and "Beginning March 3, 2026, existing installations of applications
 * published and distributed outside the Slack Marketplace will also be subject to the new posted limits."
 * (https://docs.slack.dev/reference/methods/conversations.replies; also
 * https://docs.slack.dev/apis/web-api/rate-limits, "App types and rate limits").
 */
export type SlackHistoryTier = "non-marketplace" | "internal";

/** A history tier: the method budget and the page size (`limit`) of one `conversations.replies` call. */
export interface HistoryTierLimits {
  budget: MethodBudget;
  pageSize: number;
}

export const SLACK_HISTORY_TIERS: Readonly<Record<SlackHistoryTier, HistoryTierLimits>> = {
  // 1 request per minute, at most 15 messages a page (the default: it is right for every app).
  "non-marketplace": { budget: { limit: 1, windowMs: MINUTE, bestEffort: true }, pageSize: 15 },
  // Tier 3 (50+ per minute); pages of 200 with the cursor (https://docs.slack.dev/apis/web-api/pagination).
  internal: { budget: { limit: 50, windowMs: MINUTE, bestEffort: true }, pageSize: 200 },
};

/** The budgets of a history tier, to pass as {@link RedisRateLimiterOptions.budgets}. */
export function historyBudgets(tier: SlackHistoryTier): Record<string, MethodBudget> {
  return { "conversations.replies": SLACK_HISTORY_TIERS[tier].budget };
}

/** Waits for (or refuses) a slot in a Slack method's budget. */
export interface SlackRateLimiter {
  /**
   * Resolves `true` once a call of `method` may be made in `team` (and `channel`), waiting in FIFO order
   * while the budget is used up; resolves `false` at once for a best-effort method without budget.
   * Methods without a budget pass immediately. While Redis is unreachable, each process counts on its own
   * (so a ⚠️ can still be set on a message that could not be stored). Never rejects.
   */
  acquire(method: string, team: string, channel?: string): Promise<boolean>;
}

/** No limits (a single process in development, or tests of the outbound alone). */
export const UNLIMITED: SlackRateLimiter = { acquire: async () => true };

/** Options of {@link createRedisRateLimiter}. */
export interface RedisRateLimiterOptions {
  redis: Redis | Cluster;
  /**
   * The key prefix of one method's counters (the app passes `slackKeys(prefix).rateLimit` of `src/runs`:
   * `<prefix>:slack-rl:<method>`).
   */
  keyPrefix: (method: string) => string;
  /** Replaces or adds budgets (by method name). Default {@link SLACK_METHOD_BUDGETS}. */
  budgets?: Record<string, MethodBudget>;
}

/**
 * Per-workspace Slack method budgets shared by every process through Redis (rate-limiter-flexible's
 * fixed windows; waiting callers queue FIFO per key in this process and are released as the window
 * allows). The window is 1 s longer than Slack's so ours never resets before Slack's does. While Redis
 * is unreachable, an in-process budget of the same size stands in (rate-limiter-flexible's insurance).
 */
export function createRedisRateLimiter(options: RedisRateLimiterOptions): SlackRateLimiter {
  const budgets = { ...SLACK_METHOD_BUDGETS, ...options.budgets };
  const limiters = new Map<string, { limiter: RateLimiterRedis; queue: RateLimiterQueue }>();
  const limiterFor = (method: string, budget: MethodBudget) => {
    let entry = limiters.get(method);
    if (!entry) {
      const limiter = new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: options.keyPrefix(method),
        points: budget.limit,
        duration: Math.ceil((budget.windowMs + 1000) / 1000),
        // Redis away: count in this process instead of failing the Web API call.
        insuranceLimiter: new RateLimiterMemory({
          points: budget.limit,
          duration: Math.ceil((budget.windowMs + 1000) / 1000),
        }),
      });
      entry = { limiter, queue: new RateLimiterQueue(limiter) };
      limiters.set(method, entry);
    }
    return entry;
  };
  return {
    async acquire(method, team, channel) {
      const budget = budgets[method];
      if (!budget) return true;
      const { limiter, queue } = limiterFor(method, budget);
      const key = budget.perChannel && channel ? `${team}:${channel}` : team;
      if (!budget.bestEffort) {
        await queue.removeTokens(1, key);
        return true;
      }
      try {
        await limiter.consume(key, 1);
        return true;
      } catch (rejection) {
        if (rejection instanceof Error) throw rejection;
        return false;
      }
    },
  };
}
