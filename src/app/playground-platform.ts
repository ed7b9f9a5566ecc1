import { z } from "zod";
import { flagSetting as flag, idListSetting as idList } from "../config/index.js";
import { createPlaygroundPlatform } from "../playground/index.js";
import { playgroundKeys } from "../runs/index.js";
import { missingModelHint } from "./model-hint.js";
import { definePlatform } from "./platform-module.js";

/** The playground's environment variables (documented in .env.example); its port defaults to `PORT`. */
const playgroundEnv = {
  /** Serve the local web playground even when Slack or Discord is configured (it always runs without them). */
  PLAYGROUND: flag(false),
  /** Interface the playground binds; default 127.0.0.1 (it has no login). 0.0.0.0 inside a container. */
  PLAYGROUND_HOST: z.string().trim().min(1).default("127.0.0.1"),
  /**
   * Host names the playground answers to besides localhost, 127.0.0.1 and [::1] (it has no login, so the
   * Host and Origin of requests are checked against this list whatever PLAYGROUND_HOST is): comma-separated
   * `name` (at the playground's port) or `name:port` (a published port that differs, a TLS proxy's 443).
   */
  PLAYGROUND_ALLOWED_HOSTS: idList.pipe(
    z.array(
      z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::\d{1,5})?$/, {
        message: "must be host names or host:port, for example bot.internal,localhost:8080",
      }),
    ),
  ),
  /** Port of the playground; default PORT (set it when Slack's HTTP mode already listens on PORT). */
  PLAYGROUND_PORT: z
    .string()
    .trim()
    .optional()
    .transform((value) => (value ? Number(value) : undefined))
    .pipe(
      z
        .number({ message: "must be a whole number, for example 3001" })
        .int({ message: "must be a whole number, for example 3001" })
        .positive({ message: "must be greater than 0, for example 3001" })
        .max(65535, { message: "must be a port number (1–65535), for example 3001" })
        .optional(),
    ),
};

/**
 * The local web playground: wanted with `PLAYGROUND=1`, or when no other platform is configured (so
 * `threadline start` always has somewhere to talk). Gateways serve it on `PLAYGROUND_PORT` (default `PORT`)
 * and `PLAYGROUND_HOST`; workers only use its outbound, which writes to Redis. The page shows what to set
 * when no model is configured.
 */
export const playgroundChatPlatform = definePlatform({
  name: "playground",
  title: "Playground",
  env: playgroundEnv,
  configured: (env) => env.PLAYGROUND,
  fallback: true,
  async create({ env, redis, log, config }) {
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
  },
});
