/**
 * Threadline's model providers, in a registry keyed by `Model.api` ({@link providerFor}); the built-in one
 * streams from any OpenAI-compatible chat-completions endpoint through the official `openai` SDK
 * (`./openai/`). Also the provider-neutral pieces they share (error wording, SSE, streaming JSON, think
 * tags, usage) and the context manager that keeps long threads inside the model's context window.
 */

export {
  type ContextRecoveryOptions,
  createContextRecovery,
  fitMessages,
  type ModelWindow,
} from "./context-fit.js";
export {
  type ContextEvent,
  type ContextManagerOptions,
  type ContextRun,
  type ContextTransform,
  createContextManager,
} from "./context-manager.js";
export {
  asContextSummary,
  CONTEXT_SUMMARY_ROLE,
  type ContextSummaryMessage,
  createModelSummarizer,
  isContextSummary,
  type ModelSummarizerOptions,
  messageFingerprint,
  renderForSummary,
  SUMMARY_PREFIX,
  type SummarizeInput,
  type Summarizer,
  summaryAsUserMessage,
} from "./context-summary.js";
export {
  type ContextWindowInfo,
  contextWindowFor,
  createTokenCounter,
  type TokenCounter,
  type TokenCounterOptions,
  UNKNOWN_CONTEXT_WINDOW,
} from "./context-tokens.js";
export {
  type ConvertToLlmOptions,
  type CustomMessageRenderer,
  createConvertToLlm,
} from "./convert-to-llm.js";
export { failedStreamFn } from "./failed-stream.js";
export { createHttpFetch, type HttpFetch, type HttpFetchOptions } from "./http-fetch.js";
export { createNodeHttpFetch, type NodeHttpFetch, type NodeHttpFetchOptions } from "./node-http-fetch.js";
export {
  authHeaders,
  buildChatRequest,
  type ChatChunk,
  ChatChunkAccumulator,
  type ChatChunkAccumulatorOptions,
  type ChatChunkChoice,
  type ChatChunkDelta,
  type ChatContentPart,
  type ChatReasoningDetail,
  type ChatToolCallDelta,
  contextWindowOf,
  convertToOpenAIMessages,
  createOpenAIStreamFn,
  cutNote,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_OPENAI_BASE_URL,
  DEFAULT_TIMEOUT_MS,
  defaultMaxTokens,
  describeOpenAIFailure,
  EMPTY_TOOL_RESULT_TEXT,
  IMAGE_OMITTED_TEXT,
  MISSING_TOOL_RESULT_TEXT,
  OPENAI_COMPLETIONS_API,
  OpenAIClientPool,
  type OpenAIClientPoolOptions,
  type OpenAIFetch,
  type OpenAIMessageOptions,
  type OpenAIModelInit,
  type OpenAIProviderOptions,
  openAIModel,
  openAIProvider,
  probeModelEndpoint,
  serverContextWindow,
  TOOL_IMAGES_TEXT,
  toolsToOpenAI,
} from "./openai/index.js";
export {
  ABORTED_MESSAGE,
  CUT_OFF_MESSAGE,
  describeFinishReason,
  describeHttpFailure,
  describeProviderFailure,
  describeStreamErrorEvent,
  displayBaseURL,
  type FailureContext,
  formatLimit,
  type HttpFailureInfo,
  type ProviderFailure,
  type ProviderFailureKind,
  retryAfterMs,
  STREAM_CLOSED_MESSAGE,
} from "./provider-errors.js";
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
export { defaultProviders, providerFor, registerProvider } from "./registry.js";
export { SseParser } from "./sse.js";
export { type JsonObject, parseStreamingJson, repairJson } from "./streaming-json.js";
export { type TextChannel, ThinkTagSplitter } from "./think-tags.js";
export { type JsonSchema, toolParametersSchema } from "./tool-schema.js";
export { applyPrices, type ChatUsagePayload, emptyUsage, type ModelPrices, mapUsage } from "./usage.js";
