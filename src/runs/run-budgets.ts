import type { RunStats } from "../chat/index.js";
import type { RunBudgets } from "./config.js";
import type { LoopGuard } from "./loop-guard.js";

/**
 * Why the run must stop after this turn, or `undefined` while it is within its budgets: the loop guard's
 * reason first, then turns, tokens and wall time. Never throws.
 */
export function budgetStopReason(
  budgets: RunBudgets,
  stats: RunStats,
  startedAt: number,
  loopGuard: LoopGuard,
): string | undefined {
  const guardStop = loopGuard.stopReason();
  if (guardStop) return guardStop;
  if (stats.turns >= budgets.maxTurns) {
    return `This run reached its limit of ${budgets.maxTurns} turns, so it was stopped.`;
  }
  if (budgets.maxTokens !== undefined && stats.inputTokens + stats.outputTokens >= budgets.maxTokens) {
    return `This run used its budget of ${budgets.maxTokens} tokens, so it was stopped.`;
  }
  if (Date.now() - startedAt >= budgets.maxWallMs) return wallLimitReason(budgets.maxWallMs);
  return undefined;
}

/** The reason shown when a run outlasts its wall-time limit. */
export function wallLimitReason(maxWallMs: number): string {
  return `This run took longer than its limit of ${formatMinutes(maxWallMs)}, so it was stopped.`;
}

/** Minutes as people say them: "15 min", "1.5 min", "30 s". */
function formatMinutes(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  const minutes = ms / 60_000;
  return `${Number.isInteger(minutes) ? minutes : minutes.toFixed(1)} min`;
}
