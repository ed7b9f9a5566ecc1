import type { Model } from "../agent/index.js";
import { OPENAI_COMPLETIONS_API, openAIProvider } from "./openai/index.js";
import { type ModelProvider, ProviderRegistry } from "./providers.js";

/**
 * The process-wide provider registry, with the built-in providers. A new provider is one folder under
 * `src/llm/` and one `.register(api, provider)` here (or a {@link registerProvider} call at start-up).
 */
export const defaultProviders = new ProviderRegistry().register(OPENAI_COMPLETIONS_API, openAIProvider);

/** Registers `provider` for models whose `api` is `api` in {@link defaultProviders}, replacing an earlier one. */
export function registerProvider(api: string, provider: ModelProvider): void {
  defaultProviders.register(api, provider);
}

/** The provider of `model.api` in {@link defaultProviders}. @throws UnknownProviderError when none is registered. */
export function providerFor(model: Pick<Model, "api" | "id">): ModelProvider {
  return defaultProviders.for(model);
}
