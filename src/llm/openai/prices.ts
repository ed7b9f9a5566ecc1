import type { ListPrice } from "../provider-module.js";

/**
 * List prices of common OpenAI models (USD per million tokens, OpenAI's published prices as of 2025-06), so
 * they show a cost without configuration. A key also prices dated and routed variants (`gpt-4o` →
 * `gpt-4o-2024-08-06`, `openai/gpt-4o`).
 */
export const OPENAI_PRICES: Readonly<Record<string, ListPrice>> = {
  "gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 },
  "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
  "gpt-4.1": { input: 2, cachedInput: 0.5, output: 8 },
  "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, cachedInput: 0.025, output: 0.4 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  "o4-mini": { input: 1.1, cachedInput: 0.275, output: 4.4 },
};
