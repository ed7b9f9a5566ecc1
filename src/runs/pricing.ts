import type { AssistantMessage, Usage } from "../agent/index.js";
import { builtinPrices, type ListPrice } from "../llm/index.js";

/** Prices of one model in USD per million tokens (uncached and cached input, output, reasoning). */
export type ModelPrice = ListPrice;

/** Prices by model id. A key also matches dated or routed variants: `gpt-4o` prices `gpt-4o-2024-08-06` and `openai/gpt-4o`. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * The built-in list prices: every built-in model provider's own table (`prices` of its module, e.g.
 * OpenAI's published prices in `src/llm/openai/prices.ts`), so common models show a cost without
 * configuration. The operator's table wins key by key; a provider's own reported cost wins over both.
 */
export const BUILTIN_PRICES: PriceTable = builtinPrices();

/** The built-in table with the operator's entries over it. */
export function priceTable(operator: PriceTable = {}): PriceTable {
  return { ...BUILTIN_PRICES, ...operator };
}

/**
 * The price of `model` in `table`: an exact key first, then (after dropping a `provider/` route prefix) the
 * longest key that the id starts with followed by `-` or `:` (dated snapshots, tags). Undefined when none.
 */
export function priceFor(model: string, table: PriceTable): ModelPrice | undefined {
  const exact = table[model];
  if (exact) return exact;
  const bare = model.includes("/") ? model.slice(model.lastIndexOf("/") + 1) : model;
  if (table[bare]) return table[bare];
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    const next = bare.charAt(key.length);
    if (bare.startsWith(key) && (next === "-" || next === ":") && key.length > (best?.length ?? 0))
      best = key;
  }
  return best === undefined ? undefined : table[best];
}

/**
 * The cost in USD of one response's usage at `price`: uncached input, cached input (`cacheRead`), cache
 * writes at the input price, and output with its reasoning part at the reasoning price. Never negative.
 */
export function usageCost(usage: Usage, price: ModelPrice): number {
  const reasoning = Math.min(usage.reasoning ?? 0, usage.output);
  const perToken =
    usage.input * price.input +
    usage.cacheRead * (price.cachedInput ?? price.input) +
    usage.cacheWrite * price.input +
    (usage.output - reasoning) * price.output +
    reasoning * (price.reasoning ?? price.output);
  return Math.max(0, perToken / 1_000_000);
}

/**
 * The cost of an assistant message: what the provider reported (or priced from the model's own prices) when
 * that is above zero, else the table's price for the model that answered (the requested model when the
 * server named none); undefined when neither knows. Fills `message.usage.cost.total` in the table case, so
 * the transcript and the footer agree. Never throws.
 */
export function priceMessage(message: AssistantMessage, table: PriceTable): number | undefined {
  const usage = message.usage;
  if (usage.cost.total > 0) return usage.cost.total;
  const price = priceFor(message.model, table) ?? priceFor(message.responseModel ?? "", table);
  if (!price) return undefined;
  const total = usageCost(usage, price);
  usage.cost.total = total;
  return total;
}
