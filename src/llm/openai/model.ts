import type { Model } from "../../agent/index.js";
import type { ModelPrices } from "../usage.js";

/** The `api` of models served by {@link createOpenAIStreamFn}. */
export const OPENAI_COMPLETIONS_API = "openai-completions";

/** The base URL used when neither the model nor the provider options name one. */
export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

/** What {@link openAIModel} needs; everything but `id` has a default. */
export interface OpenAIModelInit {
  /** The model name the server expects, e.g. `gpt-4o-mini` or `qwen2.5:7b`. */
  id: string;
  /** Display name. Default: `id`. */
  name?: string;
  /** Any OpenAI-compatible endpoint, including `/v1`. Default: the stream function's `baseURL`. */
  baseUrl?: string;
  /** Provider name passed to `getApiKey`. Default `"openai"`. */
  provider?: string;
  /** Whether the model reasons; `false` means no `reasoning_effort` is ever sent. */
  reasoning?: boolean;
  /** Accepted inputs. Default `["text", "image"]`; without `"image"`, images are replaced by a note. */
  input?: ("text" | "image")[];
  /** Prices per million tokens; when set, responses carry a cost. */
  cost?: Partial<ModelPrices>;
  /** Default 128 000. */
  contextWindow?: number;
  /** The model's output limit (informational; requests send a limit only when one is configured). Default 16 384. */
  maxTokens?: number;
  /** Extra headers sent with every request for this model. */
  headers?: Record<string, string>;
}

/** Builds a {@link Model} with `api: "openai-completions"` for {@link createOpenAIStreamFn}. */
export function openAIModel(init: OpenAIModelInit): Model {
  const model: Model = {
    id: init.id,
    name: init.name ?? init.id,
    api: OPENAI_COMPLETIONS_API,
    provider: init.provider ?? "openai",
    input: init.input ?? ["text", "image"],
    contextWindow: init.contextWindow ?? 128_000,
    maxTokens: init.maxTokens ?? 16_384,
  };
  if (init.baseUrl !== undefined) model.baseUrl = init.baseUrl;
  if (init.reasoning !== undefined) model.reasoning = init.reasoning;
  if (init.headers !== undefined) model.headers = init.headers;
  if (init.cost !== undefined) {
    model.cost = {
      input: init.cost.input ?? 0,
      output: init.cost.output ?? 0,
      cacheRead: init.cost.cacheRead ?? init.cost.input ?? 0,
      cacheWrite: init.cost.cacheWrite ?? 0,
    };
  }
  return model;
}
