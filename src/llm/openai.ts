import type { ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import {
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  type LlmContext,
  type Model,
  type StreamFn,
  type StreamOptions,
  type ThinkingLevel,
} from "../agent/index.js";
import { createNodeHttpFetch } from "./node-http-fetch.js";
import { type ChatChunk, ChatChunkAccumulator } from "./openai-chunks.js";
import { authHeaders, OpenAIClientPool, type OpenAIFetch } from "./openai-client-pool.js";
import { convertToOpenAIMessages, type OpenAIMessageOptions } from "./openai-messages.js";
import { DEFAULT_OPENAI_BASE_URL } from "./openai-model.js";
import { toolsToOpenAI } from "./openai-tools.js";
import {
  ABORTED_MESSAGE,
  describeProviderFailure,
  type FailureContext,
  StreamIdleTimeoutError,
} from "./provider-errors.js";
import type { ModelPrices } from "./usage.js";

/** Reasoning levels as the loop names them (`"off"` is never passed). */
export type ReasoningLevel = Exclude<ThinkingLevel, "off">;

/** Configuration of {@link createOpenAIStreamFn}. Per-request {@link StreamOptions} override the defaults here. */
export interface OpenAIProviderOptions extends OpenAIMessageOptions {
  /** Key used when the request carries none (the loop passes `getApiKey`'s result as `apiKey`). No key: no `Authorization` header. */
  apiKey?: string;
  /** Endpoint for models without `baseUrl`. Default `https://api.openai.com/v1`. */
  baseURL?: string;
  /** Headers on every request (model and request headers are added on top). */
  headers?: Record<string, string>;
  /** SDK retries for connection errors, 408/409/429 and 5xx (honouring `retry-after`). Default 2. */
  maxRetries?: number;
  /** Time allowed until response headers arrive, per attempt. Default 120 000 ms. */
  timeoutMs?: number;
  /** Abandon a stream that sends nothing for this long after it started. Default: no limit. */
  idleTimeoutMs?: number;
  /** Sampling temperature. Default: not sent. */
  temperature?: number;
  /** Output token limit. Default: not sent. */
  maxTokens?: number;
  /** Body field for `maxTokens`. Default `max_completion_tokens` on api.openai.com, else `max_tokens`. */
  maxTokensField?: "max_completion_tokens" | "max_tokens";
  /** Default reasoning effort, sent as `reasoning_effort` unless the model has `reasoning: false`. */
  reasoning?: ReasoningLevel;
  /** Ask for a usage chunk (`stream_options.include_usage`). Default `true`. */
  includeUsage?: boolean;
  /** Prices per million tokens by model id; they win over `model.cost`. */
  prices?: Record<string, Partial<ModelPrices>>;
  /** Extra body fields for provider-specific parameters (e.g. `{ top_k: 40 }`); the adapter's own fields win. */
  extraBody?: Record<string, unknown>;
  /**
   * The SDK's `fetch`. Default: a {@link createNodeHttpFetch} with keep-alive agents, owned by this
   * stream function (about half the CPU per request of Node's global `fetch`; see `npm run bench:llm`).
   * Pass `globalThis.fetch` (or an undici-based fetch) for proxies or other dispatchers.
   */
  fetch?: OpenAIFetch;
  /** `OpenAI-Organization` / `OpenAI-Project` headers. Default: none. */
  organization?: string;
  project?: string;
  /** Where users configure the key, quoted in the 401 message. Default `OPENAI_API_KEY`. */
  apiKeyHint?: string;
}

/** The default request timeout (until headers), per attempt. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** The default number of SDK retries. */
export const DEFAULT_MAX_RETRIES = 2;

const REASONING_EFFORT: Record<ReasoningLevel, "minimal" | "low" | "medium" | "high" | "xhigh"> = {
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "xhigh",
  max: "xhigh",
};

function resolvePrices(options: OpenAIProviderOptions, model: Model): ModelPrices | undefined {
  const configured = options.prices?.[model.id];
  if (!configured) return model.cost;
  return {
    input: configured.input ?? 0,
    output: configured.output ?? 0,
    cacheRead: configured.cacheRead ?? configured.input ?? 0,
    cacheWrite: configured.cacheWrite ?? 0,
  };
}

/** The chat-completions request body for one model call. May throw (e.g. an unconvertible tool schema). */
export function buildChatRequest(
  model: Model,
  context: LlmContext,
  request: StreamOptions,
  provider: OpenAIProviderOptions = {},
  baseURL = model.baseUrl ?? provider.baseURL ?? DEFAULT_OPENAI_BASE_URL,
): ChatCompletionCreateParamsStreaming {
  const body: ChatCompletionCreateParamsStreaming = {
    ...provider.extraBody,
    model: model.id,
    messages: convertToOpenAIMessages(context.systemPrompt, context.messages, model, provider),
    stream: true,
  };
  if (provider.includeUsage !== false) body.stream_options = { include_usage: true };
  if (context.tools && context.tools.length > 0) body.tools = toolsToOpenAI(context.tools);
  const temperature = request.temperature ?? provider.temperature;
  if (temperature !== undefined) body.temperature = temperature;
  const maxTokens = request.maxTokens ?? provider.maxTokens;
  if (maxTokens !== undefined) {
    const field =
      provider.maxTokensField ??
      (baseURL.includes("api.openai.com") ? "max_completion_tokens" : "max_tokens");
    body[field] = maxTokens;
  }
  const reasoning = request.reasoning ?? provider.reasoning;
  if (reasoning !== undefined && model.reasoning !== false)
    body.reasoning_effort = REASONING_EFFORT[reasoning];
  return body;
}

/**
 * A {@link StreamFn} for any OpenAI-compatible chat-completions endpoint, built on the official `openai`
 * SDK. One SDK client per base URL is reused for every request (connections are kept alive); the API
 * key travels per request. Events follow spec §11: `start` once response headers arrived, `*_start` /
 * `*_delta` as chunks arrive, all `*_end` at the end of the stream, then `done`; failures end with an
 * `error` event whose message has `stopReason: "error"` (a human `errorMessage`) or `"aborted"`
 * (`"Request was aborted"`). The returned function never throws and its stream always completes.
 */
export function createOpenAIStreamFn(provider: OpenAIProviderOptions = {}): StreamFn {
  const poolOptions: ConstructorParameters<typeof OpenAIClientPool>[0] = {};
  if (provider.headers) poolOptions.defaultHeaders = provider.headers;
  poolOptions.fetch = provider.fetch ?? createNodeHttpFetch();
  if (provider.organization) poolOptions.organization = provider.organization;
  if (provider.project) poolOptions.project = provider.project;
  const pool = new OpenAIClientPool(poolOptions);

  return (model, context, options) => {
    const stream = createAssistantMessageEventStream();
    void streamChat(pool, provider, model, context, options, stream).catch((err: unknown) => {
      // Last resort: streamChat handles its own failures; this only guards against bugs in it.
      const accumulator = new ChatChunkAccumulator(model, (event) => stream.push(event));
      accumulator.fail(
        "error",
        `The model request failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    return stream;
  };
}

/** Aborts the SDK request when the caller aborts or the stream goes quiet for `idleMs`. */
class RequestSignal {
  readonly signal: AbortSignal | undefined;
  idleFired = false;
  private readonly controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly forward: (() => void) | undefined;

  constructor(
    private readonly caller: AbortSignal | undefined,
    private readonly idleMs: number | undefined,
  ) {
    if (idleMs === undefined) {
      this.signal = caller;
      return;
    }
    const controller = new AbortController();
    this.controller = controller;
    this.signal = controller.signal;
    if (caller) {
      this.forward = () => controller.abort(caller.reason);
      caller.addEventListener("abort", this.forward, { once: true });
    }
  }

  /** Starts or restarts the idle timer (call on every chunk). */
  touch(): void {
    if (this.idleMs === undefined) return;
    if (this.timer) {
      this.timer.refresh();
      return;
    }
    this.timer = setTimeout(() => {
      this.idleFired = true;
      this.controller?.abort();
    }, this.idleMs);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.forward) this.caller?.removeEventListener("abort", this.forward);
  }
}

async function streamChat(
  pool: OpenAIClientPool,
  provider: OpenAIProviderOptions,
  model: Model,
  context: LlmContext,
  options: StreamOptions,
  stream: AssistantMessageEventStream,
): Promise<void> {
  const accumulator = new ChatChunkAccumulator(
    model,
    (event) => stream.push(event),
    resolvePrices(provider, model),
  );
  const baseURL = model.baseUrl ?? provider.baseURL ?? DEFAULT_OPENAI_BASE_URL;
  const apiKey = options.apiKey || provider.apiKey;
  const timeoutMs = requestTimeout(provider, options);
  const failure: FailureContext = {
    baseURL,
    model: model.id,
    apiKey,
    timeoutMs,
    streamStarted: false,
    apiKeyHint: provider.apiKeyHint,
  };
  const request = new RequestSignal(options.signal, provider.idleTimeoutMs);
  try {
    if (options.signal?.aborted) {
      accumulator.fail("aborted", ABORTED_MESSAGE);
      return;
    }
    let body: ChatCompletionCreateParamsStreaming;
    try {
      body = buildChatRequest(model, context, options, provider, baseURL);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      accumulator.fail("error", `Could not build the model request: ${reason}`);
      return;
    }
    const chunks = await pool
      .get(baseURL)
      .chat.completions.create(body, sdkRequestOptions(provider, model, options, apiKey, request.signal));
    failure.streamStarted = true;
    accumulator.start();
    request.touch();
    for await (const chunk of chunks) {
      request.touch();
      accumulator.add(chunk as ChatChunk);
    }
    if (options.signal?.aborted) accumulator.fail("aborted", ABORTED_MESSAGE);
    else if (request.idleFired) idleFailure(accumulator, provider.idleTimeoutMs ?? 0, failure);
    else accumulator.finish();
  } catch (err) {
    if (options.signal?.aborted) accumulator.fail("aborted", ABORTED_MESSAGE);
    else if (request.idleFired) idleFailure(accumulator, provider.idleTimeoutMs ?? 0, failure);
    else {
      const described = describeProviderFailure(err, failure);
      accumulator.fail(described.kind === "aborted" ? "aborted" : "error", described.message);
    }
  } finally {
    request.dispose();
  }
}

/** The SDK wants a positive integer. */
function requestTimeout(provider: OpenAIProviderOptions, options: StreamOptions): number {
  return Math.max(1, Math.round(options.timeoutMs ?? provider.timeoutMs ?? DEFAULT_TIMEOUT_MS));
}

/** Per-request SDK options: retries, timeout, headers (model, request, auth) and the abort signal. */
function sdkRequestOptions(
  provider: OpenAIProviderOptions,
  model: Model,
  options: StreamOptions,
  apiKey: string | undefined,
  signal: AbortSignal | undefined,
) {
  return {
    maxRetries: Math.max(0, Math.floor(options.maxRetries ?? provider.maxRetries ?? DEFAULT_MAX_RETRIES)),
    timeout: requestTimeout(provider, options),
    headers: { ...model.headers, ...options.headers, ...authHeaders(apiKey) },
    ...(signal ? { signal } : {}),
  };
}

function idleFailure(accumulator: ChatChunkAccumulator, idleMs: number, failure: FailureContext): void {
  accumulator.fail("error", describeProviderFailure(new StreamIdleTimeoutError(idleMs), failure).message);
}
