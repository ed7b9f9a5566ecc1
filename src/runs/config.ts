import type { QueueMode } from "../agent/index.js";
import {
  DEFAULT_REACTIONS,
  DEFAULT_REPLY_MAX_CHARS,
  DEFAULT_REPLY_MAX_MESSAGES,
  type ReactionNames,
} from "../chat/index.js";
import { DEFAULT_LOOP_GUARD, type LoopGuardLimits } from "./loop-guard.js";
import type { PriceTable } from "./pricing.js";
import type { SpendCaps } from "./spend.js";
import { DEFAULT_TOOL_RESULT_MAX_CHARS } from "./tool-result-limit.js";

/**
 * Where a queued reply to an active run goes: steer (after the current tool batch), follow-up (when the agent
 * would otherwise stop) or interrupt (now: the streaming model answer is cut, DESIGN.md §1).
 */
export type Disposition = "steer" | "followUp" | "interrupt";

/** Limits of one run. */
export interface RunBudgets {
  /** Default 50. */
  maxTurns: number;
  /** Default 15 minutes. */
  maxWallMs: number;
  /** Input + output tokens over the run; unlimited when undefined. */
  maxTokens?: number;
}

/** Settings shared by gateway and workers. */
export interface RunsConfig {
  /** Key prefix in Redis; default "tl". */
  prefix: string;
  defaultDisposition: Disposition;
  /**
   * A queued reply that starts with this text is an interrupt (the prefix is removed from what the model
   * reads); default `"!!"`, `""` turns it off.
   */
  interruptPrefix: string;
  /** Queued messages per thread before new ones are refused; default 20. */
  queueCap: number;
  /** When true, a reply in an idle engaged thread needs a mention to start a run; default false. */
  requireMentionWhenIdle: boolean;
  /**
   * How long a thread's data lives after its last activity; default 30 days. A key lives up to
   * min(60 s, retention / 10) longer: hot-path scripts refresh every key's TTL only that often.
   */
  retentionMs: number;
  /** How long a started run waits for a worker before the thread counts as idle again; default 5 min. */
  startLeaseMs: number;
  /** Liveness lease of a running worker; default 30 s, renewed every `leaseMs / 3`. */
  leaseMs: number;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  /** How long an approval card waits before the call is denied; default 10 minutes (per tool: `RunTool.approvalTimeoutMs`). */
  approvalTimeoutMs: number;
  /**
   * After this long without a decision the requester is mentioned once in the thread (a phone notification)
   * that the card waits for them; default 2 minutes, 0 = never. No reminder when the card expires first.
   */
  approvalReminderMs: number;
  /** User ids that may decide approvals in every thread, besides the run's requester. */
  approvers: string[];
  budgets: RunBudgets;
  /** Repeated-call and tool-call caps of one run (soft, then hard); default 3 repeats, 20 per turn, 100 per run. */
  loopGuard: LoopGuardLimits;
  /**
   * The operator's prices per model (USD per million tokens); they win over the built-in table, and a cost
   * the provider reports wins over both. Default `{}`.
   */
  prices: PriceTable;
  /** Daily budgets per thread, user, channel and workspace, enforced in Redis across workers. Default none. */
  spendCaps: SpendCaps;
  /** Emoji names the bot uses to mark messages. */
  reactions: ReactionNames;
  /** Show the run footer (turns, tool calls, tokens, cost); default true. */
  footer: boolean;
  /**
   * Replies that stop the active run when they are the whole message (any case, punctuation ignored);
   * default `stop`, `please stop`, `stop please`, `stop now`, `stop it`.
   */
  stopWords: readonly string[];
  /** How often each worker looks for started runs whose job was never added; default 5 s (0 = off). */
  startSweepIntervalMs: number;
  /** How long a start may be in doubt before the sweeper adds its job; default 10 s. */
  startSweepGraceMs: number;
  /** Longest wait for the final chat update of a run before its job returns; default 15 s. */
  finishTimeoutMs: number;
  /**
   * Characters of text one tool result may carry into the transcript (head and tail kept, the model told
   * what was cut); default 32 000. Applies to every tool (built-in, config module, MCP).
   */
  toolResultMaxChars: number;
  /** Chat messages the bot posts for one run, the cut-off notice included; default 20. */
  replyMaxMessages: number;
  /** Characters of answer text the bot posts for one run before it cuts the answer off; default 40 000. */
  replyMaxChars: number;
}

/** Default stop words: a reply that is one of these (any case, punctuation ignored) stops the run. */
export const DEFAULT_STOP_WORDS: readonly string[] = [
  "stop",
  "please stop",
  "stop please",
  "stop now",
  "stop it",
];

export const DEFAULT_RUNS_CONFIG: RunsConfig = {
  prefix: "tl",
  defaultDisposition: "steer",
  interruptPrefix: "!!",
  queueCap: 20,
  requireMentionWhenIdle: false,
  retentionMs: 30 * 24 * 60 * 60 * 1000,
  startLeaseMs: 5 * 60 * 1000,
  leaseMs: 30_000,
  steeringMode: "one-at-a-time",
  followUpMode: "one-at-a-time",
  approvalTimeoutMs: 10 * 60 * 1000,
  approvalReminderMs: 2 * 60 * 1000,
  approvers: [],
  budgets: { maxTurns: 50, maxWallMs: 15 * 60 * 1000 },
  loopGuard: DEFAULT_LOOP_GUARD,
  prices: {},
  spendCaps: {},
  reactions: DEFAULT_REACTIONS,
  footer: true,
  stopWords: DEFAULT_STOP_WORDS,
  startSweepIntervalMs: 5_000,
  startSweepGraceMs: 10_000,
  finishTimeoutMs: 15_000,
  toolResultMaxChars: DEFAULT_TOOL_RESULT_MAX_CHARS,
  replyMaxMessages: DEFAULT_REPLY_MAX_MESSAGES,
  replyMaxChars: DEFAULT_REPLY_MAX_CHARS,
};

/** Fills defaults (nested budgets and loop guard limits included). */
export function runsConfig(overrides: Partial<RunsConfig> = {}): RunsConfig {
  return {
    ...DEFAULT_RUNS_CONFIG,
    ...overrides,
    budgets: { ...DEFAULT_RUNS_CONFIG.budgets, ...overrides.budgets },
    loopGuard: { ...DEFAULT_RUNS_CONFIG.loopGuard, ...overrides.loopGuard },
    reactions: { ...DEFAULT_REACTIONS, ...overrides.reactions },
  };
}
