import type { Env, ThreadlineConfig } from "../config/index.js";
import { type ContextEvent, createContextManager } from "../context/index.js";
import {
  type ContextWindowInfo,
  contextWindowFor,
  createModelSummarizer,
  createTokenCounter,
  defaultMaxTokens,
  type ModelInit,
  type ProviderEnvSettings,
  type ProviderModule,
  type ProviderOptions,
  providerModule,
} from "../llm/index.js";
import type { AgentSetup, RunLogger, RunTool, ToolRunContext } from "../runs/index.js";
import {
  type AnyToolDefinition,
  bindTools,
  builtinTools,
  withApprovalPolicies,
  workspaceDirFor,
} from "../tools/index.js";

/** Root of the per-thread workspaces unless `workspaceDir` / `THREADLINE_WORKSPACE_DIR` say otherwise. */
export const DEFAULT_WORKSPACE_DIR = ".threadline/workspaces";

/** The model provider in use: the built-in one `THREADLINE_MODEL_PROVIDER` names (default `openai`). */
export function activeProvider(env: Env): ProviderModule {
  return providerModule(env.THREADLINE_MODEL_PROVIDER);
}

/** The active provider's variables in shared terms (model, key, endpoint, timeouts). */
export function providerEnv(env: Env): { module: ProviderModule; settings: ProviderEnvSettings } {
  const module = activeProvider(env);
  return { module, settings: module.fromEnv(env) };
}

/** The model in use: its provider, and its settings from the environment refined by the config module. */
export interface ModelConfiguration {
  /** The active provider ({@link activeProvider}). */
  module: ProviderModule;
  /** What the provider's `model` builds the model from. */
  model: ModelInit;
  /** The settings of the provider's stream function. */
  provider: ProviderOptions;
  window: ContextWindowInfo;
}

/** Model and provider settings: the active provider's variables, refined by the config module's `model`. */
export function modelSettings(env: Env, config: ThreadlineConfig): ModelConfiguration {
  const { module, settings: fromEnv } = providerEnv(env);
  const settings = config.model ?? {};
  const id = settings.id ?? fromEnv.model;
  const window = (module.contextWindow ?? contextWindowFor)(
    id,
    settings.contextWindow ?? fromEnv.contextWindow,
  );
  const model: ModelInit = { id, contextWindow: window.tokens };
  const provider: ProviderOptions = { apiKeyHint: module.variables.apiKey };
  if (fromEnv.apiKey) provider.apiKey = fromEnv.apiKey;
  if (fromEnv.baseURL) {
    provider.baseURL = fromEnv.baseURL;
    model.baseUrl = fromEnv.baseURL;
  }
  if (settings.maxOutputTokens !== undefined) {
    provider.maxTokens = settings.maxOutputTokens;
    model.maxTokens = settings.maxOutputTokens;
  }
  provider.timeoutMs = settings.headerTimeoutMs ?? fromEnv.headerTimeoutMs;
  provider.idleTimeoutMs = settings.idleTimeoutMs ?? fromEnv.idleTimeoutMs;
  provider.maxOutputChars = settings.maxOutputChars ?? fromEnv.maxOutputChars;
  provider.thinkTags = settings.thinkTags ?? fromEnv.thinkTags;
  if (settings.temperature !== undefined) provider.temperature = settings.temperature;
  if (settings.reasoning !== undefined) provider.reasoning = settings.reasoning;
  if (settings.headers !== undefined) provider.headers = settings.headers;
  if (settings.prices !== undefined) model.cost = settings.prices;
  return { module, model, provider, window };
}

/** Where a worker's tools come from besides the config module (each list checked by its loader). */
export interface ToolSources {
  /** `THREADLINE_TOOLS_MODULE`'s tools. */
  module?: readonly AnyToolDefinition[];
  /** Tools of the connected MCP servers (`<server>__<tool>`). */
  mcp?: readonly AnyToolDefinition[];
}

/** A tool source, named as the start-up log names it. */
export type ToolSource = "built-in" | "MCP server" | "tools module" | "config module";

/**
 * Which source's tool the model gets when two share a name, weakest first: a config module `tools` entry
 * replaces a `THREADLINE_TOOLS_MODULE` tool, which replaces an MCP server's, which replaces a built-in
 * (the config module wins over the environment, as for every other setting).
 */
export const TOOL_PRECEDENCE: readonly ToolSource[] = [
  "built-in",
  "MCP server",
  "tools module",
  "config module",
];

