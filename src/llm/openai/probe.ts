import { createHttpFetch, type HttpFetch } from "../../http/index.js";
import { displayBaseURL } from "../provider-errors.js";
import type { ProbeOptions, ProbeResult } from "../providers.js";
import { authHeaders, OpenAIClientPool } from "./client-pool.js";
import { describeOpenAIFailure, openAIErrorStatus } from "./errors.js";

/**
 * The context window a `GET /models` entry reports, in tokens: llama.cpp `meta.n_ctx` (the running
 * window; `n_ctx_train` as a fallback, https://github.com/NousResearch/hermes-agent/pull/64904), vLLM
 * `max_model_len`, OpenRouter / Together `context_length`, Groq `context_window`, Mistral
 * `max_context_length`. OpenAI, Ollama's `/v1/models` and LM Studio's report none.
 */
export function contextWindowOf(entry: unknown): number | undefined {
  if (!entry || typeof entry !== "object") return undefined;
  const record = entry as Record<string, unknown>;
  const meta = (typeof record.meta === "object" && record.meta !== null ? record.meta : {}) as Record<
    string,
    unknown
  >;
  for (const value of [
    meta.n_ctx,
    record.max_model_len,
    record.context_length,
    record.context_window,
    record.max_context_length,
    meta.n_ctx_train,
  ]) {
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

/** The entry for `model` in a model list: by id, else the only entry (llama.cpp lists its GGUF path). */
function entryFor(entries: readonly { id: string }[], model: string): { id: string } | undefined {
  return entries.find((entry) => entry.id === model) ?? (entries.length === 1 ? entries[0] : undefined);
}

/**
 * The context window the server reports for `model` in `GET /models`, or `undefined` (no list, no
 * figure, or any failure). No retries; never throws.
 */
export async function serverContextWindow(options: ProbeOptions): Promise<number | undefined> {
  const ownFetch = options.fetch ? undefined : createHttpFetch();
  try {
    const client = new OpenAIClientPool({ fetch: options.fetch ?? (ownFetch as HttpFetch) }).get(
      options.baseURL,
    );
    const page = await client.models.list({
      maxRetries: 0,
      timeout: options.timeoutMs ?? 10_000,
      headers: { ...options.headers, ...authHeaders(options.apiKey) },
    });
    return contextWindowOf(entryFor(page.data, options.model));
  } catch {
    return undefined;
  } finally {
    ownFetch?.destroy();
  }
}

const LISTED_IN_VERDICT = 8;

/**
 * Checks that `model` is usable at `baseURL` with `apiKey`, for a `doctor` command: first `GET /models`
 * (no tokens spent); if the endpoint has no model list or does not list the model, a 1-token chat
 * request decides. No retries. Never throws; the verdict is one human sentence.
 */
export async function probeModelEndpoint(options: ProbeOptions): Promise<ProbeResult> {
  const ownFetch = options.fetch ? undefined : createHttpFetch();
  try {
    return await probe(options, new OpenAIClientPool({ fetch: options.fetch ?? (ownFetch as HttpFetch) }));
  } finally {
    ownFetch?.destroy();
  }
}

async function probe(options: ProbeOptions, pool: OpenAIClientPool): Promise<ProbeResult> {
  const client = pool.get(options.baseURL);
  const where = displayBaseURL(options.baseURL);
  const requestOptions = {
    maxRetries: 0,
    timeout: options.timeoutMs ?? 10_000,
    headers: { ...options.headers, ...authHeaders(options.apiKey) },
  };
  const context = {
    baseURL: options.baseURL,
    model: options.model,
    apiKey: options.apiKey,
    timeoutMs: requestOptions.timeout,
    streamStarted: false,
    apiKeyHint: options.apiKeyHint,
  };

  let models: string[] | undefined;
  let listedWindow: number | undefined;
  try {
    const page = await client.models.list(requestOptions);
    models = page.data.map((entry) => entry.id);
    if (models.includes(options.model)) {
      const result: ProbeResult = {
        ok: true,
        via: "models",
        models,
        verdict: `Model "${options.model}" is available at ${where} (${models.length} models listed).`,
      };
      const window = contextWindowOf(entryFor(page.data, options.model));
      if (window !== undefined) result.contextWindow = window;
      return result;
    }
    listedWindow = contextWindowOf(entryFor(page.data, options.model));
  } catch (err) {
    const status = openAIErrorStatus(err);
    // A server without a model list (404/405/501…) may still serve chat; anything else is final.
    const listUnsupported = status !== undefined && status !== 401 && status !== 403 && status !== 429;
    if (!listUnsupported) {
      const failure = describeOpenAIFailure(err, context);
      return { ok: false, failure, verdict: failure.message };
    }
  }

  try {
    const maxField = options.baseURL.includes("api.openai.com") ? "max_completion_tokens" : "max_tokens";
    await client.chat.completions.create(
      { model: options.model, messages: [{ role: "user", content: "ping" }], [maxField]: 1 },
      requestOptions,
    );
    const note = models ? " (although it is not in the endpoint's model list)" : "";
    const result: ProbeResult = {
      ok: true,
      via: "chat",
      verdict: `Model "${options.model}" answered at ${where}${note}.`,
    };
    if (models) result.models = models;
    if (listedWindow !== undefined) result.contextWindow = listedWindow;
    return result;
  } catch (err) {
    const failure = describeOpenAIFailure(err, context);
    let verdict = failure.message;
    if (failure.kind === "not-found" && models && models.length > 0) {
      const shown = models.slice(0, LISTED_IN_VERDICT).join(", ");
      const more = models.length > LISTED_IN_VERDICT ? `, and ${models.length - LISTED_IN_VERDICT} more` : "";
      verdict = `Model "${options.model}" is not served at ${where}; it offers: ${shown}${more}.`;
    }
    const result: ProbeResult = { ok: false, failure, verdict };
    if (models) result.models = models;
    return result;
  }
}
