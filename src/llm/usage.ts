import { emptyUsage, type Model, type Usage } from "../agent/index.js";

/** Prices per million tokens, in the configured currency unit (usually USD). */
export type ModelPrices = NonNullable<Model["cost"]>;

/** The usage object of a chat-completions response, as OpenAI-compatible servers send it. */
export interface ChatUsagePayload {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  /** DeepSeek's name for cached prompt tokens. */
  prompt_cache_hit_tokens?: number | null;
}

export { emptyUsage };

function count(value: number | null | undefined): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * Maps a chat-completions usage payload onto {@link Usage}. `input` excludes cached prompt tokens, which
 * are reported as `cacheRead` (so input + cacheRead = prompt tokens); `totalTokens` is the server's total
 * when given. With `prices`, the cost fields are filled in (prices are per million tokens).
 */
export function mapUsage(payload: ChatUsagePayload, prices?: ModelPrices): Usage {
  const prompt = count(payload.prompt_tokens);
  const cached = Math.min(
    prompt,
    count(payload.prompt_tokens_details?.cached_tokens ?? payload.prompt_cache_hit_tokens),
  );
  const output = count(payload.completion_tokens);
  const usage = emptyUsage();
  usage.input = prompt - cached;
  usage.output = output;
  usage.cacheRead = cached;
  usage.totalTokens = count(payload.total_tokens) || prompt + output;
  if (prices) applyPrices(usage, prices);
  return usage;
}

/** Fills `usage.cost` from per-million-token prices. */
export function applyPrices(usage: Usage, prices: ModelPrices): void {
  const cost = usage.cost;
  cost.input = (usage.input * prices.input) / 1_000_000;
  cost.output = (usage.output * prices.output) / 1_000_000;
  cost.cacheRead = (usage.cacheRead * prices.cacheRead) / 1_000_000;
  cost.cacheWrite = (usage.cacheWrite * prices.cacheWrite) / 1_000_000;
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
}
