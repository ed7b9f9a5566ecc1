import type { ChatPlatform } from "../chat/index.js";
import {
  createDiscordPlatform,
  createRedisRestBudget,
  type DiscordPlatformOptions,
} from "../discord/index.js";
import { discordRestBudgetPrefix } from "../runs/index.js";
import type { PlatformDeps } from "./platforms.js";

/**
 * The Discord adapter from the environment: token, API URL, shards (gateway processes), access lists,
 * edit interval, and the global REST budget in Redis shared by every gateway and worker of the bot.
 */
export function discordPlatform({ env, redis, limits, log }: PlatformDeps): ChatPlatform | undefined {
  if (!env.DISCORD_TOKEN) return undefined;
  const options: DiscordPlatformOptions = {
    token: env.DISCORD_TOKEN,
    budget: createRedisRestBudget({
      redis: limits ?? redis,
      keyPrefix: discordRestBudgetPrefix(env.THREADLINE_PREFIX),
      perSecond: env.DISCORD_GLOBAL_RATE_LIMIT,
      log,
    }),
    access: {
      guilds: env.DISCORD_ALLOWED_GUILDS,
      channels: env.DISCORD_ALLOWED_CHANNELS,
      roles: env.DISCORD_ALLOWED_ROLES,
      users: env.DISCORD_ALLOWED_USERS,
      directMessages: env.DISCORD_DIRECT_MESSAGES,
    },
    minEditIntervalMs: env.DISCORD_EDIT_INTERVAL_MS,
    log,
  };
  if (env.DISCORD_API_URL) options.apiUrl = env.DISCORD_API_URL;
  if (env.DISCORD_SHARD_COUNT !== undefined) {
    options.shards = { count: env.DISCORD_SHARD_COUNT };
    if (env.DISCORD_SHARD_IDS.length > 0) options.shards.ids = env.DISCORD_SHARD_IDS;
  }
  return createDiscordPlatform(options);
}
