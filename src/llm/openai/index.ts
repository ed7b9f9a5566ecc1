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
} from "./chunks.js";
export {
  authHeaders,
  OpenAIClientPool,
  type OpenAIClientPoolOptions,
  type OpenAIFetch,
} from "./client-pool.js";
export { describeOpenAIFailure } from "./errors.js";
export { OpenAIMessageCache } from "./message-cache.js";
export {
  convertToOpenAIMessages,
  EMPTY_TOOL_RESULT_TEXT,
  IMAGE_OMITTED_TEXT,
  INTERRUPTED_ANSWER_TEXT,
  MISSING_TOOL_RESULT_TEXT,
  type OpenAIMessageOptions,
  TOOL_IMAGES_TEXT,
} from "./messages.js";
export {
  DEFAULT_OPENAI_BASE_URL,
  OPENAI_COMPLETIONS_API,
  type OpenAIModelInit,
  openAIModel,
} from "./model.js";
export { OPENAI_PRICES } from "./prices.js";
export { contextWindowOf, probeModelEndpoint, serverContextWindow } from "./probe.js";
export { openAIProvider } from "./provider.js";
export {
  buildChatRequest,
  createOpenAIStreamFn,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_CHARS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  defaultMaxTokens,
  type OpenAIProviderOptions,
} from "./stream.js";
export { toolsToOpenAI } from "./tools.js";
