import type { Model } from "../agent/index.js";
import { ConfigError, type Env, type ThreadlineConfig } from "../config/index.js";
import {
  createConvertToLlm,
  displayBaseURL,
  formatLimit,
  type ModelProvider,
  type ProviderOptions,
  providerFor,
  UnknownProviderError,
} from "../llm/index.js";
import type { AgentSetup, RunLogger } from "../runs/index.js";
import { type AgentToolSpec, type AnyToolDefinition, toToolDefinition } from "../tools/index.js";
import { modelSettings, runToolsFactory, systemPromptOf, toolDefinitions } from "./agent-config.js";
import { missingModelHint, unconfiguredModelStreamFn } from "./model-hint.js";
import { adaptiveModelWindow } from "./model-window.js";

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Threadline, an assistant that works inside a chat thread (Slack or Discord).",
  "Several people may write in the thread; each user message starts with its author's name.",
  "Answer concisely in Markdown. Use the tools you have when they help; say what you did.",
].join(" ");

/**
 * The agent every run gets: the configured model, built by the active provider (`THREADLINE_MODEL_PROVIDER`,
 * see {@link modelSettings}), with the stream function of its provider (looked up by `model.api` in the
 * provider registry, see {@link providerFor}), the system prompt, the tools (`tools` —
 * the tools module's —, built-ins, the config module's and MCP servers', one per name as
 * `TOOL_PRECEDENCE` (agent-config.ts) says, bound per run to the thread's workspace),
 * and a context manager that keeps requests inside the model's window (learned from the server and its
 * "context exceeded" errors, see {@link adaptiveModelWindow}). Without a model (neither the provider's key
 * nor its endpoint, e.g. `OPENAI_API_KEY` / `OPENAI_BASE_URL`) every run ends with a sentence saying what to set. With one, logs the model, endpoint
 * and timeouts in use on `settings.log` (once: this runs at worker start-up).
 * @throws ConfigError when no provider is registered for the model's `api`.
 */
export function agentSetupFromEnv(
  env: Env,
  tools: readonly (AnyToolDefinition | AgentToolSpec)[] = [],
  settings: AgentSetupSettings = {},
): AgentSetup {
  const config = settings.config ?? {};
  const { module, model: modelOptions, provider: options, window } = modelSettings(env, config);
  const model = module.model(modelOptions);
  const provider = configuredProvider(model);
  const hint = missingModelHint(env);
  const adaptive = adaptiveModelWindow(model.id, config, window, options, settings.log, provider);
  const setup: AgentSetup = {
    model,
    streamFn: hint ? unconfiguredModelStreamFn(hint) : provider.streamFn(options),
    convertToLlm: createConvertToLlm(),
    systemPrompt: systemPromptOf(config, DEFAULT_SYSTEM_PROMPT),
    tools: runToolsFactory(env, config, offeredTools(config, tools, settings)),
  };
  setup.contextTransform = adaptive.contextTransform(setup);
  // Without a model the gateway already warns with the hint; the worker names the model it uses.
  if (!hint) {
    const endpoint = displayBaseURL(model.baseUrl ?? options.baseURL ?? module.defaultBaseURL);
    settings.log?.info(
      modelInUse(model, endpoint, options, window.source),
      describeModelInUse(model, endpoint, options),
    );
  }
  return setup;
}

/** The worker's tools by `TOOL_PRECEDENCE` (agent-config.ts); each one left out is logged. */
function offeredTools(
  config: ThreadlineConfig,
  tools: readonly (AnyToolDefinition | AgentToolSpec)[],
  settings: AgentSetupSettings,
): AnyToolDefinition[] {
  const module = tools.map((tool, index) => toToolDefinition(tool, `tools[${index}]`));
  return toolDefinitions(config, { module, mcp: settings.mcpTools ?? [] }, (replaced) =>
    settings.log?.info(
      { tool: replaced.name, source: replaced.source, by: replaced.by },
      `tool ${replaced.name}: the ${replaced.by}'s replaces the ${replaced.source}'s (same name)`,
    ),
  );
}

/** The registry's provider for `model`, an unknown `api` reported as a configuration problem. */
function configuredProvider(model: Model): ModelProvider {
  try {
    return providerFor(model);
  } catch (err) {
    if (err instanceof UnknownProviderError) throw new ConfigError([err.message]);
    throw err;
  }
}

/**
 * The start-up log's fields: what every request of this worker will use. `endpoint` is shown without
 * credentials or query (`displayBaseURL`: an Azure-style `?api-key=` never reaches the log).
 */
function modelInUse(
  model: Model,
  endpoint: string,
  options: ProviderOptions,
  windowSource: string,
): Record<string, unknown> {
  return {
    model: model.id,
    api: model.api,
    endpoint,
    contextWindow: model.contextWindow,
    contextWindowSource: windowSource,
    headerTimeoutMs: options.timeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
    maxOutputChars: options.maxOutputChars,
  };
}

/** One sentence: `model gpt-4o at https://…/v1; header timeout 120 s, idle timeout off`. */
function describeModelInUse(model: Model, endpoint: string, options: ProviderOptions): string {
  const limit = (ms: number | undefined) =>
    ms === undefined ? "default" : ms === 0 ? "off" : formatLimit(ms);
  return `model ${model.id} at ${endpoint}; header timeout ${limit(options.timeoutMs)}, idle timeout ${limit(options.idleTimeoutMs)}`;
}

/** What {@link agentSetupFromEnv} takes besides the environment. */
export interface AgentSetupSettings {
  /** The validated config module. Default `{}`. */
  config?: ThreadlineConfig;
  /** Tools of the connected MCP servers. */
  mcpTools?: AnyToolDefinition[];
  /** Receives the start-up line naming the model, and context-trimming events (summaries, failures). */
  log?: RunLogger;
}
