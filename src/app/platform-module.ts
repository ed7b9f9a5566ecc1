import type { z } from "zod";
import type { ChatPlatform, Platform } from "../chat/index.js";
import type { Env as BaseEnv, ThreadlineConfig } from "../config/index.js";
import type { RunLogger, RunsConfig } from "../runs/index.js";
import type { DoctorCheck } from "./doctor.js";
import type { RedisClient } from "./redis.js";

/** What platform factories get from the composition root; `env` holds at least the platform's own variables. */
export interface PlatformDeps<E extends BaseEnv = BaseEnv> {
  env: E;
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

/** The environment a platform module sees: every process's variables and its own. */
export type PlatformEnv<Shape extends z.ZodRawShape> = BaseEnv & z.output<z.ZodObject<Shape>>;

/**
 * One chat platform's wiring, self-described: its environment variables, when it is configured, how it is
 * built from the composition root's dependencies and how `doctor` checks it. The environment schema
 * (`src/app/env.ts`), `createPlatforms`, the playground's fallback, the gateway's warning and `doctor`
 * read the table of these (`CHAT_PLATFORMS` in `platforms.ts`) and nothing platform-specific. A new
 * platform is its adapter folder (`src/<name>/`), one module of this kind (`src/app/<name>-platform.ts`)
 * and its entry in that table.
 */
export interface ChatPlatformModule<Shape extends z.ZodRawShape = z.ZodRawShape> {
  /** The adapter's `Platform` (the `platform` of its `ThreadRef`s), e.g. `slack`. */
  readonly name: Platform;
  /** Its name in messages and `doctor`'s report, e.g. `Slack`. */
  readonly title: string;
  /**
   * Its environment variables (zod schemas by name; `src/config`'s and `src/llm`'s setting kinds), merged
   * into the environment schema. Names are the platform's own (`SLACK_*`); two platforms never share one.
   */
  readonly env: Shape;
  /** The variable that turns it on, quoted by the gateway's warning and `doctor` (`SLACK_BOT_TOKEN`). */
  readonly credentials?: string;
  /** True when its credentials are present (it is built then). Never throws. */
  configured(env: PlatformEnv<Shape>): boolean;
  /**
   * Built also when no other platform is configured, so `threadline start` always has somewhere to talk
   * (the playground). Default false.
   */
  readonly fallback?: boolean;
  /** Problems across its variables (one needs another), in plain words; `[]` when none. Never throws. */
  problems?(env: PlatformEnv<Shape>): readonly string[];
  /**
   * Builds the adapter (called only when it is wanted). Loads its client libraries here, with `import()`,
   * so a process that does not use the platform never loads them.
   */
  create(deps: PlatformDeps<PlatformEnv<Shape>>): Promise<ChatPlatform | undefined>;
  /** `doctor`'s check of its credentials (called only when configured). Never throws. */
  check?(env: PlatformEnv<Shape>): Promise<DoctorCheck>;
}

/** Types a chat platform module (and does nothing else); its environment is inferred from its `env` shape. */
export function definePlatform<const Shape extends z.ZodRawShape>(
  module: ChatPlatformModule<Shape>,
): ChatPlatformModule<Shape> {
  return module;
}
