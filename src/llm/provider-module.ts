import type { z } from "zod";
import type { Model } from "../agent/index.js";
import type { ContextWindowInfo } from "./context-tokens.js";
import type { ModelProvider } from "./providers.js";
import type { ModelPrices } from "./usage.js";

/** What a provider's `model` builds a {@link Model} from; everything but `id` has a default. */
export interface ModelInit {
  /** The model name the server expects, e.g. `gpt-4o-mini` or `qwen2.5:7b`. */
  id: string;
  /** Display name. Default: `id`. */
  name?: string;
  /** The model's endpoint. Default: the stream function's `baseURL`, else the provider's. */
  baseUrl?: string;
  /** Whether the model reasons; `false` means no reasoning effort is ever sent. */
  reasoning?: boolean;
  /** Accepted inputs. Default `["text", "image"]`; without `"image"`, images are replaced by a note. */
  input?: ("text" | "image")[];
  /** Prices per million tokens; when set, responses carry a cost. */
  cost?: Partial<ModelPrices>;
  /** Input window in tokens. Default: the provider's (OpenAI-compatible: 128 000). */
  contextWindow?: number;
  /** The model's output limit (informational; requests send a limit only when one is configured). */
  maxTokens?: number;
  /** Extra headers sent with every request for this model. */
  headers?: Record<string, string>;
}

/** A model's list price in USD per million tokens (the built-in price tables; the operator's `prices`). */
export interface ListPrice {
  /** Uncached input (prompt) tokens. */
  input: number;
  /** Input tokens read from the provider's prompt cache; default `input`. */
  cachedInput?: number;
  /** Output tokens (reasoning included unless `reasoning` is set). */
  output: number;
  /** Reasoning tokens, when the provider bills them apart from other output; default `output`. */
  reasoning?: number;
}

/** A provider's environment variables in the terms every provider shares (what {@link ProviderModule.fromEnv} returns). */
export interface ProviderEnvSettings {
  /** The model name. */
  model: string;
  /** The API key, when set. */
  apiKey?: string;
  /** The endpoint, when one is set (else the provider's `defaultBaseURL` is used). */
  baseURL?: string;
  /** The operator's context window in tokens, when set. */
  contextWindow?: number;
  /** Time allowed until response headers arrive, per attempt (ms). */
  headerTimeoutMs: number;
  /** Abandon an answer after this long without any bytes (ms); 0 = off. */
  idleTimeoutMs: number;
  /** Cut an answer at this many characters. */
  maxOutputChars: number;
  /** Inline `<think>…</think>`: thinking, or kept as answer text. */
  thinkTags: "thinking" | "text";
}

/** The names of a provider's variables, quoted by `doctor`, the missing-model hint and the 401 wording. */
export interface ProviderVariables {
  apiKey: string;
  baseURL: string;
  model: string;
  contextWindow: string;
}

/**
 * One model provider, self-described: how it streams (the {@link ModelProvider} part, registered under
 * `api`), its environment variables and what they mean, how a {@link Model} of it is built, how to set it
 * up, its known context windows and its built-in list prices. The configuration, `doctor`, the agent setup,
 * the model window, the missing-model hint and the gateway read the active one (`THREADLINE_MODEL_PROVIDER`,
 * default the first of the table in `registry.ts`) and nothing provider-specific. A new provider is one
 * folder exporting one of these and its entry in that table.
 */
export interface ProviderModule<Env extends z.ZodRawShape = z.ZodRawShape> extends ModelProvider {
  /** Its value of `THREADLINE_MODEL_PROVIDER`, e.g. `openai`. Lowercase letters, digits and `-`. */
  readonly name: string;
  /** The `Model.api` its models carry and it is registered under, e.g. `openai-completions`. */
  readonly api: string;
  /** The endpoint used when no variable names one. */
  readonly defaultBaseURL: string;
  /**
   * Its environment variables (zod schemas by name, made with `env-settings.ts`'s kinds), merged into the
   * environment schema. Names are the provider's own (`OPENAI_*`); two providers never share one.
   */
  readonly env: Env;
  /** Its variables (already validated by {@link env}) in shared terms. Never throws. */
  fromEnv(env: z.output<z.ZodObject<Env>>): ProviderEnvSettings;
  /** The names of its main variables, for messages. */
  readonly variables: ProviderVariables;
  /**
   * What to set when no model is configured (no key and no endpoint), one clause without a final period:
   * `Set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server …`.
   */
  readonly setupHint: string;
  /** Builds a model of this provider (`api` set to {@link api}). Never throws. */
  model(init: ModelInit): Model;
  /** The window known for a model id (configured value first). Default: `contextWindowFor`. */
  contextWindow?(modelId: string, configured?: number): ContextWindowInfo;
  /** Built-in list prices by model id (the operator's `prices` win key by key). Default: none. */
  readonly prices?: Readonly<Record<string, ListPrice>>;
}

/** Types a provider module (and does nothing else); `Env` is inferred from its `env` shape. */
export function defineProvider<const Env extends z.ZodRawShape>(
  module: ProviderModule<Env>,
): ProviderModule<Env> {
  return module;
}
