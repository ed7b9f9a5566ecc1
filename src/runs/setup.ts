import type {
  AgentLoopConfig,
  AgentMessage,
  Message,
  Model,
  StreamFn,
  StreamOptions,
  ToolExecutionMode,
} from "../agent/index.js";
import {
  type ChatLogger,
  type ChatOutbound,
  type ChatUser,
  SILENT_LOGGER,
  type ThreadRef,
} from "../chat/index.js";
import type { BoundTool } from "../tools/index.js";
import type { ThreadSettings } from "./thread-settings.js";

/**
 * A tool as a run holds it: an agent tool with its approval policy bound to the run (default "never") and,
 * for "ask", how long its card waits before the call is denied (default: the runs config's
 * `approvalTimeoutMs`). The tools layer's `BoundTool`: every tool source makes one through a definition's
 * `forRun` (see `toToolDefinition`).
 */
export type RunTool = BoundTool;

/** What a run knows when it builds tools and evaluates policies. */
export interface ToolRunContext {
  thread: ThreadRef;
  threadId: string;
  runId: string;
  /** The user whose message started the run. */
  requester: ChatUser;
  /**
   * The thread's settings as the run found them when it claimed the thread (`!set`, see
   * `THREAD_SETTINGS`): a change takes effect from the next run. Absent or empty when none were set.
   */
  settings?: ThreadSettings;
}

/** What {@link AgentSetup.contextTransform} gets, once per run. */
export interface ContextTransformRun extends ToolRunContext {
  systemPrompt: string;
  tools: RunTool[];
  /**
   * Appends an app-defined (custom) message, e.g. a summary of older turns, to the thread's persisted
   * transcript after everything persisted so far. The loop's working messages are not changed. Fenced by
   * the run's lease: resolves `false` when this run no longer owns the thread. May reject on Redis errors.
   */
  appendToTranscript(message: AgentMessage): Promise<boolean>;
}

/** How workers build the agent of a run. */
export interface AgentSetup {
  model: Model;
  streamFn: StreamFn;
  convertToLlm: (messages: AgentMessage[]) => Message[] | Promise<Message[]>;
  systemPrompt: string | ((ctx: ToolRunContext) => string);
  tools: RunTool[] | ((ctx: ToolRunContext) => RunTool[]);
  transformContext?: AgentLoopConfig["transformContext"];
  /** Builds the run's `transformContext` once per run; used instead of `transformContext` when set. */
  contextTransform?: (run: ContextTransformRun) => NonNullable<AgentLoopConfig["transformContext"]>;
  /** Options spread into every model request (temperature, maxTokens, headers…). */
  streamOptions?: Omit<StreamOptions, "signal">;
  toolExecution?: ToolExecutionMode;
}

/** Receives what a run does, for metrics. Every method is optional and must not throw. */
export interface RunObserver {
  /** A run job ended: completed | stopped | budget | failed | interrupted (worker shutdown) | lost (lease). */
  runEnded?(outcome: string): void;
  /** An assistant message finished. */
  turn?(): void;
  toolCall?(tool: string, isError: boolean): void;
  /** A queued (steer / follow-up) message reached the agent, this long after it arrived. */
  delivered?(latencyMs: number): void;
  /** The first visible activity of a run (streamed text or a tool start), this long after the job began. */
  firstVisible?(latencyMs: number): void;
  /** A model response was priced: the model asked for and its cost in USD (provider's figure or price table). */
  cost?(model: string, usd: number): void;
  /** A human decided (or the wait ended): approved | denied | expired | cancelled, after waiting this long. */
  approval?(decision: string, waitMs: number): void;
}

/** Structured log sink of the run machinery: the one {@link ChatLogger} the adapters take too. */
export type RunLogger = ChatLogger;

export { SILENT_LOGGER };

/** Picks the chat client for a thread's platform. */
export type OutboundResolver = (thread: ThreadRef) => ChatOutbound;
