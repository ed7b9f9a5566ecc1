import { z } from "zod";
import {
  Agent,
  type AgentEvent,
  type AgentLoopConfig,
  type AgentMessage,
  type AgentOptions,
  type AgentToolResult,
  type AgentToolUpdateCallback,
  type AnyAgentTool,
  type AssistantMessage,
  type EventStream,
  type Message,
  type ToolResultMessage,
} from "../../src/agent/index.js";
import { ScriptedModel, type ScriptedResponse, TEST_MODEL } from "../fakes/scripted-model.js";

/** Resolves when `signal` aborts (immediately when it already has). */
export function whenAborted(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!signal || signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function roleOf(message: AgentMessage): string {
  return (message as { role: string }).role;
}

/** The concatenated text blocks of a message (or its string content). */
export function textOf(message: AgentMessage | undefined): string {
  const content = (message as { content?: unknown } | undefined)?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block): block is { type: "text"; text: string } => block?.type === "text")
    .map((block) => block.text)
    .join("");
}

/** The text of the first text block of a tool result. */
export function resultText(result: AgentToolResult | ToolResultMessage): string {
  const block = result.content[0];
  return block?.type === "text" ? block.text : "";
}

function messageLabel(message: AgentMessage, atEnd: boolean): string {
  const role = roleOf(message);
  if (role === "user") return `user:${textOf(message)}`;
  if (role === "assistant")
    return atEnd ? `assistant:${(message as AssistantMessage).stopReason}` : "assistant";
  if (role === "toolResult") {
    const result = message as ToolResultMessage;
    return `toolResult:${result.toolCallId}${result.isError ? ":error" : ""}`;
  }
  return role;
}

/**
 * One event as a short string: `message_start(user:hi)`, `message_end(assistant:stop)`,
 * `message_update(text_delta)`, `tool_execution_end(C:error)`, `turn_end(A,B)`.
 */
export function short(event: AgentEvent): string {
  switch (event.type) {
    case "message_start":
      return `message_start(${messageLabel(event.message, false)})`;
    case "message_end":
      return `message_end(${messageLabel(event.message, true)})`;
    case "message_update":
      return `message_update(${event.assistantMessageEvent.type})`;
    case "tool_execution_start":
    case "tool_execution_update":
      return `${event.type}(${event.toolCallId})`;
    case "tool_execution_end":
      return `tool_execution_end(${event.toolCallId}${event.isError ? ":error" : ""})`;
    case "turn_end":
      return `turn_end(${event.toolResults.map((result) => result.toolCallId).join(",")})`;
    default:
      return event.type;
  }
}

/** Drops `message_update` events, for sequences where streaming detail is not the point. */
export function withoutUpdates(events: string[]): string[] {
  return events.filter((event) => !event.startsWith("message_update"));
}

/** Records every event an agent emits, raw and shortened. */
export function recordAgent(agent: Agent): { events: AgentEvent[]; shorts: string[] } {
  const events: AgentEvent[] = [];
  const shorts: string[] = [];
  agent.subscribe((event) => {
    events.push(event);
    shorts.push(short(event));
  });
  return { events, shorts };
}

