import type { Redis } from "ioredis";
import type { ChatPlatform, Platform } from "../chat/index.js";
import type { Env } from "../config/index.js";
import { createNodeHttpFetch } from "../llm/index.js";
import type { RunLogger, RunsConfig } from "../runs/index.js";
import {
  createRedisRateLimiter,
  createSlackPlatform,
  redisRecipientStore,
  type SlackConnection,
  type SlackPlatformOptions,
} from "../slack/index.js";
import { discordPlatform } from "./discord-platform.js";
import { playgroundPlatform, wantsPlayground } from "./playground-platform.js";

/** What platform factories get from the composition root. */
export interface PlatformDeps {
  env: Env;
  /** A command connection (for Redis-backed rate limits). */
  redis: Redis;
  log: RunLogger;
  /** "gateway" receives events; "worker" only posts through REST. */
  role: "gateway" | "worker";
  /** The runs settings (reaction names the gateway watches). */
  config: RunsConfig;
}

/** Builds the configured platform adapters (those whose credentials are present). */
export function createPlatforms(deps: PlatformDeps): ChatPlatform[] {
  const platforms: ChatPlatform[] = [];
  const slack = slackPlatform(deps);
  if (slack) platforms.push(slack);
  if (deps.env.DISCORD_TOKEN) {
    const discord = discordPlatform(deps);
    if (discord) platforms.push(discord);
  }
  if (wantsPlayground(deps.env)) platforms.push(playgroundPlatform(deps));
  return platforms;
}

function slackPlatform({ env, redis, log, role, config }: PlatformDeps): ChatPlatform | undefined {
  if (!env.SLACK_BOT_TOKEN) return undefined;
  const options: SlackPlatformOptions = {
    botToken: env.SLACK_BOT_TOKEN,
    rateLimiter: createRedisRateLimiter({ redis, prefix: env.THREADLINE_PREFIX }),
    // Keep-alive node:http: less CPU per Web API call than the global fetch (many calls per run).
    fetch: createNodeHttpFetch() as unknown as NonNullable<SlackPlatformOptions["fetch"]>,
    recipients: redisRecipientStore(redis, env.THREADLINE_PREFIX),
    streaming: env.SLACK_STREAMING,
    access: {
      teams: env.SLACK_ALLOWED_TEAMS,
      channels: env.SLACK_ALLOWED_CHANNELS,
      users: env.SLACK_ALLOWED_USERS,
      bots: env.SLACK_ALLOWED_BOTS,
      directMessages: env.SLACK_DIRECT_MESSAGES,
    },
    watchedReactions: [config.reactions.steer, config.reactions.followUp, config.reactions.stop],
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

/** Index of adapters by platform. */
export function byPlatform(platforms: ChatPlatform[]): Map<Platform, ChatPlatform> {
  return new Map(platforms.map((platform) => [platform.platform, platform]));
}
