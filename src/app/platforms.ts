import type { ChatPlatform, Platform } from "../chat/index.js";
import type { Env, ThreadlineConfig } from "../config/index.js";
import type { RunLogger, RunsConfig } from "../runs/index.js";
import { playgroundPlatform, wantsPlayground } from "./playground-platform.js";
import type { RedisClient } from "./redis.js";

/** What platform factories get from the composition root. */
export interface PlatformDeps {
  env: Env;
  /** The process's command connection (stores, the playground). */
  redis: RedisClient;
  /**
   * The command connection of the platforms' Redis-backed rate limits (Slack's method budgets, Discord's
   * REST budget), separate from `redis` so a budget check is never queued behind intake scripts and run
   * writes. Not closed by the platforms. Default `redis`.
   */
  limits?: RedisClient;
  log: RunLogger;
  /** "gateway" receives events; "worker" only posts through REST. */
  role: "gateway" | "worker";
  /** The runs settings (reaction names the gateway watches). */
  config: RunsConfig;
  /** What the adapters report besides runs (the gateway's feedback clicks). */
  observer?: PlatformObserver;
  /** The config module's settings (Slack's suggested prompts). Default: none given. */
  settings?: ThreadlineConfig;
}

/** Events of the chat adapters worth counting. Members must not throw. */
export interface PlatformObserver {
  /** A user gave feedback on an answer (`positive` / `negative`). */
  feedback?(platform: Platform, value: string): void;
}

/**
 * Builds the configured platform adapters (those whose credentials are present). Slack's and Discord's
 * client libraries are loaded only when configured, so the playground alone starts quickly.
 */
export async function createPlatforms(deps: PlatformDeps): Promise<ChatPlatform[]> {
  const platforms: ChatPlatform[] = [];
  if (deps.env.SLACK_BOT_TOKEN) {
    const slack = (await import("./slack-platform.js")).slackPlatform(deps);
    if (slack) platforms.push(slack);
  }
  if (deps.env.DISCORD_TOKEN) {
    const discord = (await import("./discord-platform.js")).discordPlatform(deps);
    if (discord) platforms.push(discord);
  }
  if (wantsPlayground(deps.env)) platforms.push(playgroundPlatform(deps));
  return platforms;
}

/** Index of adapters by platform. */
export function byPlatform(platforms: ChatPlatform[]): Map<Platform, ChatPlatform> {
  return new Map(platforms.map((platform) => [platform.platform, platform]));
}
