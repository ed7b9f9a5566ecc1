import type { QueueMode } from "../agent/index.js";
import type { ReactionNames } from "../chat/index.js";
import type { ReasoningLevel } from "../llm/index.js";
import type {
  AnyToolDefinition,
  ApprovalPolicy,
  BuiltinToolsOptions,
  McpServerConfig,
  ToolThread,
  ToolUser,
} from "../tools/index.js";

/** Model settings that code expresses better than environment variables. */
export interface ModelSettings {
  /** Model name. Default: `OPENAI_MODEL`. */
  id?: string;
  /** Input window in tokens. Default: `OPENAI_CONTEXT_WINDOW`, else known per model, else 16 384. */
  contextWindow?: number;
  /** Output limit sent with every request (and kept free in the window). Default: a quarter of the window, at most 16 384. */
  maxOutputTokens?: number;
  /** Time allowed until response headers arrive, per attempt (ms). Default `OPENAI_HEADER_TIMEOUT_MS` (120 000). */
  headerTimeoutMs?: number;
  /** Abandon an answer after this long without any bytes (ms; 0 = off). Default `OPENAI_IDLE_TIMEOUT_MS` (120 000). */
  idleTimeoutMs?: number;
  /** Cut an answer at this many characters. Default `OPENAI_MAX_OUTPUT_CHARS` (200 000). */
  maxOutputChars?: number;
  /** `<think>…</think>` at the start of an answer: `"thinking"` or `"text"`. Default `OPENAI_THINK_TAGS` (thinking). */
  thinkTags?: "thinking" | "text";
  /** Sampling temperature. Default: not sent. */
  temperature?: number;
  /** Reasoning effort for reasoning models. Default: not sent. */
  reasoning?: ReasoningLevel;
  /** Prices per million tokens, for the run footer's cost. */
  prices?: { input?: number; output?: number; cacheRead?: number };
  /** Extra HTTP headers on every model request. */
  headers?: Record<string, string>;
}

/** What a system prompt function gets. */
export interface SystemPromptContext {
  threadId: string;
  thread: ToolThread;
  requester: ToolUser;
}

/** How long threads are kept inside the model's context window. */
export interface ContextSettings {
  /** Summarize the oldest turns with one model call when a thread outgrows the window. Default true. */
  summarize?: boolean;
}

/**
 * The config module (`threadline.config.ts` / `.mjs`, or the file `THREADLINE_CONFIG` names): what code
 * expresses better than environment variables. Every field is optional. Values set here win over the
 * matching environment variables; approver lists are merged.
 */
