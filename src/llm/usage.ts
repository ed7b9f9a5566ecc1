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
  /** What the provider billed for the request, in USD (OpenRouter: https://openrouter.ai/docs/use-cases/usage-accounting). */
  cost?: number | null;
  /** Reasoning tokens: part of `completion_tokens` on OpenAI, in addition to it on xAI. */
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

export { emptyUsage };

function count(value: number | null | undefined): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * Maps a chat-completions usage payload onto {@link Usage}. `input` excludes cached prompt tokens, which
 * are reported as `cacheRead` (so input + cacheRead = prompt tokens); `totalTokens` is the server's total
 * when given. `output` is what the provider bills as output: OpenAI counts reasoning tokens inside
 * `completion_tokens`, xAI reports them beside it (its `total_tokens` = prompt + completion + reasoning,
 * https://docs.x.ai/docs/key-information/consumption-and-rate-limits), so reasoning tokens are added when
 * the total says they were left out; `reasoning` is how many of `output` were reasoning. With `prices`, the
 * cost fields are filled in (per million tokens); a `cost` the provider reports (OpenRouter) is the total.
 */
export function mapUsage(payload: ChatUsagePayload, prices?: ModelPrices): Usage {
  const prompt = count(payload.prompt_tokens);
  const cached = Math.min(
    prompt,
    count(payload.prompt_tokens_details?.cached_tokens ?? payload.prompt_cache_hit_tokens),
  );
  const completion = count(payload.completion_tokens);
  const reasoning = count(payload.completion_tokens_details?.reasoning_tokens);
  const total = count(payload.total_tokens);
  const reasoningOutside = reasoning > 0 && total > 0 && total >= prompt + completion + reasoning;
  const output = reasoningOutside ? completion + reasoning : completion;
  const usage = emptyUsage();
  usage.input = prompt - cached;
  usage.output = output;
  usage.cacheRead = cached;
  usage.totalTokens = total || prompt + output;
  if (reasoning > 0) usage.reasoning = Math.min(reasoning, output);
  if (prices) applyPrices(usage, prices);
  // The provider's own figure wins over a price table: it is what was billed.
  const billed = payload.cost;
  if (typeof billed === "number" && Number.isFinite(billed) && billed >= 0) usage.cost.total = billed;
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
