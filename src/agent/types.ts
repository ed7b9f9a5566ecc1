import type { z } from "zod";
import type { EventStream } from "./event-stream.js";

// ---------------------------------------------------------------------------
// Content blocks and LLM messages (field names follow pi-ai exactly).
// ---------------------------------------------------------------------------

/** Plain text. `textSignature` is an opaque provider token, passed back unchanged. */
export interface TextContent {
  type: "text";
  text: string;
  textSignature?: string;
}

/** Model reasoning. Not shown to users by default; may be `redacted` by the provider. */
export interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  redacted?: boolean;
}

/** An inline image, base64-encoded. */
export interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
}

/** A tool call requested by the model. `arguments` is always an object (parsed JSON). */
export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  thoughtSignature?: string;
}

/** Why an assistant message ended. `error` and `aborted` end the run. */
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

/** Token counts and cost (in the configured currency unit, usually USD) of one model response. */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  /** Of `output`, the reasoning tokens, when the provider reports them (priced on their own when set). */
  reasoning?: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
}

export interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
}

export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCall)[];
  api: string;
  provider: string;
  model: string;
  responseModel?: string;
  responseId?: string;
  usage: Usage;
  stopReason: StopReason;
  errorMessage?: string;
  /**
   * Set (with `stopReason: "aborted"`) when an interrupt cut this response short (docs/agent-loop.md,
   * deviation 6): the message stays in the transcript as the partial answer; `by` names who interrupted, when
   * the source said so.
   */
  interrupted?: InterruptNotice;
  timestamp: number;
}

export interface ToolResultMessage<TDetails = unknown> {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: TDetails;
  isError: boolean;
  timestamp: number;
}

/** A message the model understands. */
export type Message = UserMessage | AssistantMessage | ToolResultMessage;

/**
 * App-defined messages. Extend through declaration merging:
 * `declare module "threadline/agent" { interface CustomAgentMessages { note: { role: "note"; … } } }`.
 * The loop never inspects them; `convertToLlm` decides what the model sees.
 */
// biome-ignore lint/suspicious/noEmptyInterface: extension point for declaration merging.
export interface CustomAgentMessages {}

/** Anything that can live in an agent transcript. */
export type AgentMessage = Message | CustomAgentMessages[keyof CustomAgentMessages];

// ---------------------------------------------------------------------------
// Models and the stream-function contract (docs/agent-loop.md §5).
// ---------------------------------------------------------------------------

/** Reasoning effort. `"off"` means no `reasoning` option is sent. */
export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";

/** Describes a model to the stream function. Only `id`, `api` and `provider` are read by the loop. */
export interface Model {
  id: string;
  name: string;
  api: string;
  provider: string;
  baseUrl?: string;
  reasoning?: boolean;
  input?: ("text" | "image")[];
  /** Price per million tokens. */
  cost?: { input: number; output: number; cacheRead: number; cacheWrite: number };
  contextWindow: number;
  maxTokens: number;
  headers?: Record<string, string>;
}

/** A tool as the model sees it: the zod schema is converted to JSON Schema by the provider. */
export interface Tool<TParams extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: TParams;
}

/** What one model request is given. */
export interface LlmContext {
  systemPrompt: string;
  messages: Message[];
  tools?: Tool[];
}

/** Options handed to the stream function with every request (the loop config is spread in). */
export interface StreamOptions {
  signal?: AbortSignal;
  apiKey?: string;
  temperature?: number;
  maxTokens?: number;
  reasoning?: Exclude<ThinkingLevel, "off">;
  headers?: Record<string, string>;
  timeoutMs?: number;
  maxRetries?: number;
  sessionId?: string;
  metadata?: Record<string, unknown>;
}

