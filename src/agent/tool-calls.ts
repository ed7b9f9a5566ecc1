import { interruptedToolText, linkSignals, noticeOf } from "./interrupts.js";
import type {
  AgentContext,
  AgentEventSink,
  AgentLoopConfig,
  AgentToolResult,
  AnyAgentTool,
  AssistantMessage,
  ToolCall,
  ToolResultMessage,
} from "./types.js";
import { validateToolArguments } from "./validation.js";

/** Text of a call that never ran because the run was aborted. */
export const ABORTED_TOOL_TEXT = "Operation aborted";
/** Text of a call refused by `beforeToolCall` without a reason. */
export const BLOCKED_TOOL_TEXT = "Tool execution was blocked";

/** The outcome of preparing one call: ready to execute, or already finished with an error result. */
export type PreparedToolCall =
  | { kind: "prepared"; toolCall: ToolCall; tool: AnyAgentTool; args: Record<string, unknown> }
  | { kind: "immediate"; toolCall: ToolCall; result: AgentToolResult; isError: true };

/** The outcome of one call after execution and `afterToolCall`. */
export interface FinalizedToolCall {
  toolCall: ToolCall;
  result: AgentToolResult;
  isError: boolean;
  durationMs?: number;
}

/** What a batch produced: result messages in call order and whether the run should stop. */
export interface ToolBatchResult {
  toolResults: ToolResultMessage[];
  terminate: boolean;
}

/** Everything a batch needs from the loop. */
export interface ToolBatchInput {
  assistantMessage: AssistantMessage;
  toolCalls: ToolCall[];
  context: AgentContext;
  config: AgentLoopConfig;
  emit: AgentEventSink;
  signal: AbortSignal | undefined;
  /**
   * Aborts when a steer or interrupt arrives during the batch (docs/agent-loop.md, deviation 6). Only tools
   * declared `interruptible` see it: they are aborted, or not started once it has aborted.
   */
  interruptSignal?: AbortSignal | undefined;
}

