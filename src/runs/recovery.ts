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

/** What the model reads for a call whose worker died (or was taken over) while it ran. */
export const INTERRUPTED_TOOL_TEXT =
  "Tool call was interrupted: the worker running it stopped before it finished, so it may or may not have taken effect.";

/** The record of one tool call of the active run (see `ThreadKeys.calls`). */
export type CallRecord =
  | { status: "executing"; tool: string; startedAt: number }
  | { status: "done"; result: AgentToolResult; isError: boolean };

/** The run-unique key of a tool call: the assistant message's transcript position and the model's call id. */
export function callKey(assistantIndex: number, toolCallId: string): string {
  return `${assistantIndex}:${toolCallId}`;
}

/** A stored call record; `undefined` when unreadable (treated like "executing": the outcome is unknown). */
export function parseCallRecord(json: string): CallRecord | undefined {
  try {
    const record = JSON.parse(json) as { status?: string; result?: AgentToolResult; isError?: boolean };
    if (record.status === "done" || (record.status === undefined && record.result !== undefined)) {
      return { status: "done", result: record.result as AgentToolResult, isError: Boolean(record.isError) };
    }
    if (record.status === "executing") return record as CallRecord & { status: "executing" };
  } catch {
    // unknown outcome
  }
  return undefined;
}

export interface RecoveryInput {
  transcript: AgentMessage[];
  /** The run's call records so far, by call key (from the start script). */
  calls: Record<string, string>;
  context: AgentContext;
  config: AgentLoopConfig;
  emit: AgentEventSink;
  signal: AbortSignal;
}

/** Where the last assistant message of a transcript sits, or -1. */
export function lastAssistantIndex(transcript: readonly AgentMessage[]): number {
  let index = transcript.length - 1;
  while (index >= 0 && (transcript[index] as { role?: string }).role !== "assistant") index--;
  return index;
}

/**
 * After a crash or a takeover, gives every tool call of the last assistant message a result before the run
 * goes on: calls that finished keep their recorded result (not executed again); calls that had started
 * (an "executing" record, written right before `execute`) are reported as interrupted and never run again,
 * approved or not; calls that never started go through the batch again (their approval, if any, resumes on
 * the same record). Result messages are emitted in call order through `emit`.
 */
export async function recoverInterruptedCalls(input: RecoveryInput): Promise<void> {
  const { transcript } = input;
  const index = lastAssistantIndex(transcript);
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

  const results = new Map<string, ToolResultMessage>();
  const rerun: ToolCall[] = [];
  for (const call of missing) {
    const raw = input.calls[callKey(index, call.id)];
    const record = raw === undefined ? undefined : parseCallRecord(raw);
    if (raw === undefined) rerun.push(call);
    else if (record?.status === "done")
      results.set(call.id, resultMessage(call, record.result, record.isError));
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
