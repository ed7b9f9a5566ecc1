import { describe, expect, it } from "vitest";
import { emptyUsage, type Usage } from "../../src/agent/index.js";
import { mapUsage } from "../../src/llm/usage.js";
import { BUILTIN_PRICES, priceFor, priceTable, usageCost } from "../../src/runs/pricing.js";

const usage = (counts: Partial<Omit<Usage, "cost">>): Usage => ({ ...emptyUsage(), ...counts });

describe("cost arithmetic", () => {
  it("prices uncached input, cached input, output and reasoning each at its own rate", () => {
    const price = { input: 3, cachedInput: 0.3, output: 15, reasoning: 20 };
    // 1M uncached, 2M cached, 4M output of which 1M reasoning.
    const cost = usageCost(
      usage({ input: 1_000_000, cacheRead: 2_000_000, output: 4_000_000, reasoning: 1_000_000 }),
      price,
    );
    expect(cost).toBeCloseTo(3 + 0.6 + 3 * 15 + 20, 10);
  });

  it("falls back to the input price for cached tokens and the output price for reasoning", () => {
    const cost = usageCost(usage({ cacheRead: 1_000_000, output: 1_000_000, reasoning: 500_000 }), {
      input: 2,
      output: 8,
    });
    expect(cost).toBeCloseTo(2 + 8, 10);
  });

  it("maps a provider usage payload with cached and reasoning tokens, and takes OpenRouter's billed cost", () => {
    const mapped = mapUsage({
      prompt_tokens: 1000,
      completion_tokens: 500,
      prompt_tokens_details: { cached_tokens: 400 },
      completion_tokens_details: { reasoning_tokens: 200 },
      cost: 0.0123,
    });
    expect(mapped).toMatchObject({ input: 600, cacheRead: 400, output: 500, reasoning: 200 });
    expect(mapped.cost.total).toBe(0.0123);
    const priced = usageCost(mapped, { input: 1, cachedInput: 0.5, output: 2, reasoning: 4 });
    expect(priced).toBeCloseTo((600 + 200 + 300 * 2 + 200 * 4) / 1_000_000, 12);
  });
});

describe("price table lookup", () => {
  it("matches exact ids, dated snapshots and routed ids; the operator's entry wins", () => {
    const table = priceTable({ "gpt-4o": { input: 9, output: 9 } });
    expect(priceFor("gpt-4o", table)?.input).toBe(9);
    expect(priceFor("gpt-4o-2024-08-06", table)?.input).toBe(9);
    expect(priceFor("openai/gpt-4o-mini", table)).toEqual(BUILTIN_PRICES["gpt-4o-mini"]);
    expect(priceFor("gpt-4omni", table)).toBeUndefined();
    expect(priceFor("llama3", table)).toBeUndefined();
  });
});
