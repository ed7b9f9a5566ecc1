import type { ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import {
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  type LlmContext,
  type Model,
  type StreamFn,
  type StreamOptions,
} from "../../agent/index.js";
import { createHttpFetch } from "../../http/index.js";
import { ABORTED_MESSAGE, type FailureContext } from "../provider-errors.js";
import type { ContextExceededInfo, ProviderOptions, ReasoningLevel } from "../providers.js";
import { RequestSignal } from "../request-signal.js";
import type { ModelPrices } from "../usage.js";
import { ChatChunkAccumulator } from "./chunks.js";
import { authHeaders, OpenAIClientPool, type OpenAIFetch } from "./client-pool.js";
import { describeOpenAIFailure } from "./errors.js";
import { type OpenAIMessageCache, openAIMessagesJson, sharedMessageCache } from "./message-cache.js";
import { convertToOpenAIMessages, type OpenAIMessageOptions } from "./messages.js";
import { DEFAULT_OPENAI_BASE_URL } from "./model.js";
import { readChatResponse } from "./response.js";
import { toolsToOpenAI } from "./tools.js";

/**
 * Configuration of {@link createOpenAIStreamFn}: the {@link ProviderOptions} every provider takes, with
 * these defaults — `baseURL` `https://api.openai.com/v1`; `maxRetries` 2; `timeoutMs` 120 000 ms;
 * `idleTimeoutMs` 120 000 ms (SSE keep-alive comments count as data); `maxOutputChars` 200 000 (then the
 * message ends with `stopReason: "length"` and a note); `maxTokens` {@link defaultMaxTokens} of the model;
 * `reasoning` sent as `reasoning_effort`; `apiKeyHint` `OPENAI_API_KEY` — plus the chat-completions
 * specifics below. No key: no `Authorization` header.
 */
export interface OpenAIProviderOptions extends ProviderOptions, OpenAIMessageOptions {
  /** Body field for `maxTokens`. Default `max_completion_tokens` on api.openai.com, else `max_tokens`. */
  maxTokensField?: "max_completion_tokens" | "max_tokens";
  /** Ask for a usage chunk (`stream_options.include_usage`). Default `true`. */
  includeUsage?: boolean;
  /** Extra body fields for provider-specific parameters (e.g. `{ top_k: 40 }`); the adapter's own fields win. */
  extraBody?: Record<string, unknown>;
  /**
   * The SDK's `fetch`. Default: a {@link createHttpFetch} (undici with a keep-alive `Agent`), owned by
   * this stream function. Pass `createHttpFetch({ dispatcher: new ProxyAgent(…) })` for a proxy.
   */
  fetch?: OpenAIFetch;
  /** `OpenAI-Organization` / `OpenAI-Project` headers. Default: none. */
  organization?: string;
  project?: string;
  /**
   * Where each message's request JSON is kept between requests. Default: one cache shared by every
   * stream function of the process (it holds nothing longer than the transcripts do).
   */
  messageCache?: OpenAIMessageCache;
}

/** The default header timeout (until response headers arrive), per attempt. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** The default idle timeout of a started stream. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** The default cap on an answer's characters. */
export const DEFAULT_MAX_OUTPUT_CHARS = 200_000;

/**
 * The output limit sent when none is configured: a quarter of the model's context window, at least 256
 * and at most the model's `maxTokens`. The context manager reserves the same amount (so prompt + limit
 * fit servers such as vLLM that refuse a request whose sum exceeds the window).
 */
export function defaultMaxTokens(model: Pick<Model, "contextWindow" | "maxTokens">): number {
  return Math.max(256, Math.min(model.maxTokens, Math.floor(model.contextWindow / 4)));
}
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
  return {
    ...requestFields(model, context, request, provider, baseURL),
    messages: convertToOpenAIMessages(context.systemPrompt, context.messages, model, provider),
  };
}

/**
 * {@link buildChatRequest}'s body as the JSON text the provider sends (the same JSON once parsed), its
 * messages taken from `cache`: the cost of a request does not grow with the messages earlier requests
 * already sent. May throw like {@link buildChatRequest}.
 */
export function buildChatRequestJson(
  model: Model,
  context: LlmContext,
  request: StreamOptions,
  provider: OpenAIProviderOptions = {},
  baseURL = model.baseUrl ?? provider.baseURL ?? DEFAULT_OPENAI_BASE_URL,
  cache: OpenAIMessageCache = provider.messageCache ?? sharedMessageCache,
): string {
  const messages = openAIMessagesJson(context.systemPrompt, context.messages, model, provider, cache);
  // The other fields always include `model` and `stream`, so their object is never empty.
  const rest = JSON.stringify(requestFields(model, context, request, provider, baseURL));
  return `{"messages":${messages},${rest.slice(1)}`;
}

