import type { AgentLoopConfig, AgentMessage } from "../agent/index.js";
import type { RunsConfig } from "./config.js";
import { fenceTools } from "./fenced-tools.js";
import type { Lease } from "./lease.js";
import { chainBeforeToolCall, type LoopGuard } from "./loop-guard.js";
import { priceTable } from "./pricing.js";
import type { RunInterrupts } from "./run-interrupts.js";
import type { AgentSetup, RunLogger, RunObserver, RunTool, ToolRunContext } from "./setup.js";
import { SpendLedger } from "./spend.js";
import { SpendMeter } from "./spend-meter.js";
import type { ThreadScripts } from "./thread-scripts.js";
import type { ToolApprovalHook } from "./tool-approval.js";
import { limitToolResults } from "./tool-result-limit.js";
import type { RunTracer } from "./tracing.js";
import type { DrainKind, TranscriptSink } from "./transcript-sink.js";

/** A run's agent as the loop sees it: its tools (limited and fenced) and its system prompt. */
export interface RunAgent {
  tools: RunTool[];
  systemPrompt: string;
}

/**
 * Resolves the setup's tools and system prompt for this run (calling them with `ctx` when they are
 * functions, tools first). Tool results are cut to `maxChars`; every call is fenced by the run's lease.
 */
export function resolveRunAgent(
  setup: AgentSetup,
  ctx: ToolRunContext,
  maxChars: number,
  sink: TranscriptSink,
  lease: Lease,
): RunAgent {
  const tools = fenceTools(
    limitToolResults(typeof setup.tools === "function" ? setup.tools(ctx) : setup.tools, { maxChars }),
    () => sink,
    () => lease,
  );
  const systemPrompt =
    typeof setup.systemPrompt === "function" ? setup.systemPrompt(ctx) : setup.systemPrompt;
  return { tools, systemPrompt };
}

/** What {@link createRunLoopConfig} wires into the loop's seams. */
export interface RunLoopConfigOptions {
  setup: AgentSetup;
  config: RunsConfig;
  ctx: ToolRunContext;
  agent: RunAgent;
  sink: TranscriptSink;
  /** Takes queued messages of one kind; the steering and follow-up polls call it. */
  drain: (kind: DrainKind, mode: "one" | "all") => Promise<AgentMessage[]>;
  interrupts: RunInterrupts;
  loopGuard: LoopGuard;
  approvals: ToolApprovalHook;
  tracer: RunTracer;
  /** Asked after every turn; true ends the run (a budget, a loop guard or a spend cap was reached). */
  shouldStopAfterTurn: () => boolean;
}

/**
 * The agent loop's config for one run (docs/agent-loop.md): the setup's model and options, queued-message
 * drains, interrupts, the loop guard before approvals, the traced hooks and the context transform. Calls
 * `setup.contextTransform` once, when it is set.
 */
export function createRunLoopConfig(options: RunLoopConfigOptions): AgentLoopConfig {
  const { setup, config, ctx, agent, sink, drain, loopGuard, approvals, tracer } = options;
  const loopConfig: AgentLoopConfig = {
    ...setup.streamOptions,
    model: setup.model,
    convertToLlm: setup.convertToLlm,
    toolExecution: setup.toolExecution ?? "parallel",
    getSteeringMessages: () =>
      options.interrupts.pollSteering(() => drain("steer", config.steeringMode === "all" ? "all" : "one")),
    getFollowUpMessages: () => drain("followUp", config.followUpMode === "all" ? "all" : "one"),
    interrupts: options.interrupts.source,
    beforeToolCall: tracer.wrapBeforeToolCall(
      chainBeforeToolCall((call) => loopGuard.beforeToolCall(call), approvals),
    ),
    // A call that ran with an approver's edited arguments says so in its result (what the model reads).
    afterToolCall: approvals.afterToolCall,
    shouldStopAfterTurn: options.shouldStopAfterTurn,
  };
  const transformContext =
    setup.contextTransform?.({
      ...ctx,
      systemPrompt: agent.systemPrompt,
      tools: agent.tools,
      appendToTranscript: (message) => sink.appendCustom(message),
    }) ?? setup.transformContext;
  if (transformContext) loopConfig.transformContext = transformContext;
  return loopConfig;
}

/** What {@link createRunMeter} needs besides the run's context. */
export interface RunMeterOptions {
  scripts: ThreadScripts;
  config: RunsConfig;
  log: RunLogger;
  fields: Record<string, unknown>;
  observer: RunObserver;
  /** Called with the user-facing reason when a daily cap is reached. */
  capReached: (reason: string) => void;
}

/** Spend accounting and daily caps for this run's model requests; a reached cap ends the run after its turn. */
export function createRunMeter(ctx: ToolRunContext, options: RunMeterOptions): SpendMeter {
  const { config, observer } = options;
  return new SpendMeter({
    ledger: new SpendLedger(options.scripts.redis, config.prefix, config.spendCaps),
    target: { threadId: ctx.threadId, thread: ctx.thread, requester: ctx.requester },
    prices: priceTable(config.prices),
    log: options.log,
    fields: options.fields,
    ...(observer.cost ? { cost: observer.cost.bind(observer) } : {}),
    capReached: options.capReached,
  });
}