/** A tool left out because a stronger source has one of the same name. */
export interface ReplacedTool {
  name: string;
  source: ToolSource;
  by: ToolSource;
}

/**
 * The tools a worker offers, one per name ({@link TOOL_PRECEDENCE} decides), in the order tools module,
 * built-ins, config module, MCP servers; then `config.approvals` overrides the policy of any of them by
 * name. `onReplaced` hears of each tool left out.
 */
export function toolDefinitions(
  config: ThreadlineConfig,
  sources: ToolSources = {},
  onReplaced?: (replaced: ReplacedTool) => void,
): AnyToolDefinition[] {
  const bySource: Record<ToolSource, readonly AnyToolDefinition[]> = {
    "tools module": sources.module ?? [],
    "built-in": builtinTools(config.builtinTools),
    "config module": config.tools ?? [],
    "MCP server": sources.mcp ?? [],
  };
  const winner = new Map<string, ToolSource>();
  for (const source of TOOL_PRECEDENCE)
    for (const tool of bySource[source]) {
      const previous = winner.get(tool.name);
      if (previous !== undefined && previous !== source)
        onReplaced?.({ name: tool.name, source: previous, by: source });
      winner.set(tool.name, source);
    }
  const offered = (Object.keys(bySource) as ToolSource[]).flatMap((source) =>
    bySource[source].filter((tool) => winner.get(tool.name) === source),
  );
  return withApprovalPolicies(offered, config.approvals ?? {});
}

/** The per-run tools: each definition bound to the run's thread, requester and workspace. */
export function runToolsFactory(
  env: Env,
  config: ThreadlineConfig,
  definitions: readonly AnyToolDefinition[],
): (ctx: ToolRunContext) => RunTool[] {
  const root = config.workspaceDir ?? env.THREADLINE_WORKSPACE_DIR ?? DEFAULT_WORKSPACE_DIR;
  return (ctx) => bindTools(definitions, { ...ctx, workspaceDir: workspaceDirFor(root, ctx.threadId) });
}

/** The configured system prompt, or `fallback`. */
export function systemPromptOf(config: ThreadlineConfig, fallback: string): AgentSetup["systemPrompt"] {
  const prompt = config.systemPrompt;
  if (typeof prompt !== "function") return prompt ?? fallback;
  return (ctx) => prompt({ threadId: ctx.threadId, thread: ctx.thread, requester: ctx.requester });
}

function logContextEvent(log: RunLogger | undefined, event: ContextEvent): void {
  if (!log) return;
  switch (event.type) {
    case "summarized":
      log.info(
        { covered: event.covered, persisted: event.persisted },
        "older turns summarized to fit the context window",
      );
      break;
    case "summary_failed":
      log.warn(
        { err: event.error },
        "summarizing older turns failed; they are left out of the request instead",
      );
      break;
    case "over_budget":
      log.warn(
        { tokens: event.tokens, budget: event.budget },
        "request still exceeds the context budget after trimming",
      );
      break;
    case "error":
      log.error({ err: event.error }, "context trimming failed");
      break;
    default:
      break;
  }
}

/** The run-level context manager: token budget from the model's window, summaries with the same model. */
export function contextTransformFor(
  setup: Pick<AgentSetup, "model" | "streamFn" | "streamOptions">,
  window: ContextWindowInfo,
  config: ThreadlineConfig,
  log?: RunLogger,
): NonNullable<AgentSetup["contextTransform"]> {
  // Our tokenizer is OpenAI's; other models' tokenizers may count up to a quarter more.
  const counter = createTokenCounter({ safetyFactor: window.openAITokenizer ? 1.05 : 1.25 });
  const maxSummaryTokens = 1_200;
  const summarize =
    config.context?.summarize === false
      ? undefined
      : createModelSummarizer({
          streamFn: setup.streamFn,
          model: setup.model,
          maxInputTokens: Math.max(1_024, window.tokens - maxSummaryTokens - 512),
          maxSummaryTokens,
          counter,
        });
  const options: Parameters<typeof createContextManager>[0] = {
    contextWindow: window.tokens,
    counter,
    onEvent: (event) => logContextEvent(log, event),
  };
  // Reserve what requests ask for as max_tokens, so prompt + limit fit (vLLM refuses a larger sum).
  options.reserveOutputTokens =
    config.model?.maxOutputTokens ?? defaultMaxTokens({ contextWindow: window.tokens, maxTokens: 16_384 });
  if (summarize) options.summarize = summarize;
  return createContextManager(options);
}
