import type { Env, ThreadlineConfig } from "../config/index.js";
import { type RunsConfig, runsConfig } from "../runs/index.js";

/**
 * The runs settings the environment and the config module decide (shared by gateway and workers, which
 * must agree on them). Values set in the config module win; approver lists are merged.
 */
export function runsConfigFromEnv(env: Env, config: ThreadlineConfig = {}): RunsConfig {
  const overrides: Partial<RunsConfig> = {
    prefix: env.THREADLINE_PREFIX,
    approvers: [...new Set([...env.THREADLINE_APPROVERS, ...(config.approvers ?? [])])],
    approvalTimeoutMs: config.approvalTimeoutMs ?? env.THREADLINE_APPROVAL_TIMEOUT_MS,
    reactions: { ...runsConfig().reactions, ...env.THREADLINE_REACTIONS, ...config.reactions },
    toolResultMaxChars: config.toolResultMaxChars ?? env.TOOL_RESULT_MAX_CHARS,
    replyMaxMessages: config.replyMaxMessages ?? env.REPLY_MAX_MESSAGES,
    replyMaxChars: config.replyMaxChars ?? env.REPLY_MAX_CHARS,
  };
  if (config.defaultDisposition) overrides.defaultDisposition = config.defaultDisposition;
  if (config.interruptPrefix !== undefined) overrides.interruptPrefix = config.interruptPrefix;
  if (config.steeringMode) overrides.steeringMode = config.steeringMode;
  if (config.followUpMode) overrides.followUpMode = config.followUpMode;
  if (config.requireMentionWhenIdle !== undefined)
    overrides.requireMentionWhenIdle = config.requireMentionWhenIdle;
  if (config.queueCap !== undefined) overrides.queueCap = config.queueCap;
  if (config.approvalReminderMs !== undefined) overrides.approvalReminderMs = config.approvalReminderMs;
  if (config.stopWords) overrides.stopWords = config.stopWords;
  if (config.footer !== undefined) overrides.footer = config.footer;
  if (config.prices) overrides.prices = config.prices;
  if (config.spendCaps) overrides.spendCaps = config.spendCaps;
  if (config.loopGuard) overrides.loopGuard = { ...runsConfig().loopGuard, ...config.loopGuard };
  if (config.budgets) {
    const budgets = { ...runsConfig().budgets, ...config.budgets };
    overrides.budgets = budgets as RunsConfig["budgets"];
  }
  return runsConfig(overrides);
}
