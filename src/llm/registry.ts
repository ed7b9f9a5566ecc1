import type { Model } from "../agent/index.js";
import { openAIProvider } from "./openai/index.js";
import type { ListPrice, ProviderModule } from "./provider-module.js";
import { type ModelProvider, ProviderRegistry } from "./providers.js";

/**
 * The built-in model providers, one entry per provider folder under `src/llm/`. The first is the default
 * of `THREADLINE_MODEL_PROVIDER`. The environment schema, `doctor`, the agent setup, the model window, the
 * missing-model hint, the gateway and the built-in prices read this table and nothing provider-specific:
 * a new provider is its folder (exporting a {@link ProviderModule}) and its entry here.
 */
export const MODEL_PROVIDERS = [openAIProvider] as const;

/** The names `THREADLINE_MODEL_PROVIDER` accepts, the default first. */
export const MODEL_PROVIDER_NAMES = MODEL_PROVIDERS.map((provider) => provider.name) as [string, ...string[]];

type Intersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void
  ? I
  : never;

/** Every built-in provider's environment variables in one zod shape (what the environment schema spreads). */
export type ProviderEnvShape = Intersection<(typeof MODEL_PROVIDERS)[number]["env"]>;

/** The built-in providers' environment variables in one shape. @throws Error when two declare the same name. */
export function providerEnvShape(): ProviderEnvShape {
  const shape: Record<string, unknown> = {};
  for (const provider of MODEL_PROVIDERS)
    for (const [name, schema] of Object.entries(provider.env)) {
      if (name in shape) throw new Error(`Two model providers declare the environment variable ${name}`);
      shape[name] = schema;
    }
  return shape as ProviderEnvShape;
}

/** The built-in provider named `name` (a value of `THREADLINE_MODEL_PROVIDER`). @throws Error for an unknown name. */
export function providerModule(name: string): ProviderModule {
  const found = MODEL_PROVIDERS.find((provider) => provider.name === name);
  if (!found)
    throw new Error(`No model provider is named "${name}"; built in: ${MODEL_PROVIDER_NAMES.join(", ")}`);
  return found as ProviderModule;
}

/** The built-in providers' list prices in one table (a later provider's entry wins a shared model id). */
export function builtinPrices(): Readonly<Record<string, ListPrice>> {
  return Object.assign({}, ...MODEL_PROVIDERS.map((provider) => provider.prices ?? {}));
}

/**
 * The process-wide provider registry keyed by `Model.api`, holding every provider of {@link MODEL_PROVIDERS};
 * {@link registerProvider} adds or replaces one at start-up (a package user's own, or a test's).
 */
export const defaultProviders = MODEL_PROVIDERS.reduce(
  (registry, provider) => registry.register(provider.api, provider),
  new ProviderRegistry(),
);

/** Registers `provider` for models whose `api` is `api` in {@link defaultProviders}, replacing an earlier one. */
export function registerProvider(api: string, provider: ModelProvider): void {
  defaultProviders.register(api, provider);
}

/** The provider of `model.api` in {@link defaultProviders}. @throws UnknownProviderError when none is registered. */
export function providerFor(model: Pick<Model, "api" | "id">): ModelProvider {
  return defaultProviders.for(model);
}
