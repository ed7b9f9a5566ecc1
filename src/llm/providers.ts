import type { LlmContext, Model, StreamFn, ThinkingLevel } from "../agent/index.js";
import type { FetchFunction } from "../http/index.js";
import type { FailureContext, ProviderFailure } from "./provider-errors.js";
import type { ModelPrices } from "./usage.js";

/** A `fetch` a provider's client can use (the global `fetch`'s shape). */
export type ProviderFetch = FetchFunction;

/** Reasoning levels as the loop names them (`"off"` is never passed). */
export type ReasoningLevel = Exclude<ThinkingLevel, "off">;

/** What {@link ProviderOptions.onContextExceeded} gets. */
export interface ContextExceededInfo {
  model: Model;
  /** The context of the refused request. */
  context: LlmContext;
  /** The classified failure (`kind: "context-exceeded"`), with the server's window when it said. */
  failure: ProviderFailure;
}

/**
 * The settings every provider understands (a provider may take more; see its own options type). Per-request
 * `StreamOptions` override these defaults.
 */
export interface ProviderOptions {
  /** Key used when the request carries none (the loop passes `getApiKey`'s result as `apiKey`). */
  apiKey?: string;
  /** Endpoint for models without `baseUrl`. Default: the provider's. */
  baseURL?: string;
  /** Headers on every request (model and request headers are added on top). */
  headers?: Record<string, string>;
  /** Client retries for connection errors, 408/409/429 and 5xx. Default: the provider's (OpenAI: 2). */
  maxRetries?: number;
  /** Header timeout: time allowed until response headers arrive, per attempt. */
  timeoutMs?: number;
  /** Idle timeout: abandon a stream when no bytes at all arrived for this long. `0` turns it off. */
  idleTimeoutMs?: number;
  /** Stop reading an answer once its text, thinking and tool arguments reach this many characters. */
  maxOutputChars?: number;
  /** Inline `<think>…</think>` at the start of the answer: thinking (default) or kept as `"text"`. */
  thinkTags?: "thinking" | "text";
  /**
   * Called once per request when the server refused it as longer than its context window, before any
   * answer streamed. Return a smaller context to retry once with it, or `undefined` to fail. May throw
   * (treated as `undefined`).
   */
  onContextExceeded?: (info: ContextExceededInfo) => LlmContext | undefined | Promise<LlmContext | undefined>;
  /** Sampling temperature. Default: not sent. */
  temperature?: number;
  /** Output token limit; `null` sends none. Default: the provider's. */
  maxTokens?: number | null;
  /** Default reasoning effort, unless the model has `reasoning: false`. */
  reasoning?: ReasoningLevel;
  /** Prices per million tokens by model id; they win over `model.cost`. */
  prices?: Record<string, Partial<ModelPrices>>;
  /** Where users configure the key, quoted in the 401 message. */
  apiKeyHint?: string;
}

/** What {@link ModelProvider.probe} checks. */
export interface ProbeOptions {
  /** The endpoint, e.g. an OpenAI-compatible one including `/v1`. */
  baseURL: string;
  /** The model that should be served there. */
  model: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Per request. Default 10 000 ms. */
  timeoutMs?: number;
  /** Default: a private keep-alive `fetch`, closed when the probe ends. */
  fetch?: ProviderFetch;
  /** Where users configure the key, quoted in the 401 verdict. */
  apiKeyHint?: string;
}

/** The verdict of a probe: `ok` with how it was established, or the failure that stopped it. */
export type ProbeResult =
  | { ok: true; verdict: string; via: "models" | "chat"; models?: string[]; contextWindow?: number }
  | { ok: false; verdict: string; failure: ProviderFailure; models?: string[] };

/**
 * One model provider: how to stream from it and, optionally, how to word its client's errors and check an
 * endpoint. A provider serves the models whose `api` it is registered under.
 */
export interface ModelProvider {
  /** The stream function for these settings (it owns its connections). Never throws for valid settings. */
  streamFn(options: ProviderOptions): StreamFn;
  /** Words anything its client throws as a {@link ProviderFailure}. Never throws. */
  describeError?(err: unknown, ctx: FailureContext): ProviderFailure;
  /** Checks that `options.model` is usable at `options.baseURL` (for `doctor`). Never throws. */
  probe?(options: ProbeOptions): Promise<ProbeResult>;
  /** The context window the server reports for the model, or `undefined`. Never throws. */
  serverContextWindow?(options: ProbeOptions): Promise<number | undefined>;
}

/** Thrown by {@link ProviderRegistry.for} for a model whose `api` no provider is registered under. */
export class UnknownProviderError extends Error {
  constructor(
    readonly api: string,
    readonly model: string,
    readonly known: readonly string[],
  ) {
    super(
      `No model provider handles api "${api}" (model "${model}"); registered: ${
        known.length > 0 ? known.map((name) => `"${name}"`).join(", ") : "none"
      }.`,
    );
    this.name = "UnknownProviderError";
  }
}

/** Model providers keyed by `Model.api`. */
export class ProviderRegistry {
  private readonly providers = new Map<string, ModelProvider>();

  /** Registers `provider` for models with this `api`, replacing an earlier one. Returns the registry. */
  register(api: string, provider: ModelProvider): this {
    if (api.trim() === "") throw new Error("A model provider needs a non-empty api name");
    this.providers.set(api, provider);
    return this;
  }

  /** The provider of `model.api`. @throws UnknownProviderError when none is registered. */
  for(model: Pick<Model, "api" | "id">): ModelProvider {
    const provider = this.providers.get(model.api);
    if (!provider) throw new UnknownProviderError(model.api, model.id, this.apis());
    return provider;
  }

  /** Whether a provider is registered for `api`. */
  has(api: string): boolean {
    return this.providers.has(api);
  }

  /** The registered api names, in registration order. */
  apis(): string[] {
    return [...this.providers.keys()];
  }
}