/** Every field of the body but `messages` (an `extraBody` one included: the adapter's own wins). */
function requestFields(
  model: Model,
  context: LlmContext,
  request: StreamOptions,
  provider: OpenAIProviderOptions,
  baseURL: string,
): Omit<ChatCompletionCreateParamsStreaming, "messages"> {
  const body: Omit<ChatCompletionCreateParamsStreaming, "messages"> & { messages?: unknown } = {
    ...provider.extraBody,
    model: model.id,
    stream: true,
  };
  delete body.messages;
  if (provider.includeUsage !== false) body.stream_options = { include_usage: true };
  if (context.tools && context.tools.length > 0) body.tools = toolsToOpenAI(context.tools);
  const temperature = request.temperature ?? provider.temperature;
  if (temperature !== undefined) body.temperature = temperature;
  const configured = request.maxTokens ?? provider.maxTokens;
  const maxTokens = configured === null ? undefined : (configured ?? defaultMaxTokens(model));
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
 * key travels per request. Events follow docs/agent-loop.md §5: `start` once response headers arrived,
 * `*_start` / `*_delta` as chunks arrive, all `*_end` at the end of the stream, then `done`; failures end
 * with an `error` event whose message has `stopReason: "error"` (a human `errorMessage`) or `"aborted"`
 * (`"Request was aborted"`). The returned function never throws and its stream always completes.
 */
export function createOpenAIStreamFn(provider: OpenAIProviderOptions = {}): StreamFn {
  const poolOptions: ConstructorParameters<typeof OpenAIClientPool>[0] = {};
  if (provider.headers) poolOptions.defaultHeaders = provider.headers;
  poolOptions.fetch = wrapErrorBodies(provider.fetch ?? createHttpFetch());
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

async function streamChat(
  pool: OpenAIClientPool,
  provider: OpenAIProviderOptions,
  model: Model,
  context: LlmContext,
  options: StreamOptions,
  stream: AssistantMessageEventStream,
): Promise<void> {
  const accumulator = new ChatChunkAccumulator(model, (event) => stream.push(event), {
    prices: resolvePrices(provider, model),
    thinkTags: provider.thinkTags,
  });
  const baseURL = model.baseUrl ?? provider.baseURL ?? DEFAULT_OPENAI_BASE_URL;
  const apiKey = options.apiKey || provider.apiKey;
  const timeoutMs = requestTimeout(provider, options);
  const idleMs = provider.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const failure: FailureContext = {
    baseURL,
    model: model.id,
    apiKey,
    timeoutMs,
    streamStarted: false,
    apiKeyHint: provider.apiKeyHint,
  };
  if (options.signal?.aborted) {
    accumulator.fail("aborted", ABORTED_MESSAGE);
    return;
  }
  let current = context;
  for (let attempt = 0; ; attempt++) {
    const request = new RequestSignal(options.signal, idleMs > 0 ? idleMs : undefined);
    try {
      let body: string;
      try {
        body = buildChatRequestJson(model, current, options, provider, baseURL);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        accumulator.fail("error", `Could not build the model request: ${reason}`);
        return;
      }
      // The SDK's own request path (retries, timeouts, headers, errors) with the body already encoded:
      // a string body with a content-type header is sent as it is.
      const response = await pool
        .get(baseURL)
        .post("/chat/completions", {
          ...sdkRequestOptions(provider, model, options, apiKey, request.signal),
          body,
          stream: true,
        })
        .asResponse();
      failure.streamStarted = true;
      accumulator.start();
      request.touch();
      await readChatResponse(response, accumulator, request, {
        maxOutputChars: provider.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS,
      });
      return;
    } catch (err) {
      if (options.signal?.aborted) {
        accumulator.fail("aborted", ABORTED_MESSAGE);
        return;
      }
      if (request.idleFired) {
        accumulator.fail("error", request.idleMessage(failure));
        return;
      }
      const described = describeOpenAIFailure(err, failure);
      // Retried only before any answer streamed (a partial answer stays as it is) and never after a stop.
      const retryable = !failure.streamStarted && attempt === 0 && provider.onContextExceeded;
      if (described.kind === "context-exceeded" && retryable) {
        const smaller = await smallerContext(provider, { model, context: current, failure: described });
        if (options.signal?.aborted) {
          accumulator.fail("aborted", ABORTED_MESSAGE);
          return;
        }
        if (smaller) {
          current = smaller;
          continue;
        }
      }
      accumulator.fail(described.kind === "aborted" ? "aborted" : "error", described.message);
      return;
    } finally {
      request.dispose();
    }
  }
}

async function smallerContext(
  provider: OpenAIProviderOptions,
  info: ContextExceededInfo,
): Promise<LlmContext | undefined> {
  try {
    return (await provider.onContextExceeded?.(info)) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Error answers whose JSON is the error itself (`{"object":"error","message":…}`, as older vLLM and
 * others send) are re-wrapped as `{"error": …}`: the SDK reads only the `error` key and would drop them.
 */
function wrapErrorBodies(fetchImpl: OpenAIFetch): OpenAIFetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    if (response.ok || !(response.headers.get("content-type") ?? "").includes("json")) return response;
    const text = await response.text();
    let body = text;
    try {
      const parsed = JSON.parse(text) as Record<string, unknown> | null;
      if (
        parsed &&
        typeof parsed === "object" &&
        !("error" in parsed) &&
        typeof parsed.message === "string"
      ) {
        body = JSON.stringify({ error: parsed });
      }
    } catch {
      // Not JSON after all: hand it on unchanged.
    }
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
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
    // The JSON content type first, where the SDK's encoder put it: model and request headers still win.
    headers: {
      "content-type": "application/json",
      ...model.headers,
      ...options.headers,
      ...authHeaders(apiKey),
    },
    ...(signal ? { signal } : {}),
  };
}