/** Drains a low-level event stream. */
export async function collect(stream: EventStream<AgentEvent, AgentMessage[]>): Promise<AgentEvent[]> {
  const events: AgentEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** A user message with a single text block. */
export function user(text: string): Message {
  return { role: "user", content: [{ type: "text", text }], timestamp: 0 };
}

/** Role plus text of each message, e.g. `user:P`, `assistant:done`, `toolResult:t1:echo:hi`. */
export function transcript(messages: readonly AgentMessage[]): string[] {
  return messages.map((message) => {
    const role = roleOf(message);
    if (role === "toolResult") {
      const result = message as ToolResultMessage;
      return `toolResult:${result.toolCallId}${result.isError ? ":error" : ""}:${textOf(result)}`;
    }
    if (role === "assistant") {
      const assistant = message as AssistantMessage;
      const calls = assistant.content.filter((block) => block.type === "toolCall").map((block) => block.id);
      return `assistant:${textOf(assistant)}${calls.length ? `[${calls.join(",")}]` : ""}`;
    }
    return `${role}:${textOf(message)}`;
  });
}

export function textResult(text: string, extra: Partial<AgentToolResult> = {}): AgentToolResult {
  return { content: [{ type: "text", text }], details: {}, ...extra };
}

type Execute = (
  toolCallId: string,
  params: Record<string, unknown>,
  signal: AbortSignal | undefined,
  onUpdate: AgentToolUpdateCallback | undefined,
) => Promise<AgentToolResult>;

/** A tool with a loose schema (`{ text?: string }` by default) that records the params it received. */
export function createTool(
  name: string,
  execute: Execute = async (_id, params) => textResult(`${name}:${String(params.text ?? "")}`),
  options: Partial<Pick<AnyAgentTool, "parameters" | "executionMode" | "prepareArguments">> = {},
): AnyAgentTool & { calls: { id: string; params: Record<string, unknown> }[] } {
  const calls: { id: string; params: Record<string, unknown> }[] = [];
  return {
    name,
    description: `${name} tool`,
    parameters: options.parameters ?? z.object({ text: z.string().optional() }),
    ...(options.executionMode ? { executionMode: options.executionMode } : {}),
    ...(options.prepareArguments ? { prepareArguments: options.prepareArguments } : {}),
    calls,
    execute: (id, params: Record<string, unknown>, signal, onUpdate) => {
      calls.push({ id, params });
      return execute(id, params, signal, onUpdate);
    },
  };
}

/** Echoes `text`. */
export const echoTool = (): ReturnType<typeof createTool> =>
  createTool("echo", async (_id, params) => textResult(`echo:${String(params.text)}`), {
    parameters: z.object({ text: z.string() }),
  });

/** A minimal loop config using the default-like convertToLlm. */
export function loopConfig(overrides: Partial<AgentLoopConfig> = {}): AgentLoopConfig {
  return {
    model: TEST_MODEL,
    convertToLlm: (messages) =>
      messages.filter((message) =>
        ["user", "assistant", "toolResult"].includes(roleOf(message)),
      ) as Message[],
    ...overrides,
  };
}

/** Lets pending microtasks and one macrotask run (for "nothing else happens" checks, never for ordering). */
export function flushMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The events of a streamed prompt: `message_start/end(user:<text>)`. */
export function promptEvents(text: string): string[] {
  return [`message_start(user:${text})`, `message_end(user:${text})`];
}

/** The events of a ScriptedModel response with `chunks` text deltas and no tool calls. */
export function textReply(chunks = 1, stopReason = "stop"): string[] {
  return [
    "message_start(assistant)",
    "message_update(text_start)",
    ...Array.from({ length: chunks }, () => "message_update(text_delta)"),
    "message_update(text_end)",
    `message_end(assistant:${stopReason})`,
  ];
}

/** The events of a ScriptedModel response with `calls` tool calls and no text. */
export function toolCallReply(calls: number, stopReason = "toolUse"): string[] {
  return [
    "message_start(assistant)",
    ...Array.from({ length: calls }, () => [
      "message_update(toolcall_start)",
      "message_update(toolcall_delta)",
      "message_update(toolcall_end)",
    ]).flat(),
    `message_end(assistant:${stopReason})`,
  ];
}

/** Prompt "go" → one `echo` call `t1` with `{ text: "a" }` → text "done". */
export const ECHO_TURN_SCRIPT = [
  { toolCalls: [{ id: "t1", name: "echo", arguments: { text: "a" } }] },
  { text: "done" },
];

/** The events of {@link ECHO_TURN_SCRIPT} up to the first `turn_end`. */
export const ECHO_TURN_EVENTS = [
  "agent_start",
  "turn_start",
  ...promptEvents("go"),
  ...toolCallReply(1),
  "tool_execution_start(t1)",
  "tool_execution_end(t1)",
  "message_start(toolResult:t1)",
  "message_end(toolResult:t1)",
  "turn_end(t1)",
];

/** Hooks {@link runScript} passes to the Agent. */
export type ToolHookOptions = Pick<AgentOptions, "beforeToolCall" | "afterToolCall">;

/** Prompts "go" on a fresh Agent with `tools` and the scripted responses; returns the recorded run. */
export async function runScript(
  tools: AnyAgentTool[],
  script: ScriptedResponse[],
  options: ToolHookOptions = {},
) {
  const model = new ScriptedModel(script);
  const agent = new Agent({
    initialState: { model: TEST_MODEL, tools },
    streamFn: model.streamFn,
    ...options,
  });
  const recorded = recordAgent(agent);
  await agent.prompt("go");
  return { agent, model, ...recorded };
}

/** The `tool_execution_end` event of call `id`. */
export function toolEnd(
  events: AgentEvent[],
  id: string,
): Extract<AgentEvent, { type: "tool_execution_end" }> {
  const end = events.find((event) => event.type === "tool_execution_end" && event.toolCallId === id);
  if (end?.type !== "tool_execution_end") throw new Error(`no tool_execution_end for ${id}`);
  return end;
}

/** The events of prompt "go" → one tool call `id` → one text reply. */
export function oneCallThenText(id: string, isError: boolean, replyStop = "toolUse"): string[] {
  const label = isError ? `${id}:error` : id;
  return [
    "agent_start",
    "turn_start",
    ...promptEvents("go"),
    ...toolCallReply(1, replyStop),
    `tool_execution_start(${id})`,
    `tool_execution_end(${label})`,
    `message_start(toolResult:${label})`,
    `message_end(toolResult:${label})`,
    `turn_end(${id})`,
    "turn_start",
    ...textReply(),
    "turn_end()",
    "agent_end",
  ];
}

/** A turn that injects `texts` and gets a one-chunk text answer. */
export function injectedTurn(...texts: string[]): string[] {
  return ["turn_start", ...texts.flatMap((text) => promptEvents(text)), ...textReply(), "turn_end()"];
}
