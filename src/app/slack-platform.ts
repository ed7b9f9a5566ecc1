import { z } from "zod";
import { threadId, watchedReactions } from "../chat/index.js";
import { DEFAULT_SUGGESTED_PROMPTS, flagSetting as flag, idListSetting as idList } from "../config/index.js";
import { createHttpFetch } from "../http/index.js";
import { optionalText, urlSetting as url } from "../llm/index.js";
import { slackKeys, ThreadStore } from "../runs/index.js";
import type { SlackConnection, SlackPlatformOptions } from "../slack/index.js";
import type { DoctorCheck } from "./doctor.js";
import { definePlatform } from "./platform-module.js";

/** Slack's environment variables (documented in .env.example). */
const slackEnv = {
  SLACK_BOT_TOKEN: optionalText,
  SLACK_APP_TOKEN: optionalText,
  SLACK_SIGNING_SECRET: optionalText,
  SLACK_API_URL: url("https://slack.com/api/"),
  SLACK_ALLOWED_TEAMS: idList,
  SLACK_ALLOWED_CHANNELS: idList,
  SLACK_ALLOWED_USERS: idList,
  SLACK_ALLOWED_BOTS: idList,
  SLACK_DIRECT_MESSAGES: flag(true),
  SLACK_STREAMING: flag(true),
  /** 👍 / 👎 feedback buttons under each answer (Block Kit `feedback_buttons`). */
  SLACK_FEEDBACK: flag(true),
  /**
   * The app's `conversations.replies` limits: `non-marketplace` (distributed outside the Marketplace: 1 call
   * a minute, 15 messages a page) or `internal` (internal and Marketplace apps: Tier 3).
   */
  SLACK_HISTORY_TIER: z
    .enum(["non-marketplace", "internal"], {
      message: "must be non-marketplace or internal, for example non-marketplace",
    })
    .default("non-marketplace"),
};

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Slack: bot token, Socket Mode or signed HTTP events (gateway), Redis-shared method budgets, access lists
 * and the reactions the gateway watches. `@slack/*` is loaded only when Slack is built or checked.
 */
export const slackChatPlatform = definePlatform({
  name: "slack",
  title: "Slack",
  env: slackEnv,
  credentials: "SLACK_BOT_TOKEN",
  configured: (env) => Boolean(env.SLACK_BOT_TOKEN),
  problems(env) {
    const problems: string[] = [];
    if (env.SLACK_BOT_TOKEN && !env.SLACK_APP_TOKEN && !env.SLACK_SIGNING_SECRET) {
      problems.push(
        "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode, xapp-…) nor SLACK_SIGNING_SECRET (HTTP events) is",
      );
    }
    if ((env.SLACK_APP_TOKEN || env.SLACK_SIGNING_SECRET) && !env.SLACK_BOT_TOKEN) {
      problems.push("SLACK_APP_TOKEN / SLACK_SIGNING_SECRET is set but SLACK_BOT_TOKEN (xoxb-…) is missing");
    }
    return problems;
  },

  async create({ env, redis, limits, log, role, config, observer, settings }) {
    if (!env.SLACK_BOT_TOKEN) return undefined;
    const {
      createRedisRateLimiter,
      createSlackPlatform,
      historyBudgets,
      redisFeedbackLedger,
      redisRecipientStore,
      redisSeenMessages,
    } = await import("../slack/index.js");
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
      // A repeated click is skipped whichever gateway Slack delivers it to.
      feedbackLedger: redisFeedbackLedger(redis, slackKeys(env.THREADLINE_PREFIX).feedback),
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
  },

  /** `auth.test` with the bot token, no retries. */
  async check(env): Promise<DoctorCheck> {
    const [{ WebClient }, { slackClientOptions }] = await Promise.all([
      import("@slack/web-api"),
      import("../slack/index.js"),
    ]);
    const clientOptions = slackClientOptions(env.SLACK_API_URL ? { apiUrl: env.SLACK_API_URL } : {});
    const client = new WebClient(env.SLACK_BOT_TOKEN, { ...clientOptions, retryConfig: { retries: 0 } });
    try {
      const auth = await client.auth.test();
      return { name: "Slack", ok: true, detail: `connected as @${auth.user} in ${auth.team}` };
    } catch (err) {
      const code = (err as { data?: { error?: string } }).data?.error;
      return {
        name: "Slack",
        ok: false,
        detail: `auth.test failed: ${code ?? message(err)}`,
        fix:
          code === "invalid_auth" || code === "not_authed"
            ? "SLACK_BOT_TOKEN is not valid: copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page."
            : "Check SLACK_BOT_TOKEN and SLACK_API_URL, and that the app is installed in the workspace.",
      };
    }
  },
});
