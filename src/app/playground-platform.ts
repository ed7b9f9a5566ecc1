import type { Env } from "../config/index.js";
import { createPlaygroundPlatform, type PlaygroundPlatform } from "../playground/index.js";
import { playgroundKeys } from "../runs/index.js";
import { missingModelHint } from "./model-hint.js";
import type { PlatformDeps } from "./platforms.js";

/**
 * True when the local web playground is wanted: `PLAYGROUND=1`, or no Slack and no Discord credentials
 * (so `threadline start` always has somewhere to talk).
 */
export function wantsPlayground(env: Env): boolean {
  return env.PLAYGROUND || (!env.SLACK_BOT_TOKEN && !env.DISCORD_TOKEN);
}

/**
 * The playground adapter from the environment. Gateways serve it on `PLAYGROUND_PORT` (default `PORT`)
 * and `PLAYGROUND_HOST`; workers only use its outbound, which writes to Redis. The page shows what to set
 * when no model is configured.
 */
export function playgroundPlatform({ env, redis, log, config }: PlatformDeps): PlaygroundPlatform {
  const options: Parameters<typeof createPlaygroundPlatform>[0] = {
    redis,
    keys: playgroundKeys(env.THREADLINE_PREFIX),
    port: env.PLAYGROUND_PORT ?? env.PORT,
    host: env.PLAYGROUND_HOST,
    allowedHosts: env.PLAYGROUND_ALLOWED_HOSTS,
    reactions: config.reactions,
    retentionMs: config.retentionMs,
    log,
  };
  const hint = missingModelHint(env);
  if (hint) options.notice = hint;
  return createPlaygroundPlatform(options);
}
