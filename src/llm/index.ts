/**
 * Threadline's model providers: each one a self-describing {@link ProviderModule} (its folder), listed in
 * the table {@link MODEL_PROVIDERS} and registered by `Model.api` ({@link providerFor}); the built-in one
 * streams from any OpenAI-compatible chat-completions endpoint through the official `openai` SDK
 * (`./openai/`). Also the token counter and the context summary messages `src/context` builds on, and the
 * shared HTTP `fetch` (`src/http`, re-exported).
 * This is the package's `threadline/llm` surface; the wire-level pieces (chunk accumulation, SSE,
 * streaming JSON, think tags, error wording) stay inside the folder.
 */

export { createHttpFetch, type HttpFetch, type HttpFetchOptions } from "../http/index.js";
export { type ContextRecoveryOptions, createContextRecovery, type ModelWindow } from "./context-fit.js";
export {
  asContextSummary,
  CONTEXT_SUMMARY_ROLE,
  type ContextSummaryMessage,
  createModelSummarizer,
  isContextSummary,
  type ModelSummarizerOptions,
  messageFingerprint,
  type SummarizeInput,
  type Summarizer,
  summaryAsUserMessage,
} from "./context-summary.js";
export {
  type ContextWindowInfo,
  contextWindowFor,
  createTokenCounter,
  messageTokens,
  rememberMessageTokens,
  type TokenCounter,
  type TokenCounterOptions,
  UNKNOWN_CONTEXT_WINDOW,
} from "./context-tokens.js";
export {
  type ConvertToLlmOptions,
  type CustomMessageRenderer,
  createConvertToLlm,
} from "./convert-to-llm.js";
export {
  contextWindowSetting,
  msOrOffSetting,
  optionalText,
  positiveIntSetting,
  urlSetting,
} from "./env-settings.js";
export { failedStreamFn } from "./failed-stream.js";
export {
  createOpenAIStreamFn,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_OPENAI_BASE_URL,
  DEFAULT_TIMEOUT_MS,
  defaultMaxTokens,
  OPENAI_COMPLETIONS_API,
  type OpenAIFetch,
  type OpenAIMessageOptions,
  type OpenAIModelInit,
  type OpenAIProviderOptions,
  openAIModel,
  openAIProvider,
} from "./openai/index.js";
export {
  displayBaseURL,
  type FailureContext,
  formatLimit,
  type ProviderFailure,
  type ProviderFailureKind,
} from "./provider-errors.js";
export {
  defineProvider,
  type ListPrice,
  type ModelInit,
  type ProviderEnvSettings,
  type ProviderModule,
  type ProviderVariables,
} from "./provider-module.js";
export {
  type ContextExceededInfo,
  type ModelProvider,
  type ProbeOptions,
  type ProbeResult,
  type ProviderFetch,
  type ProviderOptions,
  ProviderRegistry,
  type ReasoningLevel,
  UnknownProviderError,
} from "./providers.js";
export {
  builtinPrices,
  defaultProviders,
  MODEL_PROVIDER_NAMES,
  MODEL_PROVIDERS,
  type ProviderEnvShape,
  providerEnvShape,
  providerFor,
  providerModule,
  registerProvider,
} from "./registry.js";
export type { ModelPrices } from "./usage.js";
