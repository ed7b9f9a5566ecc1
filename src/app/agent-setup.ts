import type { Env, ThreadlineConfig } from "../config/index.js";
import { createConvertToLlm, createOpenAIStreamFn, openAIModel } from "../llm/index.js";
import type { AgentSetup, RunLogger, RunTool } from "../runs/index.js";
import type { AnyToolDefinition } from "../tools/index.js";
import { modelSettings, runToolsFactory, systemPromptOf, toolDefinitions } from "./agent-config.js";
import { missingModelHint, unconfiguredModelStreamFn } from "./model-hint.js";
import { adaptiveModelWindow } from "./model-window.js";

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Threadline, an assistant that works inside a chat thread (Slack or Discord).",
  "Several people may write in the thread; each user message starts with its author's name.",
  "Answer concisely in Markdown. Use the tools you have when they help; say what you did.",
].join(" ");

/**
 * The agent every run gets: the configured OpenAI-compatible model, the system prompt, the tools (`tools`
 * first, then built-ins, the config module's and MCP servers', bound per run to the thread's workspace),
 * and a context manager that keeps requests inside the model's window (learned from the server's
 * `/models` and its "context exceeded" errors, see {@link adaptiveModelWindow}). Without a model (no
 * `OPENAI_API_KEY`, no `OPENAI_BASE_URL`) every run ends with a sentence saying what to set.
 */
export function agentSetupFromEnv(
  env: Env,
  tools: RunTool[] = [],
  settings: AgentSetupSettings = {},
): AgentSetup {
  const config = settings.config ?? {};
  const { model: modelOptions, provider: options, window } = modelSettings(env, config);
  const hint = missingModelHint(env);
  const adaptive = adaptiveModelWindow(env, config, window, options, settings.log);
  const setup: AgentSetup = {
    model: openAIModel(modelOptions),
    streamFn: hint ? unconfiguredModelStreamFn(hint) : createOpenAIStreamFn(options),
    convertToLlm: createConvertToLlm(),
    systemPrompt: systemPromptOf(config, DEFAULT_SYSTEM_PROMPT),
    tools: runToolsFactory(env, config, toolDefinitions(config, settings.mcpTools), tools),
  };
  setup.contextTransform = adaptive.contextTransform(setup);
  return setup;
}

/** What {@link agentSetupFromEnv} takes besides the environment. */
export interface AgentSetupSettings {
  /** The validated config module. Default `{}`. */
  config?: ThreadlineConfig;
  /** Tools of the connected MCP servers. */
  mcpTools?: AnyToolDefinition[];
  /** Receives context-trimming events (summaries, failures). */
  log?: RunLogger;
}
