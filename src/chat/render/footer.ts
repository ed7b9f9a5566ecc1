import type { RunStats } from "../types.js";

/**
 * The compact run footer: `3 turns · 2 tool calls · 1.2k tokens · $0.0042`. Tool calls and tokens are
 * left out when zero; cost only when `stats.cost` is defined. Tokens are input plus output. Plain text,
 * no Markdown; never throws.
 */
export function formatRunFooter(stats: RunStats): string {
  const parts = [plural(stats.turns, "turn")];
  if (stats.toolCalls > 0) parts.push(plural(stats.toolCalls, "tool call"));
  const tokens = stats.inputTokens + stats.outputTokens;
  if (tokens > 0) parts.push(`${formatCount(tokens)} tokens`);
  if (stats.cost !== undefined) parts.push(formatCost(stats.cost));
  return parts.join(" · ");
}

/** `950`, `1.2k`, `12k`, `3.4M`: one decimal below ten units, none above. */
export function formatCount(value: number): string {
  if (value < 1000) return String(Math.round(value));
  if (value < 1_000_000) return `${compact(value / 1000)}k`;
  return `${compact(value / 1_000_000)}M`;
}

/**
 * US dollars with two significant digits below $1 (`$0.0042`, `$0.12`), cents above (`$1.23`), `$0` for
 * zero and `<$0.0001` for smaller positive amounts.
 */
export function formatCost(cost: number): string {
  if (!(cost > 0)) return "$0";
  if (cost < 0.0001) return "<$0.0001";
  if (cost < 1) return `$${Number(cost.toPrecision(2))}`;
  return `$${cost.toFixed(2)}`;
}

function compact(value: number): string {
  return value < 9.95 ? String(Number(value.toFixed(1))) : String(Math.round(value));
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
