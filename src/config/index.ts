/**
 * Configuration: the environment and the optional config module (`threadline.config.ts` / `.mjs`),
 * validated at start-up; an invalid setup fails with one message listing every problem.
 * Also re-exports what a config module needs: `defineConfig` and `defineTool`.
 */

export { defineTool, ToolError } from "../tools/index.js";
export {
  type ContextSettings,
  DEFAULT_SUGGESTED_PROMPTS,
  defineConfig,
  type ModelSettings,
  type SlackSettings,
  type SuggestedPrompt,
  type SystemPromptContext,
  type ThreadlineConfig,
} from "./config-module.js";
export { configSchema, describeConfigIssues, validateConfig } from "./config-schema.js";
export {
  ConfigError,
  type Env,
  envSchema,
  flagSetting,
  idListSetting,
  parseEnv,
  parseEnvWith,
} from "./env.js";
export {
  CONFIG_FILE_NAMES,
  findConfigFile,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  loadConfigModule,
} from "./load-config.js";
export type { RedisClusterNode, RedisClusterSeeds } from "./redis-cluster.js";
