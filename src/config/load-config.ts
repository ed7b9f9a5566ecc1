import { existsSync } from "node:fs";
import { basename, isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ThreadlineConfig } from "./config-module.js";
import { validateConfig } from "./config-schema.js";
import { ConfigError, type Env, parseEnv } from "./env.js";

/** Where Threadline looks for a config module when `THREADLINE_CONFIG` is not set, in this order. */
export const CONFIG_FILE_NAMES = [
  "threadline.config.ts",
  "threadline.config.mts",
  "threadline.config.mjs",
  "threadline.config.js",
] as const;

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Directory the default file names and a relative `THREADLINE_CONFIG` are resolved against. Default `process.cwd()`. */
  cwd?: string;
}

/** The validated environment and config module. */
export interface LoadedConfig<E extends Env = Env> {
  env: E;
  /** `{}` when there is no config module. */
  config: ThreadlineConfig;
  /** The module that was loaded, if any. */
  configPath: string | undefined;
}

/** Finds the config module: `THREADLINE_CONFIG` (which must exist) or the first default name present. */
export function findConfigFile(options: LoadConfigOptions = {}): { path?: string; problem?: string } {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const configured = env.THREADLINE_CONFIG?.trim();
  if (configured) {
    const path = isAbsolute(configured) ? configured : resolve(cwd, configured);
    if (!existsSync(path))
      return {
        problem: `THREADLINE_CONFIG points to ${path}, which does not exist (expected a config module such as ./threadline.config.ts)`,
      };
    return { path };
  }
  for (const name of CONFIG_FILE_NAMES) {
    const path = resolve(cwd, name);
    if (existsSync(path)) return { path };
  }
  return {};
}

const TYPESCRIPT = /\.(ts|mts|cts)$/;

/**
 * Imports a config module. TypeScript loads directly when the process runs under tsx (as the CLI does)
 * or vitest; under plain node, tsx's loader is used when it is installed.
 */
async function importModule(path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if (!TYPESCRIPT.test(path) || (err as NodeJS.ErrnoException).code !== "ERR_UNKNOWN_FILE_EXTENSION")
      throw err;
    let tsImport: (specifier: string, parent: string) => Promise<unknown>;
    try {
      ({ tsImport } = (await import("tsx/esm/api")) as { tsImport: typeof tsImport });
    } catch {
      throw Object.assign(new Error("typescript-without-tsx"), { code: "TL_NEEDS_TSX" });
    }
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
}

/** One line saying why a module could not be loaded; never a stack trace. */
function describeLoadFailure(name: string, err: unknown): string {
  const error = err as Error & { code?: string; problems?: string[] };
  if (error?.code === "TL_NEEDS_TSX")
    return `${name} is TypeScript, which plain node cannot load: start Threadline with tsx (npx tsx src/app/cli.ts) or write the config as threadline.config.mjs`;
  if (error?.name === "ToolDefinitionError")
    return `${name}: ${error.message} (the tool is defined with defineTool in this module)`;
  const first = String(error?.message ?? err)
    .split("\n")[0]!
    .trim();
  if (error?.code === "ERR_MODULE_NOT_FOUND")
    return `${name} imports something that cannot be found: ${first}`;
  if (error?.name === "SyntaxError" || /syntax|unexpected|expected/i.test(first))
    return `${name} has a syntax error: ${first}`;
  return `${name} failed while loading: ${first || "unknown error"}`;
}

/** Imports and validates one config module; returns the config or the problems. */
export async function loadConfigModule(
  path: string,
): Promise<{ config: ThreadlineConfig; problems: string[] }> {
  const name = basename(path);
  let module: Record<string, unknown>;
  try {
    module = await importModule(path);
  } catch (err) {
    return { config: {}, problems: [describeLoadFailure(name, err)] };
  }
  let exported = module.default ?? module.config;
  if (exported === undefined)
    return {
      config: {},
      problems: [`${name} has no default export; end it with export default defineConfig({ … })`],
    };
  if (typeof exported === "function") {
    try {
      exported = await (exported as () => unknown)();
    } catch (err) {
      return { config: {}, problems: [describeLoadFailure(name, err)] };
    }
  }
  const result = validateConfig(name, exported);
  return result.config ? { config: result.config, problems: [] } : { config: {}, problems: result.problems };
}

/**
 * Reads the environment and the config module and validates both.
 * @throws ConfigError listing every problem of both, in plain words (values are never echoed).
 */
export function loadConfig(options?: LoadConfigOptions): Promise<LoadedConfig>;
/**
 * The same with the environment read by `options.parseEnv` (throwing a {@link ConfigError}): the CLI passes
 * `src/app/env.ts`'s, which adds the chat platforms' variables.
 */
export function loadConfig<E extends Env>(
  options: LoadConfigOptions & { parseEnv: (env: NodeJS.ProcessEnv) => E },
): Promise<LoadedConfig<E>>;
export async function loadConfig(
  options: LoadConfigOptions & { parseEnv?: (env: NodeJS.ProcessEnv) => Env } = {},
): Promise<LoadedConfig> {
  const problems: string[] = [];
  let env: Env | undefined;
  try {
    env = (options.parseEnv ?? parseEnv)(options.env ?? process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  const found = findConfigFile(options);
  if (found.problem) problems.push(found.problem);
  let config: ThreadlineConfig = {};
  if (found.path) {
    const loaded = await loadConfigModule(found.path);
    config = loaded.config;
    problems.push(...loaded.problems);
  }
  if (problems.length > 0 || !env) throw new ConfigError(problems);
  return { env, config, configPath: found.path };
}
