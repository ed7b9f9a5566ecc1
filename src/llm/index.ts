/**
 * Threadline's model providers: a stream function for any OpenAI-compatible chat-completions endpoint
 * (through the official `openai` SDK), the conversions it uses, an endpoint probe for `doctor`, and the
 * context manager that keeps long threads inside the model's context window.
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
export { createHttpFetch, type HttpFetch, type HttpFetchOptions } from "./http-fetch.js";
export { createNodeHttpFetch, type NodeHttpFetch, type NodeHttpFetchOptions } from "./node-http-fetch.js";
export {
  buildChatRequest,
  createOpenAIStreamFn,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  defaultMaxTokens,
  type OpenAIProviderOptions,
  type ReasoningLevel,
} from "./openai.js";
export {
  type ChatChunk,
  ChatChunkAccumulator,
  type ChatChunkAccumulatorOptions,
  type ChatChunkChoice,
  type ChatChunkDelta,
  type ChatContentPart,
  type ChatReasoningDetail,
  type ChatToolCallDelta,
  cutNote,
} from "./openai-chunks.js";
export {
  authHeaders,
  OpenAIClientPool,
  type OpenAIClientPoolOptions,
  type OpenAIFetch,
} from "./openai-client-pool.js";
export {
  convertToOpenAIMessages,
  EMPTY_TOOL_RESULT_TEXT,
  IMAGE_OMITTED_TEXT,
  MISSING_TOOL_RESULT_TEXT,
  type OpenAIMessageOptions,
  TOOL_IMAGES_TEXT,
} from "./openai-messages.js";
export {
  DEFAULT_OPENAI_BASE_URL,
  OPENAI_COMPLETIONS_API,
  type OpenAIModelInit,
  openAIModel,
} from "./openai-model.js";
export type { ContextExceededInfo } from "./openai-response.js";
export { type JsonSchema, toolParametersSchema, toolsToOpenAI } from "./openai-tools.js";
export {
  contextWindowOf,
  type ProbeOptions,
  type ProbeResult,
  probeModelEndpoint,
  serverContextWindow,
} from "./probe.js";
export {
  ABORTED_MESSAGE,
  CUT_OFF_MESSAGE,
  describeFinishReason,
  describeProviderFailure,
  displayBaseURL,
  type FailureContext,
  formatLimit,
  type ProviderFailure,
  type ProviderFailureKind,
  retryAfterMs,
  STREAM_CLOSED_MESSAGE,
} from "./provider-errors.js";
export { SseParser } from "./sse.js";
export { type JsonObject, parseStreamingJson, repairJson } from "./streaming-json.js";
export { type TextChannel, ThinkTagSplitter } from "./think-tags.js";
export { applyPrices, type ChatUsagePayload, emptyUsage, type ModelPrices, mapUsage } from "./usage.js";