export interface ThreadlineConfig {
  /** Replaces the default system prompt; a function is called once per run. */
  systemPrompt?: string | ((ctx: SystemPromptContext) => string);
  model?: ModelSettings;
  /** Your tools, made with `defineTool`. */
  tools?: AnyToolDefinition[];
  /** Built-in tools: `fetchUrl` and `files` are on, `shell` is off unless enabled here. */
  builtinTools?: BuiltinToolsOptions;
  /** MCP servers by name; their tools are called `<name>__<tool>` and need approval unless configured. */
  mcpServers?: Record<string, McpServerConfig>;
  /** Approval policy by tool name (built-in, yours, or `<server>__<tool>`); wins over the tool's own. */
  approvals?: Record<string, ApprovalPolicy>;
  /** User ids that may approve tools and stop runs in every thread (besides the run's requester). */
  approvers?: string[];
  /** How long an approval card waits before it counts as denied. Default 10 minutes. */
  approvalTimeoutMs?: number;
  /** After this long without a decision the requester is mentioned once in the thread. Default 2 minutes; 0 = never. */
  approvalReminderMs?: number;
  /** Only these users / channels (platform ids) may start runs or talk to a run. Default: everyone. */
  allow?: { users?: string[]; channels?: string[] };
  /** Emoji names of the reaction vocabulary. */
  reactions?: Partial<ReactionNames>;
  /** Where a reply to a busy agent goes by default. Default `"steer"`. */
  defaultDisposition?: "steer" | "followUp";
  /**
   * A reply to a busy agent that starts with this text is an **interrupt** (⚡): delivered now, cutting the
   * model's streaming answer. The prefix is removed from what the model reads. Default `"!!"`; `""` turns it off.
   */
  interruptPrefix?: string;
  /** How many queued steering / follow-up messages reach the agent at once. Default `"one-at-a-time"`. */
  steeringMode?: QueueMode;
  followUpMode?: QueueMode;
  /** Require a mention to start a run from a reply in an idle thread. Default false. */
  requireMentionWhenIdle?: boolean;
  /**
   * Replies that stop the active run when they are the whole message (any case, punctuation ignored, so
   * "Stop!" and "stop." count; a longer sentence that contains "stop" never does). Replaces the default
   * list: `stop`, `please stop`, `stop please`, `stop now`, `stop it`.
   */
  stopWords?: string[];
  /** Queued messages per thread before new ones are refused. Default 20. */
  queueCap?: number;
  /** Limits of one run. */
  budgets?: { maxTurns?: number; maxWallMs?: number; maxTokens?: number };
  /**
   * Runaway-loop guards of one run, each soft then hard: the first call past a limit gets an error result
   * the model reads, a further one stops the run. 0 turns a limit off.
   */
  loopGuard?: {
    /** Calls of one tool with the same arguments per run; the Nth is refused. Default 3. */
    maxRepeats?: number;
    /** Tool calls in one model response. Default 20. */
    maxToolCallsPerTurn?: number;
    /** Tool calls in one run. Default 100. */
    maxToolCallsPerRun?: number;
  };
  /**
   * Prices per model id in USD per million tokens, for the footer's cost, `/metrics` and the money caps.
   * A key also prices dated and routed variants (`gpt-4o` → `gpt-4o-2024-08-06`, `openai/gpt-4o`); these
   * win over the small built-in table, and a cost the provider reports (OpenRouter) wins over both.
   */
  prices?: Record<string, { input: number; cachedInput?: number; output: number; reasoning?: number }>;
  /**
   * Daily budgets (UTC days) in tokens and/or US dollars, per thread, per user (the run's requester), per
   * channel and per workspace / Discord server, held across all workers. A run that reaches one finishes
   * its current step and stops with a message naming the budget and when it resets. Default: none.
   */
  spendCaps?: Partial<Record<"thread" | "user" | "channel" | "workspace", { tokens?: number; usd?: number }>>;
  /** Show the run footer (turns, tool calls, tokens, cost). Default true. */
  footer?: boolean;
  /**
   * Characters of text one tool result may carry into the transcript; a longer one keeps its start and
   * end, and the model is told what was cut. Default `TOOL_RESULT_MAX_CHARS` or 32 000 (at least 1 000).
   */
  toolResultMaxChars?: number;
  /** Chat messages the bot posts for one run before it cuts the answer off. Default `REPLY_MAX_MESSAGES` or 20. */
  replyMaxMessages?: number;
  /** Characters of answer text the bot posts for one run before it cuts it off. Default `REPLY_MAX_CHARS` or 40 000. */
  replyMaxChars?: number;
  /** Root of the per-thread workspace directories. Default `THREADLINE_WORKSPACE_DIR` or `.threadline/workspaces`. */
  workspaceDir?: string;
  context?: ContextSettings;
  /** Slack-only settings. */
  slack?: SlackSettings;
}

/** A prompt Slack offers in the bot's DM (shown by its title; clicking it sends `message`). */
export interface SuggestedPrompt {
  title: string;
  message: string;
}

/** Slack-only settings of the config module. */
export interface SlackSettings {
  /**
   * Up to four prompts offered when someone opens a DM with the bot (`assistant.threads.setSuggestedPrompts`);
   * `[]` offers none. Default {@link DEFAULT_SUGGESTED_PROMPTS}.
   */
  suggestedPrompts?: SuggestedPrompt[];
  /** The heading above them. Default "Try asking". */
  suggestedPromptsTitle?: string;
}

/** The prompts a DM offers by default (the same as `slack/manifest.json`'s `agent_view.suggested_prompts`). */
export const DEFAULT_SUGGESTED_PROMPTS: readonly SuggestedPrompt[] = [
  { title: "What can you do?", message: "What can you help me with, and which tools can you use?" },
  { title: "Summarize a thread", message: "Summarize this thread and list the open questions." },
];

/**
 * Types a config module's default export (and does nothing else).
 * @example
 * export default defineConfig({ systemPrompt: "You are our ops bot.", tools: [getWeather] });
 */
export function defineConfig(config: ThreadlineConfig): ThreadlineConfig {
  return config;
}
