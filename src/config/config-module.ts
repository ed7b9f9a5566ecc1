import type { z } from "zod";
import type { AnyToolDefinition, ToolThread, ToolUser } from "../tools/index.js";
import type { configSchema } from "./config-schema.js";

/** Model settings that code expresses better than environment variables (`model` in the config module). */
export type ModelSettings = NonNullable<ThreadlineConfig["model"]>;

/** What a system prompt function gets. */
export interface SystemPromptContext {
  threadId: string;
  thread: ToolThread;
  requester: ToolUser;
}

/** How long threads are kept inside the model's context window (`context`). */
export type ContextSettings = NonNullable<ThreadlineConfig["context"]>;

/**
 * `T` with optional fields that, when present, hold a value (what `exactOptionalPropertyTypes` means by
 * `field?: X`): zod's inferred optional fields also admit `undefined`. Functions, tools and zod schemas
 * are left as they are.
 */
export type ExactOptional<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends AnyToolDefinition
    ? T
    : T extends readonly (infer U)[]
      ? ExactOptional<U>[]
      : T extends object
        ? { [K in keyof T]: ExactOptional<Exclude<T[K], undefined>> }
        : T;

/**
 * The config module (`threadline.config.ts` / `.mjs`, or the file `THREADLINE_CONFIG` names): what code
 * expresses better than environment variables. Every field is optional. Values set here win over the
 * matching environment variables; approver lists are merged. The type is {@link configSchema}'s, whose
 * fields carry the documentation.
 */
export type ThreadlineConfig = ExactOptional<z.input<typeof configSchema>>;
/** A prompt Slack offers in the bot's DM (shown by its title; clicking it sends `message`). */
export type SuggestedPrompt = NonNullable<SlackSettings["suggestedPrompts"]>[number];

/** Slack-only settings of the config module (`slack`). */
export type SlackSettings = NonNullable<ThreadlineConfig["slack"]>;

/** The prompts a DM offers by default (the same as `slack/manifest.json`'s `agent_view.suggested_prompts`). */
export const DEFAULT_SUGGESTED_PROMPTS: readonly SuggestedPrompt[] = [
  { title: "What can you do?", message: "What can you help me with, and which tools can you use?" },
  { title: "Summarize a thread", message: "Summarize this thread and list the open questions." },
];

/**
 * Types a config module's default export (and does nothing else).
 * @example
 * export default defineConfig({ systemPrompt: "You are our ops bot.", tools: [getWeather] });
 */
export function defineConfig(config: ThreadlineConfig): ThreadlineConfig {
  return config;
}
