/** Configuration: environment (and, later, the config module), validated with readable errors. */
export { ConfigError, type Env, envSchema, parseEnv } from "./env.js";
