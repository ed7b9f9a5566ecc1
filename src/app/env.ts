import {
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  parseEnvWith,
  envSchema as processEnvSchema,
} from "../config/index.js";
import { platformEnvShape, platformProblems } from "./platforms.js";

/**
 * The whole environment schema: `src/config`'s (Redis, the model, limits, ops, …) extended with every chat
 * platform's variables (`CHAT_PLATFORMS` in `platforms.ts`: `SLACK_*`, `DISCORD_*`, `PLAYGROUND*`). It is
 * composed here, not in `src/config`, because the platforms are wired in `src/app` and `src/config` imports
 * no adapter; what `src/app` starts is read with this one.
 */
export const envSchema = processEnvSchema.extend(platformEnvShape());

/** The parsed environment, the chat platforms' variables included. */
export type Env = import("zod").output<typeof envSchema>;

/**
 * Reads and validates the environment, the platforms' variables and their problems across variables
 * included. @throws ConfigError listing every problem (values never echoed).
 */
export function parseEnv(env: NodeJS.ProcessEnv = process.env): Env {
  return parseEnvWith(envSchema, env, [platformProblems]);
}

/** `loadConfig` with {@link parseEnv}: the environment (platforms included) and the config module. */
export function loadSettings(options: LoadConfigOptions = {}): Promise<LoadedConfig<Env>> {
  return loadConfig({ ...options, parseEnv });
}