export function errorResult(text: string): AgentToolResult {
  return { content: [{ type: "text", text }], details: {} };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs the tool calls of one assistant message, or applies the `length` rule (docs/agent-loop.md §4). */
export async function runToolBatch(input: ToolBatchInput): Promise<ToolBatchResult> {
  if (input.assistantMessage.stopReason === "length") return refuseTruncatedCalls(input);
  const sequential =
    input.config.toolExecution === "sequential" ||
    input.toolCalls.some((call) => findTool(input.context, call.name)?.executionMode === "sequential");
  return sequential ? runSequential(input) : runParallel(input);
}

function findTool(context: AgentContext, name: string): AnyAgentTool | undefined {
  return context.tools?.find((tool) => tool.name === name);
}

/**
 * Preflight of one call: abort check, lookup, prepareArguments, validation, `beforeToolCall`, and a
 * second abort check once the hook settled (a block keeps its own reason). Never throws.
 */
export async function prepareToolCall(input: ToolBatchInput, toolCall: ToolCall): Promise<PreparedToolCall> {
  const immediate = (text: string, terminate?: boolean): PreparedToolCall => {
    const result = errorResult(text);
    if (terminate) result.terminate = true;
    return { kind: "immediate", toolCall, result, isError: true };
  };
  if (input.signal?.aborted) return immediate(ABORTED_TOOL_TEXT);
  const tool = findTool(input.context, toolCall.name);
  if (!tool) return immediate(`Tool ${toolCall.name} not found`);
  try {
    let candidate = toolCall;
    if (tool.prepareArguments) {
      const prepared = tool.prepareArguments(toolCall.arguments);
      if (prepared !== toolCall.arguments) candidate = { ...toolCall, arguments: prepared };
    }
    const args = validateToolArguments(tool, candidate, toolCall.arguments);
    const verdict = await input.config.beforeToolCall?.(
      { assistantMessage: input.assistantMessage, toolCall, args, context: input.context },
      input.signal,
    );
    if (verdict?.block) return immediate(verdict.reason || BLOCKED_TOOL_TEXT, verdict.terminate);
    // An abort while the hook was pending (e.g. an approval) ends the call now, as pi does, so its
    // tool_execution_end precedes the next call's preparation instead of trailing the batch.
    if (input.signal?.aborted) return immediate(ABORTED_TOOL_TEXT);
    return { kind: "prepared", toolCall, tool, args };
  } catch (err) {
    return immediate(messageOf(err));
  }
}

/** Executes a prepared call; updates become `tool_execution_update` until `execute` settles. */
export async function executePreparedToolCall(
  input: ToolBatchInput,
  prepared: Extract<PreparedToolCall, { kind: "prepared" }>,
): Promise<FinalizedToolCall> {
  const { toolCall, tool, args } = prepared;
  if (input.signal?.aborted) return { toolCall, result: errorResult(ABORTED_TOOL_TEXT), isError: true };
  const interrupt = tool.interruptible ? input.interruptSignal : undefined;
  if (interrupt?.aborted) {
    // A message already waits for the model: an interruptible tool yields to it before it starts.
    return { toolCall, result: errorResult(interruptedToolText(noticeOf(interrupt))), isError: true };
  }
  const updates: Promise<void>[] = [];
  let acceptingUpdates = true;
  const onUpdate = (partialResult: AgentToolResult): void => {
    if (!acceptingUpdates) return;
    const emitted = input.emit({
      type: "tool_execution_update",
      toolCallId: toolCall.id,
      toolName: toolCall.name,
      args: toolCall.arguments,
      partialResult,
    });
    if (emitted) {
      // Observe a failing sink now: `execute` may settle much later, and the failure still surfaces
      // through `Promise.all(updates)` below instead of as an unhandled rejection.
      emitted.catch(() => {});
      updates.push(emitted);
    }
  };
  const started = performance.now();
  const signal = linkSignals(input.signal, interrupt);
  let outcome: FinalizedToolCall;
  try {
    const result = await tool.execute(toolCall.id, args, signal.signal, onUpdate);
    outcome = { toolCall, result, isError: false };
  } catch (err) {
    // A throw after a new message aborted the tool reports the interruption, not the tool's own words.
    const text =
      interrupt?.aborted && !input.signal?.aborted
        ? interruptedToolText(noticeOf(interrupt))
        : messageOf(err);
    outcome = { toolCall, result: errorResult(text), isError: true };
  } finally {
    signal.dispose();
  }
  outcome.durationMs = Math.round(performance.now() - started);
  acceptingUpdates = false;
  await Promise.all(updates);
  return finalizeExecutedToolCall(input, prepared, outcome);
}

/** Applies `afterToolCall`: field-wise replacement, a throw becomes an error result. */
export async function finalizeExecutedToolCall(
  input: ToolBatchInput,
  prepared: Extract<PreparedToolCall, { kind: "prepared" }>,
  executed: FinalizedToolCall,
): Promise<FinalizedToolCall> {
  const hook = input.config.afterToolCall;
  if (!hook) return executed;
  try {
    const patch = await hook(
      {
        assistantMessage: input.assistantMessage,
        toolCall: prepared.toolCall,
        args: prepared.args,
        result: executed.result,
        isError: executed.isError,
        context: input.context,
      },
      input.signal,
    );
    if (!patch) return executed;
    const result: AgentToolResult = { ...executed.result };
    result.content = patch.content ?? result.content;
    result.details = patch.details ?? result.details;
    const terminate = patch.terminate ?? result.terminate;
    if (terminate === undefined) delete result.terminate;
    else result.terminate = terminate;
    return { ...executed, result, isError: patch.isError ?? executed.isError };
  } catch (err) {
    return { ...executed, result: errorResult(messageOf(err)), isError: true };
  }
}

function toolResultMessage(outcome: FinalizedToolCall): ToolResultMessage {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: outcome.toolCall.id,
    toolName: outcome.toolCall.name,
    content: outcome.result.content ?? [],
    details: outcome.result.details,
    isError: outcome.isError,
    timestamp: Date.now(),
  };
  return message;
}

function emitEnd(input: ToolBatchInput, outcome: FinalizedToolCall): void | Promise<void> {
  const event: Parameters<AgentEventSink>[0] = {
    type: "tool_execution_end",
    toolCallId: outcome.toolCall.id,
    toolName: outcome.toolCall.name,
    result: outcome.result,
    isError: outcome.isError,
  };
  if (outcome.durationMs !== undefined) event.durationMs = outcome.durationMs;
  return input.emit(event);
}

