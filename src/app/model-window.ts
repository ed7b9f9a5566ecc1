import type { ThreadlineConfig } from "../config/index.js";
import {
  type ContextWindowInfo,
  createContextRecovery,
  createTokenCounter,
  defaultMaxTokens,
  type ModelProvider,
  type ModelWindow,
  type ProviderOptions,
} from "../llm/index.js";
import type { AgentSetup, RunLogger } from "../runs/index.js";
import { contextTransformFor } from "./agent-config.js";

/** How long the first run waits for the server's `/models` answer before trimming with what it has. */
const DISCOVERY_WAIT_MS = 3_000;

/**
 * Keeps the context window in use current: the configured or known figure at first; the server's own
 * (the provider's `serverContextWindow`, e.g. `GET /models`: llama.cpp `meta.n_ctx`, vLLM `max_model_len`,
 * …) once it answers (smaller of the two when one is configured); and the window a "context exceeded" error names, after which the refused request is
 * cut to fit and retried once. The context manager is rebuilt whenever the figure changes, so every later
 * request of every thread is trimmed to the learned window. The server is asked only when the settings name
 * an endpoint (`provider.baseURL`), for `modelId`, with `provider.apiKey`.
 */
export function adaptiveModelWindow(
  modelId: string,
  config: ThreadlineConfig,
  info: ContextWindowInfo,
  provider: ProviderOptions,
  log: RunLogger | undefined,
  modelProvider: Pick<ModelProvider, "serverContextWindow"> = {},
): {
  window: ModelWindow;
  discovery: Promise<void>;
  contextTransform: (setup: AgentSetup) => NonNullable<AgentSetup["contextTransform"]>;
} {
  const window: ModelWindow = {
    tokens: info.tokens,
    source: info.source === "configured" ? "configured" : info.source === "known" ? "known model" : "default",
  };
  const counter = createTokenCounter({ safetyFactor: info.openAITokenizer ? 1.05 : 1.25 });
  const reserve = () =>
    config.model?.maxOutputTokens ?? defaultMaxTokens({ contextWindow: window.tokens, maxTokens: 16_384 });
  const recover = createContextRecovery({ counter, window });
  provider.onContextExceeded = (exceeded) => {
    const before = window.tokens;
    const smaller = recover(exceeded);
    if (window.tokens !== before) {
      log?.warn(
        { contextWindow: window.tokens },
        "the model server's context window is smaller; trimming to it",
      );
    }
    return smaller;
  };
  const discovery =
    provider.baseURL && modelProvider.serverContextWindow
      ? modelProvider
          .serverContextWindow({
            baseURL: provider.baseURL,
            model: modelId,
            ...(provider.apiKey ? { apiKey: provider.apiKey } : {}),
            timeoutMs: 5_000,
          })
          .then((reported) => {
            if (reported === undefined) return;
            if (window.source !== "configured" || reported < window.tokens) {
              window.tokens = reported;
              window.source = "server";
            }
          })
      : Promise.resolve();
  const contextTransform = (setup: AgentSetup): NonNullable<AgentSetup["contextTransform"]> => {
    let built: { tokens: number; transform: NonNullable<AgentSetup["contextTransform"]> } | undefined;
    const current = () => {
      if (!built || built.tokens !== window.tokens) {
        const model = { ...setup.model, contextWindow: window.tokens, maxTokens: reserve() };
        built = {
          tokens: window.tokens,
          transform: contextTransformFor(
            { ...setup, model },
            { ...info, tokens: window.tokens },
            config,
            log,
          ),
        };
      }
      return built.transform;
    };
    let waited = false;
    return (run) => async (messages, signal) => {
      if (!waited) {
        waited = true;
        await Promise.race([
          discovery,
          new Promise((resolve) => setTimeout(resolve, DISCOVERY_WAIT_MS).unref()),
        ]);
      }
      setup.model.contextWindow = window.tokens;
      return current()(run)(messages, signal);
    };
  };
  return { window, discovery, contextTransform };
}
