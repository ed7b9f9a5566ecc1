import type { Model } from "../../agent/index.js";
import type { ModelInit } from "../provider-module.js";

/** The `api` of models served by {@link createOpenAIStreamFn}. */
export const OPENAI_COMPLETIONS_API = "openai-completions";

/** The base URL used when neither the model nor the provider options name one. */
export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

/** What {@link openAIModel} needs: a {@link ModelInit}, and the provider name passed to `getApiKey`. */
export interface OpenAIModelInit extends ModelInit {
  /** Provider name passed to `getApiKey`. Default `"openai"`. */
  provider?: string;
}

/** Builds a {@link Model} with `api: "openai-completions"` for {@link createOpenAIStreamFn}; context window default 128 000, output limit 16 384. */
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