/** The provider event protocol. `partial` is the live message being built. */
export type AssistantMessageEvent =
  | { type: "start"; partial: AssistantMessage }
  | { type: "text_start"; contentIndex: number; partial: AssistantMessage }
  | { type: "text_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  | { type: "text_end"; contentIndex: number; content: string; partial: AssistantMessage }
  | { type: "thinking_start"; contentIndex: number; partial: AssistantMessage }
  | { type: "thinking_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  | { type: "thinking_end"; contentIndex: number; content: string; partial: AssistantMessage }
  | { type: "toolcall_start"; contentIndex: number; partial: AssistantMessage }
  | { type: "toolcall_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial: AssistantMessage }
  | { type: "done"; reason: "stop" | "length" | "toolUse"; message: AssistantMessage }
  | { type: "error"; reason: "aborted" | "error"; error: AssistantMessage };

/** A stream of provider events whose `result()` is the final assistant message. */
export type AssistantMessageEventStream = EventStream<AssistantMessageEvent, AssistantMessage>;

/**
 * Calls a model. Must never throw or reject: failures are encoded as a final `error` event whose
 * message has `stopReason: "error" | "aborted"` and an `errorMessage`.
 *
 * `context.messages` may be an array the loop keeps appending to on later turns: read or copy it during
 * the request; do not keep it.
 */
export type StreamFn = (
  model: Model,
  context: LlmContext,
  options: StreamOptions,
) => AssistantMessageEventStream | Promise<AssistantMessageEventStream>;

// ---------------------------------------------------------------------------
// Tools run by the agent.
// ---------------------------------------------------------------------------

/** What a tool returns. `details` is for UIs and logs, `content` is what the model reads. */
export interface AgentToolResult<TDetails = unknown> {
  content: (TextContent | ImageContent)[];
  details: TDetails;
  /** When every result of a batch sets this, the run stops after the batch (unless messages are queued). */
  terminate?: boolean;
}

/** Streams a partial result; each call becomes a `tool_execution_update` event. */
export type AgentToolUpdateCallback<TDetails = unknown> = (partialResult: AgentToolResult<TDetails>) => void;

/** Sequential forces the whole batch a call belongs to to run one call at a time. */
export type ToolExecutionMode = "sequential" | "parallel";

/** A tool the agent can execute. Errors are reported by throwing; the loop turns them into results. */
export interface AgentTool<TParams extends z.ZodType = z.ZodType, TDetails = unknown> extends Tool<TParams> {
  /** Human-readable name for UIs. */
  label?: string;
  /** Compatibility shim run on the raw arguments before validation. May throw. */
  prepareArguments?: (args: Record<string, unknown>) => Record<string, unknown>;
  /** Runs the tool with validated arguments. Throw to report failure. */
  execute: (
    toolCallId: string,
    params: z.output<TParams>,
    signal?: AbortSignal,
    onUpdate?: AgentToolUpdateCallback<TDetails>,
  ) => Promise<AgentToolResult<TDetails>>;
  executionMode?: ToolExecutionMode;
  /**
   * True when a steer or interrupt that arrives while this tool runs may abort it (docs/agent-loop.md,
   * deviation 6): its signal then aborts with an {@link InterruptNotice} reason and its result tells the model
   * it was interrupted by a new message. Leave unset (the default) for side-effecting tools that must not stop
   * half-way.
   */
  interruptible?: boolean;
}

/** A tool with any schema and details; what collections of tools are typed as. */
// biome-ignore lint/suspicious/noExplicitAny: variance escape hatch for heterogeneous tool lists.
export type AnyAgentTool = AgentTool<any, any>;

/** The agent's working context: prompt, transcript and tools. */
export interface AgentContext {
  systemPrompt: string;
  messages: AgentMessage[];
  tools?: AnyAgentTool[];
}

// ---------------------------------------------------------------------------
// Hooks.
// ---------------------------------------------------------------------------

/**
 * What `beforeToolCall(ctx, signal)` sees: the last step of a call's preparation (docs/agent-loop.md §4.2).
 *
 * It is called once per call, in call order, after the tool was found and its arguments validated — never
 * for an unknown tool, invalid arguments, a response cut by the token limit, or a call skipped because the
 * run was already aborted. Calls are prepared one after another in both modes, so a hook that waits (an
 * approval) holds up the preparation of the calls after it; in parallel mode no call of the batch executes
 * before every call has been prepared. The hook receives the run's signal and should give up when it
 * aborts; after it settles, an aborted run ends the call as `Operation aborted`.
 *
 * It may throw: the throw becomes that call's error result (its message as the text) and `execute` is not
 * called. Returning `undefined` (or no `block`) lets the call run.
 */
export interface BeforeToolCallContext {
  /** The response that asked for the call; already in the transcript and in `context.messages`. */
  assistantMessage: AssistantMessage;
  /** The original block with the model's raw arguments. */
  toolCall: ToolCall;
  /** Validated, coerced arguments. Mutating them changes what `execute` receives (not revalidated). */
  args: Record<string, unknown>;
  /** The run's working context (transcript, tools); read it, do not change it. */
  context: AgentContext;
}

/** What `beforeToolCall` answers; `undefined` means "run it". */
export interface BeforeToolCallResult {
  /** Refuse the call: it ends as an error result and `execute` never runs. */
  block?: boolean;
  /** Text of the error result when blocked. Default `Tool execution was blocked`. */
  reason?: string;
  /** With `block`: the blocked result counts as terminating (the run stops asking the model if all do). */
  terminate?: boolean;
}

/**
 * What `afterToolCall(ctx, signal)` sees: an executed call's result, before `tool_execution_end`
 * (docs/agent-loop.md §4.3).
 *
 * It is called once for every call that ran `execute` — whether it returned (`isError: false`) or threw
 * (`isError: true`) — and never for a call that ended in preparation (unknown tool, invalid arguments,
 * blocked, aborted). In parallel mode calls finish, and the hook runs, in completion order; tool-result
 * messages still follow in call order once the whole batch is done. The `tool_execution_update` events of
 * the call have all been emitted before it runs. It receives the run's signal.
 *
 * It may throw: the result then becomes an error result whose text is the thrown message. Returning
 * `undefined` keeps the result as it is.
 */
export interface AfterToolCallContext {
  /** The response that asked for the call. */
  assistantMessage: AssistantMessage;
  /** The original block with the model's raw arguments. */
  toolCall: ToolCall;
  /** The arguments `execute` received (validated, and as `beforeToolCall` left them). */
  args: Record<string, unknown>;
  /** What `execute` returned, or the error result of its throw. */
  result: AgentToolResult;
  /** True when `execute` threw (or an interruption stopped it). */
  isError: boolean;
  /** The run's working context (transcript, tools); read it, do not change it. */
  context: AgentContext;
}

/**
 * Field-wise replacement of an executed call's result: each of `content`, `details`, `isError` and
 * `terminate` that is present replaces the original; `null`/`undefined` fields keep it. No deep merge.
 */
export interface AfterToolCallResult {
  content?: (TextContent | ImageContent)[] | null;
  details?: unknown;
  isError?: boolean | null;
  terminate?: boolean | null;
}

/** A completed turn, given to `shouldStopAfterTurn` and `prepareNextTurn`. */
export interface TurnContext {
  message: AssistantMessage;
  toolResults: ToolResultMessage[];
  context: AgentContext;
  newMessages: AgentMessage[];
}

/** Replaces parts of the run before the next turn. */
export interface PrepareNextTurnResult {
  context?: AgentContext;
  model?: Model;
  thinkingLevel?: ThinkingLevel;
}

type MaybePromise<T> = T | Promise<T>;

/**
 * Who interrupted: the `reason` of an interrupt source's signals, and the marker on a response an
 * interrupt cut short. `by` is a display name (e.g. the chat author of the new message), if known.
 */
export interface InterruptNotice {
  by?: string;
}

/**
 * Where the loop learns of messages that must be delivered now (docs/agent-loop.md, deviation 6). Push, not
 * polling: the loop asks for a signal when a phase starts and the source aborts it the moment a message
 * arrives, so the abort reaches the model request (or the interruptible tools) at once.
 *
 * - `signal("stream")` is asked right before each model request and must abort (reason: an
 *   {@link InterruptNotice}) when an interrupt message is waiting — already aborted if one waits now. The
 *   loop then aborts that request only (the run's signal stays live), finishes the partial answer with
 *   `stopReason: "aborted"` and `interrupted`, gives its tool calls `Operation aborted` results, injects
 *   {@link InterruptSource.take}'s messages and calls the model again at once.
 * - `signal("tools")` is asked when a tool batch starts and must abort when an interrupt **or a steering
 *   message** is waiting: only tools declared `interruptible` see it; everything else runs on, and the
 *   messages are delivered after the batch (interrupts first, then the usual steering poll).
 * - `take()` drains every waiting interrupt message (`[]` when there is none any more, e.g. it was
 *   withdrawn); afterwards `signal()` must hand out a fresh signal unless another message waits.
 *
 * Neither method may throw (a throw ends the run with an error message: docs/agent-loop.md, deviation 5).
 */
export interface InterruptSource {
  signal(phase: "stream" | "tools"): AbortSignal | undefined;
  take(): Promise<AgentMessage[]>;
}

/** Configuration of one loop run. Everything except the loop fields is spread into each request. */
export interface AgentLoopConfig extends StreamOptions {
  model: Model;
  /** AgentMessage[] → Message[] before every request. Must not throw. */
  convertToLlm: (messages: AgentMessage[]) => MaybePromise<Message[]>;
  /** Prunes or injects before `convertToLlm`; the result is used for that request only. Must not throw. */
  transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;
  /** Per-request key; a falsy result falls back to `apiKey`. Must not throw. */
  getApiKey?: (provider: string) => MaybePromise<string | undefined>;
  /** Queued steering messages; `[]` when none. Must not throw. */
  getSteeringMessages?: () => Promise<AgentMessage[]>;
  /** Queued follow-up messages; `[]` when none. Must not throw. */
  getFollowUpMessages?: () => Promise<AgentMessage[]>;
  /** Messages delivered now: they abort the model stream and interruptible tools (docs/agent-loop.md, deviation 6). */
  interrupts?: InterruptSource;
  /** Default `"parallel"`. */
  toolExecution?: ToolExecutionMode;
  /** Preflight per call; may block. A throw becomes an error result. */
  beforeToolCall?: (
    ctx: BeforeToolCallContext,
    signal?: AbortSignal,
  ) => MaybePromise<BeforeToolCallResult | undefined>;
  /** Post-processes an executed call's result. A throw becomes an error result. */
  afterToolCall?: (
    ctx: AfterToolCallContext,
    signal?: AbortSignal,
  ) => MaybePromise<AfterToolCallResult | undefined>;
  /** Graceful stop after a completed turn. Must not throw. */
  shouldStopAfterTurn?: (ctx: TurnContext) => MaybePromise<boolean>;
  /** Swaps context/model/thinking level before each non-first turn. Must not throw. */
  prepareNextTurn?: (ctx: TurnContext) => MaybePromise<PrepareNextTurnResult | undefined>;
}

// ---------------------------------------------------------------------------
// Agent events (docs/agent-loop.md §3).
// ---------------------------------------------------------------------------

/**
 * What the loop reports, in order, to the event stream (`agentLoop`) or the awaited sink (`runAgentLoop`,
 * `Agent` listeners). Exact orders are in docs/agent-loop.md §2–§4; the guarantees a consumer may rely on:
 *
 * - A run starts with `agent_start` and always ends with exactly one `agent_end` (also after an abort, a
 *   provider error or a throwing hook); `agent_end.messages` are the run's new messages, in order.
 * - Every `turn_start` has one `turn_end`; a turn holds the messages injected into it, one assistant
 *   response and that response's tool batch. `turn_end.toolResults` are in call order.
 * - Every message that enters the transcript is announced by `message_start` … `message_end`, in transcript
 *   order; `message_update` only for an assistant message while it streams. `message_end` carries the
 *   object that is stored; an assistant `message_start`/`message_update` carries a shallow copy whose
 *   content blocks may already hold later deltas (use `assistantMessageEvent`).
 * - Every tool call of a response gets `tool_execution_start` and `tool_execution_end` (deviation 1), with
 *   its `tool_execution_update`s in between — except in a response that ended in `error`, or `aborted` by
 *   the run, whose calls are ignored. Starts come in call order, ends in call order when sequential and in
 *   completion order when parallel (calls that failed preparation end during the preflight).
 *
 * With `runAgentLoop` the loop waits for the sink on every event, so a consumer sees state before the loop
 * moves on; a sink that throws (rejects) fails the run: the promise rejects with that error.
 */
export type AgentEvent =
  | { type: "agent_start" }
  | { type: "agent_end"; messages: AgentMessage[] }
  | { type: "turn_start" }
  | { type: "turn_end"; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: "message_start"; message: AgentMessage }
  | { type: "message_update"; message: AssistantMessage; assistantMessageEvent: AssistantMessageEvent }
  | { type: "message_end"; message: AgentMessage }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: Record<string, unknown> }
  | {
      type: "tool_execution_update";
      toolCallId: string;
      toolName: string;
      args: Record<string, unknown>;
      partialResult: AgentToolResult;
    }
  | {
      type: "tool_execution_end";
      toolCallId: string;
      toolName: string;
      result: AgentToolResult;
      isError: boolean;
      /** How long `execute` ran, rounded to ms; absent when the call never executed. */
      durationMs?: number;
    };

export type AgentEventType = AgentEvent["type"];

/** Receives loop events; awaited by `runAgentLoop`, so it is a barrier for the loop. */
export type AgentEventSink = (event: AgentEvent) => MaybePromise<void>;
