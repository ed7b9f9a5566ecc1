import { type ChatPlatform, threadId, watchedReactions } from "../chat/index.js";
import { DEFAULT_SUGGESTED_PROMPTS } from "../config/index.js";
import { createHttpFetch } from "../http/index.js";
import { slackKeys, ThreadStore } from "../runs/index.js";
import {
  createRedisRateLimiter,
  createSlackPlatform,
  historyBudgets,
  redisRecipientStore,
  redisSeenMessages,
  type SlackConnection,
  type SlackPlatformOptions,
} from "../slack/index.js";
import type { PlatformDeps } from "./platforms.js";

/**
 * The Slack adapter from the environment: bot token, Socket Mode or signed HTTP events (gateway), Redis-shared
 * method budgets, access lists and the reactions the gateway watches.
 */
export function slackPlatform({
  env,
  redis,
  limits,
  log,
  role,
  config,
  observer,
  settings,
}: PlatformDeps): ChatPlatform | undefined {
  if (!env.SLACK_BOT_TOKEN) return undefined;
  const store = new ThreadStore(redis, env.THREADLINE_PREFIX);
  const options: SlackPlatformOptions = {
    botToken: env.SLACK_BOT_TOKEN,
    rateLimiter: createRedisRateLimiter({
      redis: limits ?? redis,
      keyPrefix: slackKeys(env.THREADLINE_PREFIX).rateLimit,
      budgets: historyBudgets(env.SLACK_HISTORY_TIER),
    }),
    // The model client's keep-alive undici fetch: less CPU per Web API call than the global fetch.
    fetch: createHttpFetch() as unknown as NonNullable<SlackPlatformOptions["fetch"]>,
    recipients: redisRecipientStore(redis, slackKeys(env.THREADLINE_PREFIX)),
    seenMessages: redisSeenMessages(redis, slackKeys(env.THREADLINE_PREFIX)),
    historyTier: env.SLACK_HISTORY_TIER,
    streaming: env.SLACK_STREAMING,
    feedback: env.SLACK_FEEDBACK,
    // Asked when a run's status first shows: the worker holds the thread then, so its run is the active one.
    runIdOf: (thread) => store.activeRun(threadId(thread)),
    onFeedback: (feedback) => observer?.feedback?.("slack", feedback.value),
    suggestedPrompts: {
      title: settings?.slack?.suggestedPromptsTitle ?? "Try asking",
      prompts: settings?.slack?.suggestedPrompts ?? DEFAULT_SUGGESTED_PROMPTS,
    },
    access: {
      teams: env.SLACK_ALLOWED_TEAMS,
      channels: env.SLACK_ALLOWED_CHANNELS,
      users: env.SLACK_ALLOWED_USERS,
      bots: env.SLACK_ALLOWED_BOTS,
      directMessages: env.SLACK_DIRECT_MESSAGES,
    },
    watchedReactions: watchedReactions(config.reactions),
    log,
  };
  if (env.SLACK_API_URL) options.apiUrl = env.SLACK_API_URL;
  if (role === "gateway") {
    const connection: SlackConnection | undefined = env.SLACK_APP_TOKEN
      ? { mode: "socket", appToken: env.SLACK_APP_TOKEN }
      : env.SLACK_SIGNING_SECRET
        ? { mode: "http", signingSecret: env.SLACK_SIGNING_SECRET, port: env.PORT }
        : undefined;
    if (connection) options.connection = connection;
  }
  return createSlackPlatform(options);
}
