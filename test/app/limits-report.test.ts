import { describe, expect, it } from "vitest";
import { describeLimits, formatLimits } from "../../src/app/limits-report.js";
import { runsConfigFromEnv } from "../../src/app/runs-config.js";
import { parseEnv, validateConfig } from "../../src/config/index.js";

describe("spend and loop settings from the config module", () => {
  it("reach the runs config and are printed by doctor", () => {
    const { config, problems } = validateConfig("threadline.config.ts", {
      prices: { "my-model": { input: 1, output: 2, reasoning: 3 } },
      spendCaps: { user: { usd: 5 }, channel: { tokens: 2_000_000, usd: 20 } },
      loopGuard: { maxRepeats: 4, maxToolCallsPerRun: 0 },
    });
    expect(problems).toEqual([]);
    const runs = runsConfigFromEnv(parseEnv({}), config);
    expect(runs.spendCaps).toEqual({ user: { usd: 5 }, channel: { tokens: 2_000_000, usd: 20 } });
    expect(runs.prices["my-model"]).toEqual({ input: 1, output: 2, reasoning: 3 });
    expect(runs.loopGuard).toEqual({ maxRepeats: 4, maxToolCallsPerTurn: 20, maxToolCallsPerRun: 0 });
    const report = formatLimits(describeLimits(runs));
    expect(report).toContain(
      "• Spending caps: per user $5.00; per channel $20.00 and 2M tokens per day (UTC",
    );
    expect(report).toContain(
      "loop guard: 4 identical calls, 20 tool calls per response, no tool calls per run cap",
    );
    expect(report).toContain("1 of yours (yours win)");
  });

  it("says when no cap is set", () => {
    const report = formatLimits(describeLimits(runsConfigFromEnv(parseEnv({}), {})));
    expect(report).toContain("Spending caps: none");
  });

  it("refuses caps and prices that make no sense, in words", () => {
    const { problems } = validateConfig("threadline.config.ts", {
      spendCaps: { user: { usd: -1 } },
      prices: { m: { input: "cheap", output: 1 } },
    });
    expect(problems.join("\n")).toMatch(/spendCaps\.user\.usd must be greater than 0/);
    expect(problems.join("\n")).toMatch(/prices\.m\.input must be a price in USD per million tokens/);
  });
});
