import type { ChatPlatform, Platform } from "../chat/index.js";
import { discordChatPlatform } from "./discord-platform.js";
import type { Env } from "./env.js";
import type { ChatPlatformModule, PlatformDeps } from "./platform-module.js";
import { playgroundChatPlatform } from "./playground-platform.js";
import { slackChatPlatform } from "./slack-platform.js";

export type { ChatPlatformModule, PlatformDeps, PlatformEnv, PlatformObserver } from "./platform-module.js";
export { definePlatform } from "./platform-module.js";

/**
 * The chat platforms, one module each (`src/app/<name>-platform.ts`, wiring the adapter folder
 * `src/<name>/`), in the order they are built and checked. The environment schema (`env.ts`),
 * {@link createPlatforms}, the playground's fallback, the gateway's warning and `doctor` read this table and
 * nothing platform-specific: a new platform is its folder, its module and its entry here.
 */
export const CHAT_PLATFORMS = [slackChatPlatform, discordChatPlatform, playgroundChatPlatform] as const;

/** The table as plain modules (each reads only its own variables of the whole environment). */
const MODULES: readonly ChatPlatformModule[] = CHAT_PLATFORMS;

type Intersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void
  ? I
  : never;

/** Every platform's environment variables in one zod shape (what `env.ts` extends the schema with). */
export type PlatformEnvShape = Intersection<(typeof CHAT_PLATFORMS)[number]["env"]>;

/** The platforms' environment variables in one shape. @throws Error when two declare the same name. */
export function platformEnvShape(): PlatformEnvShape {
  const shape: Record<string, unknown> = {};
  for (const platform of MODULES)
    for (const [name, schema] of Object.entries(platform.env)) {
      if (name in shape) throw new Error(`Two chat platforms declare the environment variable ${name}`);
      shape[name] = schema;
    }
  return shape as PlatformEnvShape;
}

/** The platforms' problems across their variables (`env.ts` reports them with every other problem). */
export function platformProblems(env: Env): string[] {
  return MODULES.flatMap((platform) => platform.problems?.(env) ?? []);
}

/**
 * The platforms `env` turns on, in table order: those whose credentials are present, and the fallbacks
 * (the playground) when they are turned on themselves or no other platform is.
 */
export function wantedPlatforms(env: Env): ChatPlatformModule[] {
  const configured = MODULES.filter((platform) => platform.configured(env));
  const none = !configured.some((platform) => !platform.fallback);
  return MODULES.filter((platform) => configured.includes(platform) || (platform.fallback && none));
}

/** True when the local web playground is wanted: `PLAYGROUND=1`, or no other platform is configured. */
export function wantsPlayground(env: Env): boolean {
  return wantedPlatforms(env).includes(playgroundChatPlatform);
}

/** What turns a platform on, for messages: `SLACK_BOT_TOKEN or DISCORD_TOKEN`. */
export function platformCredentials(): string {
  return MODULES.flatMap((platform) => (platform.credentials ? [platform.credentials] : [])).join(" or ");
}

/**
 * Builds the wanted platform adapters ({@link wantedPlatforms}). Each module loads its client library only
 * when built, so the playground alone starts quickly.
 */
export async function createPlatforms(deps: PlatformDeps<Env>): Promise<ChatPlatform[]> {
  const platforms: ChatPlatform[] = [];
  for (const platform of wantedPlatforms(deps.env)) {
    const built = await platform.create(deps);
    if (built) platforms.push(built);
  }
  return platforms;
}

/** Index of adapters by platform. */
export function byPlatform(platforms: ChatPlatform[]): Map<Platform, ChatPlatform> {
  return new Map(platforms.map((platform) => [platform.platform, platform]));
}
