import { formatCost, formatCount } from "../chat/index.js";
import { BUILTIN_PRICES, type RunsConfig } from "../runs/index.js";

/** A line of the doctor's report about the limits in force (always ok: it informs, it does not judge). */
export interface LimitsLine {
  name: string;
  ok: true;
  detail: string;
}

const SCOPE_NAMES = {
  thread: "per thread",
  user: "per user",
  channel: "per channel",
  workspace: "per workspace",
};

/**
 * What `doctor` prints about spending and loop limits: the daily caps (or that there are none), the per-run
 * budgets, the loop guards and where prices come from. Never throws.
 */
export function describeLimits(config: RunsConfig): LimitsLine[] {
  const caps = Object.entries(SCOPE_NAMES).flatMap(([scope, name]) => {
    const cap = config.spendCaps[scope as keyof typeof SCOPE_NAMES];
    const parts = [
      cap?.usd === undefined ? undefined : formatCost(cap.usd),
      cap?.tokens === undefined ? undefined : `${formatCount(cap.tokens)} tokens`,
    ].filter((part) => part !== undefined);
    return parts.length === 0 ? [] : [`${name} ${parts.join(" and ")}`];
  });
  const { budgets, loopGuard } = config;
  const run = [
    `${budgets.maxTurns} turns`,
    `${Math.round(budgets.maxWallMs / 60_000)} min`,
    ...(budgets.maxTokens === undefined ? [] : [`${formatCount(budgets.maxTokens)} tokens`]),
  ];
  const guard = (value: number, what: string) => (value > 0 ? `${value} ${what}` : `no ${what} cap`);
  const own = Object.keys(config.prices).length;
  return [
    {
      name: "Spending caps",
      ok: true,
      detail:
        caps.length === 0
          ? "none (set spendCaps in the config module to cap spend per day)"
          : `${caps.join("; ")} per day (UTC; reset at 00:00 UTC)`,
    },
    {
      name: "Run limits",
      ok: true,
      detail: `${run.join(", ")} per run; loop guard: ${guard(loopGuard.maxRepeats, "identical calls")}, ${guard(loopGuard.maxToolCallsPerTurn, "tool calls per response")}, ${guard(loopGuard.maxToolCallsPerRun, "tool calls per run")}`,
    },
    {
      name: "Prices",
      ok: true,
      detail: `${Object.keys(BUILTIN_PRICES).length} built-in model prices${own > 0 ? `, ${own} of yours (yours win)` : ""}; a cost the provider reports wins`,
    },
  ];
}

/** The lines as `doctor` prints them: `• Spending caps: …`, one per line. */
export function formatLimits(lines: readonly LimitsLine[]): string {
  return lines.map((line) => `• ${line.name}: ${line.detail}`).join("\n");
}