function emitStart(input: ToolBatchInput, toolCall: ToolCall): void | Promise<void> {
  return input.emit({
    type: "tool_execution_start",
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    args: toolCall.arguments,
  });
}

async function emitResultMessage(input: ToolBatchInput, message: ToolResultMessage): Promise<void> {
  await input.emit({ type: "message_start", message });
  await input.emit({ type: "message_end", message });
}

function batchTerminates(outcomes: FinalizedToolCall[]): boolean {
  return outcomes.length > 0 && outcomes.every((outcome) => outcome.result.terminate === true);
}

async function runSequential(input: ToolBatchInput): Promise<ToolBatchResult> {
  const outcomes: FinalizedToolCall[] = [];
  const toolResults: ToolResultMessage[] = [];
  for (const toolCall of input.toolCalls) {
    await emitStart(input, toolCall);
    const prepared = await prepareToolCall(input, toolCall);
    const outcome = prepared.kind === "immediate" ? prepared : await executePreparedToolCall(input, prepared);
    outcomes.push(outcome);
    await emitEnd(input, outcome);
    const message = toolResultMessage(outcome);
    toolResults.push(message);
    await emitResultMessage(input, message);
  }
  return { toolResults, terminate: batchTerminates(outcomes) };
}

async function runParallel(input: ToolBatchInput): Promise<ToolBatchResult> {
  const slots: (FinalizedToolCall | Promise<FinalizedToolCall>)[] = [];
  const deferred: Extract<PreparedToolCall, { kind: "prepared" }>[] = [];
  const deferredSlot: number[] = [];
  for (const toolCall of input.toolCalls) {
    await emitStart(input, toolCall);
    const prepared = await prepareToolCall(input, toolCall);
    if (prepared.kind === "immediate") {
      await emitEnd(input, prepared);
      slots.push(prepared);
    } else {
      deferredSlot.push(slots.length);
      slots.push(prepared as never);
      deferred.push(prepared);
    }
  }
  for (let i = 0; i < deferred.length; i++) {
    const prepared = deferred[i]!;
    slots[deferredSlot[i]!] = executePreparedToolCall(input, prepared).then(async (outcome) => {
      await emitEnd(input, outcome);
      return outcome;
    });
  }
  const outcomes = await Promise.all(slots);
  const toolResults = outcomes.map(toolResultMessage);
  for (const message of toolResults) await emitResultMessage(input, message);
  return { toolResults, terminate: batchTerminates(outcomes) };
}

/**
 * Deviations 6 and 1 (docs/agent-loop.md): the calls of a response an interrupt cut short never run; each
 * gets `tool_execution_start`, `tool_execution_end` (isError) and an `Operation aborted` result, in call
 * order.
 */
export async function abortToolCalls(input: ToolBatchInput): Promise<ToolResultMessage[]> {
  const toolResults: ToolResultMessage[] = [];
  for (const toolCall of input.toolCalls) {
    await emitStart(input, toolCall);
    const outcome: FinalizedToolCall = { toolCall, result: errorResult(ABORTED_TOOL_TEXT), isError: true };
    await emitEnd(input, outcome);
    const message = toolResultMessage(outcome);
    toolResults.push(message);
    await emitResultMessage(input, message);
  }
  return toolResults;
}

/** The `length` rule (docs/agent-loop.md §4.5): a response cut by the token limit never executes its calls. */
async function refuseTruncatedCalls(input: ToolBatchInput): Promise<ToolBatchResult> {
  const toolResults: ToolResultMessage[] = [];
  for (const toolCall of input.toolCalls) {
    await emitStart(input, toolCall);
    const outcome: FinalizedToolCall = {
      toolCall,
      result: errorResult(
        `Tool call "${toolCall.name}" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.`,
      ),
      isError: true,
    };
    await emitEnd(input, outcome);
    const message = toolResultMessage(outcome);
    toolResults.push(message);
    await emitResultMessage(input, message);
  }
  return { toolResults, terminate: false };
}
