import {
  type AgentContext,
  type AgentEventSink,
  type AgentLoopConfig,
  type AgentMessage,
  type AgentToolResult,
  type AssistantMessage,
  runToolBatch,
  type ToolCall,
  type ToolResultMessage,
} from "../agent/index.js";
import type { ThreadStore } from "./thread-store.js";

/** What the model reads for a call whose worker died before it finished. */
export const INTERRUPTED_TOOL_TEXT =
  "Tool call was interrupted: the worker running it stopped before it finished, so it may or may not have taken effect.";

export interface RecoveryInput {
  transcript: AgentMessage[];
  store: ThreadStore;
  threadId: string;
  context: AgentContext;
  config: AgentLoopConfig;
  emit: AgentEventSink;
  signal: AbortSignal;
  /** True when an approval record exists for the call (it was waiting for a decision). */
  approvalExists: (assistantIndex: number, toolCallId: string) => Promise<boolean>;
}

/**
 * After a crash, gives every tool call of the last assistant message a result before the run goes on:
 * calls that finished keep their recorded result (not executed again), calls that were waiting for
 * approval wait on the same record and run if approved, anything else is reported as interrupted.
 * Result messages are emitted in call order through `emit`.
 */
export async function recoverInterruptedCalls(input: RecoveryInput): Promise<void> {
  const { transcript } = input;
  let index = transcript.length - 1;
  while (index >= 0 && (transcript[index] as { role?: string }).role !== "assistant") index--;
  if (index < 0) return;
  const assistant = transcript[index] as AssistantMessage;
  if (assistant.stopReason === "error" || assistant.stopReason === "aborted") return;
  const answered = new Set(
    transcript
      .slice(index + 1)
      .filter((m): m is ToolResultMessage => (m as { role?: string }).role === "toolResult")
      .map((m) => m.toolCallId),
  );
  const missing = assistant.content.filter(
    (b): b is ToolCall => b.type === "toolCall" && !answered.has(b.id),
  );
  if (missing.length === 0) return;

  const finished = await input.store.finishedToolCalls(input.threadId);
  const results = new Map<string, ToolResultMessage>();
  const rerun: ToolCall[] = [];
  for (const call of missing) {
    const record = finished.get(call.id);
    if (record) results.set(call.id, resultMessage(call, record.result as AgentToolResult, record.isError));
    else if (await input.approvalExists(index, call.id)) rerun.push(call);
    else results.set(call.id, resultMessage(call, textResult(INTERRUPTED_TOOL_TEXT), true));
  }
  if (rerun.length > 0) {
    const batch = await runToolBatch({
      assistantMessage: assistant,
      toolCalls: rerun,
      context: input.context,
      config: input.config,
      // Progress events go through; result messages are emitted below, in call order.
      emit: (event) =>
        event.type === "message_start" || event.type === "message_end" ? undefined : input.emit(event),
      signal: input.signal,
    });
    for (const message of batch.toolResults) results.set(message.toolCallId, message);
  }
  for (const call of missing) {
    const message = results.get(call.id)!;
    await input.emit({ type: "message_start", message });
    await input.emit({ type: "message_end", message });
  }
}

function textResult(text: string): AgentToolResult {
  return { content: [{ type: "text", text }], details: {} };
}

function resultMessage(call: ToolCall, result: AgentToolResult, isError: boolean): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: result.content ?? [],
    details: result.details,
    isError,
    timestamp: Date.now(),
  };
}
