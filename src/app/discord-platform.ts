import { z } from "zod";
import { flagSetting as flag, idListSetting as idList } from "../config/index.js";
import type { DiscordPlatformOptions } from "../discord/index.js";
import { optionalText, positiveIntSetting as positiveInt, urlSetting as url } from "../llm/index.js";
import { discordRestBudgetPrefix } from "../runs/index.js";
import type { DoctorCheck } from "./doctor.js";
import { definePlatform } from "./platform-module.js";

/** The most shard ids one range may name. */
const MAX_SHARD_RANGE = 10_000;

/** Discord shard ids: `0,1` or ranges `0-3,8`; empty or unset = `[]` (all shards of the count). */
const shardIds = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const ids: number[] = [];
    for (const item of (value ?? "").split(",").map((part) => part.trim())) {
      if (item === "") continue;
      const match = /^(\d+)(?:-(\d+))?$/.exec(item);
      if (!match) {
        ctx.addIssue({ code: "custom", message: "must be shard ids or ranges, for example 0,1 or 0-3" });
        return ids;
      }
      const first = Number(match[1]);
      const last = Number(match[2] ?? match[1]);
      if (last < first) {
        ctx.addIssue({
          code: "custom",
          message: `the range ${item} runs backwards; write it as ${last}-${first}`,
        });
        return ids;
      }
      // Discord caps a bot's shards far below this; a bigger range is a typo, not a plan.
      if (last - first >= MAX_SHARD_RANGE) {
        ctx.addIssue({
          code: "custom",
          message: `the range ${item} names more than ${MAX_SHARD_RANGE} shards`,
        });
        return ids;
      }
      for (let id = first; id <= last; id++) ids.push(id);
    }
    return [...new Set(ids)].sort((a, b) => a - b);
  });

/** Discord's environment variables (documented in .env.example). */
const discordEnv = {
  DISCORD_TOKEN: optionalText,
  DISCORD_API_URL: url("https://discord.com/api"),
  DISCORD_SHARD_COUNT: z
    .string()
    .trim()
    .optional()
    .transform((value) => (value ? Number(value) : undefined))
    .pipe(
      z
        .number({ message: "must be a whole number, for example 4" })
        .int({ message: "must be a whole number, for example 4" })
        .positive({ message: "must be greater than 0, for example 4" })
        .optional(),
    ),
  DISCORD_SHARD_IDS: shardIds,
  DISCORD_ALLOWED_GUILDS: idList,
  DISCORD_ALLOWED_CHANNELS: idList,
  DISCORD_ALLOWED_ROLES: idList,
  DISCORD_ALLOWED_USERS: idList,
  DISCORD_DIRECT_MESSAGES: flag(true),
  DISCORD_GLOBAL_RATE_LIMIT: positiveInt(50, "50"),
  DISCORD_EDIT_INTERVAL_MS: positiveInt(1000, "1000"),
};

const DEFAULT_DISCORD_API_URL = "https://discord.com/api";

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Discord: token, API URL, shards (gateway processes), access lists, edit interval, and the global REST
 * budget in Redis shared by every gateway and worker of the bot. discord.js is loaded only when built.
 */
export const discordChatPlatform = definePlatform({
  name: "discord",
  title: "Discord",
  env: discordEnv,
  credentials: "DISCORD_TOKEN",
  configured: (env) => Boolean(env.DISCORD_TOKEN),
  /** DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT, and every id must be below it. */
  problems(env) {
    const ids = env.DISCORD_SHARD_IDS;
    if (ids.length === 0) return [];
    if (env.DISCORD_SHARD_COUNT === undefined) {
      return ["DISCORD_SHARD_IDS is set but DISCORD_SHARD_COUNT (the bot's total number of shards) is not"];
    }
    const count = env.DISCORD_SHARD_COUNT;
    return ids.some((id) => id >= count)
      ? [`DISCORD_SHARD_IDS must be below DISCORD_SHARD_COUNT (${count}): shard ids count from 0`]
      : [];
  },

  async create({ env, redis, limits, log }) {
    if (!env.DISCORD_TOKEN) return undefined;
    const { createDiscordPlatform, createRedisRestBudget } = await import("../discord/index.js");
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
  },

  /** `GET /users/@me` with the bot token. */
  async check(env): Promise<DoctorCheck> {
    const base = (env.DISCORD_API_URL ?? DEFAULT_DISCORD_API_URL).replace(/\/+$/, "");
    try {
      const response = await fetch(`${base}/v10/users/@me`, {
        headers: { authorization: `Bot ${env.DISCORD_TOKEN}` },
        signal: AbortSignal.timeout(10_000),
      });
      if (response.ok) {
        const me = (await response.json()) as { username?: string };
        return { name: "Discord", ok: true, detail: `connected as ${me.username ?? "the bot"}` };
      }
      return {
        name: "Discord",
        ok: false,
        detail: `GET /users/@me answered ${response.status}`,
        fix:
          response.status === 401
            ? "DISCORD_TOKEN is not valid: reset the bot token on the Developer Portal's Bot page and copy it."
            : "Check DISCORD_TOKEN and DISCORD_API_URL.",
      };
    } catch (err) {
      return {
        name: "Discord",
        ok: false,
        detail: `could not reach ${base}: ${message(err)}`,
        fix: "Check DISCORD_API_URL and the network.",
      };
    }
  },
});
