import type { Redis } from "ioredis";
import type { ChatPlatform, Platform } from "../chat/index.js";
import type { Env } from "../config/index.js";
import type { RunLogger } from "../runs/index.js";

/** What platform factories get from the composition root. */
export interface PlatformDeps {
  env: Env;
  /** A command connection (for Redis-backed rate limits). */
  redis: Redis;
  log: RunLogger;
  /** "gateway" receives events; "worker" only posts through REST. */
  role: "gateway" | "worker";
}

/** Builds the configured platform adapters (those whose credentials are present). */
export function createPlatforms(_deps: PlatformDeps): ChatPlatform[] {
  return [];
}

/** Index of adapters by platform. */
export function byPlatform(platforms: ChatPlatform[]): Map<Platform, ChatPlatform> {
  return new Map(platforms.map((platform) => [platform.platform, platform]));
}
