import type { AgentEvent, AssistantMessage, StopReason } from "../../src/agent/index.js";
import { zeroUsage } from "../fakes/scripted-model.js";

/** An assistant message as the loop reports it at `message_end`. */
export function assistantMessage(
  stopReason: StopReason = "stop",
  errorMessage?: string,
  text = "",
): AssistantMessage {
  return {
    role: "assistant",
    content: text ? [{ type: "text", text }] : [],
    api: "scripted",
    provider: "scripted",
    model: "scripted",
    usage: zeroUsage(),
    stopReason,
    ...(errorMessage === undefined ? {} : { errorMessage }),
    timestamp: 0,
  };
}

const partial = assistantMessage();

/** Hand-built agent events, in the shapes the loop emits. */
export const events = {
  turnStart: (): AgentEvent => ({ type: "turn_start" }),
  assistantStart: (): AgentEvent => ({ type: "message_start", message: assistantMessage() }),
  text: (delta: string, contentIndex = 0): AgentEvent => ({
    type: "message_update",
    message: partial,
    assistantMessageEvent: { type: "text_delta", contentIndex, delta, partial },
  }),
  thinking: (delta: string): AgentEvent => ({
    type: "message_update",
    message: partial,
    assistantMessageEvent: { type: "thinking_delta", contentIndex: 0, delta, partial },
  }),
  textEnd: (content: string, contentIndex = 0): AgentEvent => ({
    type: "message_update",
    message: partial,
    assistantMessageEvent: { type: "text_end", contentIndex, content, partial },
  }),
  assistantEnd: (stopReason: StopReason = "stop", errorMessage?: string): AgentEvent => ({
    type: "message_end",
    message: assistantMessage(stopReason, errorMessage),
  }),
  user: (text: string): AgentEvent => ({
    type: "message_start",
    message: { role: "user", content: [{ type: "text", text }], timestamp: 0 },
  }),
  toolStart: (toolCallId: string, toolName: string): AgentEvent => ({
    type: "tool_execution_start",
    toolCallId,
    toolName,
    args: {},
  }),
  toolUpdate: (toolCallId: string, toolName: string, text: string): AgentEvent => ({
    type: "tool_execution_update",
    toolCallId,
    toolName,
    args: {},
    partialResult: { content: [{ type: "text", text }], details: {} },
  }),
  toolEnd: (
    toolCallId: string,
    toolName: string,
    outcome: { error?: string; durationMs?: number } = {},
  ): AgentEvent => ({
    type: "tool_execution_end",
    toolCallId,
    toolName,
    result: { content: [{ type: "text", text: outcome.error ?? "ok" }], details: {} },
    isError: outcome.error !== undefined,
    ...(outcome.durationMs === undefined ? {} : { durationMs: outcome.durationMs }),
  }),
};
