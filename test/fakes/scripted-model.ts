import {
  type AssistantMessage,
  type AssistantMessageEventStream,
  createAssistantMessageEventStream,
  defaultConvertToLlm,
  type LlmContext,
  type Message,
  type Model,
  type StreamFn,
  type StreamOptions,
  type ToolCall,
  type Usage,
} from "../../src/agent/index.js";
import type { AgentSetup, RunTool } from "../../src/runs/index.js";

/** One scripted model response. */
export interface ScriptedResponse {
  /** Text chunks streamed as text deltas (a string is one chunk). */
  text?: string | string[];
  thinking?: string;
  toolCalls?: { id: string; name: string; arguments: Record<string, unknown> }[];
  /** Default: `toolUse` when there are tool calls, else `stop`. */
  stopReason?: "stop" | "length" | "toolUse" | "error";
  errorMessage?: string;
  /** Waits this long (ms) before the final event. */
  delayMs?: number;
  /** Streams `start` and then waits until the request's signal aborts. */
  hang?: boolean;
  /** Skip the `start` event (a stream without it produces no message_update). */
  noStart?: boolean;
  /** Usage of the final message (default all zero), as a provider's usage chunk reports it. */
  usage?: Partial<Omit<Usage, "cost">> & { cost?: Partial<Usage["cost"]> };
}

/** What the model saw in one request (deep copies, so later transcript changes do not leak in). */
export interface RecordedRequest {
  model: Model;
  systemPrompt: string;
  messages: Message[];
  toolNames: string[];
  options: StreamOptions;
}

export const TEST_MODEL: Model = {
  id: "scripted",
  name: "Scripted",
  api: "scripted",
  provider: "scripted",
  contextWindow: 100_000,
  maxTokens: 4_096,
};

/** The agent a test worker runs: {@link TEST_MODEL} answered by `streamFn`, with `tools`. */
export function testAgent(streamFn: StreamFn, tools: RunTool[] = []): AgentSetup {
  return {
    model: TEST_MODEL,
    streamFn,
    convertToLlm: defaultConvertToLlm,
    systemPrompt: "You are a test bot.",
    tools,
  };
}

export function zeroUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/** A new assistant message of `model` with no content yet (the `partial` a provider stream starts with). */
export function emptyAssistantMessage(model: Model): AssistantMessage {
  return {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: zeroUsage(),
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

/**
 * An in-process model that follows the provider event protocol (spec §11). Each request takes the next
 * scripted response (a function receives the request first); requests are recorded in `requests`.
 */
export class ScriptedModel {
  readonly requests: RecordedRequest[] = [];
  /** Answers requests once the script is exhausted (default: a "(script exhausted)" text). */
  fallback: ((request: RecordedRequest) => ScriptedResponse) | undefined;
  /** Keep a deep copy of every request in `requests`. Default `true`; long race tests turn it off. */
  recordRequests = true;
  private readonly script: (ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse))[];

  constructor(script: (ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse))[]) {
    this.script = [...script];
  }

  /** Appends responses to the script. */
  push(...responses: (ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse))[]): void {
    this.script.push(...responses);
  }

  readonly streamFn: StreamFn = (model: Model, context: LlmContext, options: StreamOptions) => {
    const request: RecordedRequest = {
      model,
      systemPrompt: context.systemPrompt,
      messages: this.recordRequests ? structuredClone(context.messages) : context.messages,
      toolNames: (context.tools ?? []).map((tool) => tool.name),
      options: { ...options },
    };
    if (this.recordRequests) this.requests.push(request);
    const next = this.script.shift() ?? this.fallback ?? { text: "(script exhausted)" };
    const response = typeof next === "function" ? next(request) : next;
    const stream = createAssistantMessageEventStream();
    void play(stream, model, response, options.signal);
    return stream;
  };
}

async function play(
  stream: AssistantMessageEventStream,
  model: Model,
  response: ScriptedResponse,
  signal: AbortSignal | undefined,
): Promise<void> {
  const partial = emptyAssistantMessage(model);
  const aborted = (): void => {
    partial.stopReason = "aborted";
    partial.errorMessage = "Request was aborted";
    stream.push({ type: "error", reason: "aborted", error: partial });
  };
  if (!response.noStart) stream.push({ type: "start", partial });
  await Promise.resolve();
  if (signal?.aborted) return aborted();
  if (response.thinking !== undefined) {
    const index = partial.content.push({ type: "thinking", thinking: "" }) - 1;
    stream.push({ type: "thinking_start", contentIndex: index, partial });
    (partial.content[index] as { thinking: string }).thinking = response.thinking;
    stream.push({ type: "thinking_delta", contentIndex: index, delta: response.thinking, partial });
    stream.push({ type: "thinking_end", contentIndex: index, content: response.thinking, partial });
  }
  if (response.text !== undefined) {
    const chunks = typeof response.text === "string" ? [response.text] : response.text;
    const block = { type: "text" as const, text: "" };
    const index = partial.content.push(block) - 1;
    stream.push({ type: "text_start", contentIndex: index, partial });
    for (const chunk of chunks) {
      block.text += chunk;
      stream.push({ type: "text_delta", contentIndex: index, delta: chunk, partial });
    }
    stream.push({ type: "text_end", contentIndex: index, content: block.text, partial });
  }
  for (const call of response.toolCalls ?? []) {
    const block: ToolCall = { type: "toolCall", id: call.id, name: call.name, arguments: {} };
    const index = partial.content.push(block) - 1;
    stream.push({ type: "toolcall_start", contentIndex: index, partial });
    block.arguments = call.arguments;
    stream.push({
      type: "toolcall_delta",
      contentIndex: index,
      delta: JSON.stringify(call.arguments),
      partial,
    });
    stream.push({ type: "toolcall_end", contentIndex: index, toolCall: block, partial });
  }
  if (response.hang) {
    await new Promise<void>((resolve) => {
      if (signal?.aborted) resolve();
      signal?.addEventListener("abort", () => resolve(), { once: true });
    });
    return aborted();
  }
  if (response.delayMs) await new Promise((resolve) => setTimeout(resolve, response.delayMs));
  if (signal?.aborted) return aborted();
  if (response.stopReason === "error") {
    partial.stopReason = "error";
    partial.errorMessage = response.errorMessage ?? "scripted failure";
    stream.push({ type: "error", reason: "error", error: partial });
    return;
  }
  const reason = response.stopReason ?? (response.toolCalls?.length ? "toolUse" : "stop");
  partial.stopReason = reason;
  if (response.usage) {
    const { cost, ...counts } = response.usage;
    partial.usage = { ...partial.usage, ...counts, cost: { ...partial.usage.cost, ...cost } };
  }
  stream.push({ type: "done", reason, message: partial });
}

/** A user message with one text block. */
export function userMessage(text: string): Message {
  return { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
}
