import { defaultConvertToLlm } from "./convert.js";
import { InterruptLatch } from "./interrupts.js";
import { failureMessage, runAgentLoop, runAgentLoopContinue } from "./loop.js";
import type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentContext,
  AgentEvent,
  AgentLoopConfig,
  AgentMessage,
  AnyAgentTool,
  AssistantMessage,
  BeforeToolCallContext,
  BeforeToolCallResult,
  ImageContent,
  InterruptNotice,
  Message,
  Model,
  PrepareNextTurnResult,
  StreamFn,
  StreamOptions,
  ThinkingLevel,
  ToolExecutionMode,
  TurnContext,
} from "./types.js";

/** How many queued messages one drain point takes. */
export type QueueMode = "one-at-a-time" | "all";

/** Receives every event after the state was updated; awaited in registration order. */
export type AgentListener = (event: AgentEvent, signal: AbortSignal) => void | Promise<void>;

type MaybePromise<T> = T | Promise<T>;

/** The initial (and resettable) state of an {@link Agent}. */
export interface AgentInitialState {
  systemPrompt?: string;
  model?: Model;
  thinkingLevel?: ThinkingLevel;
  tools?: AnyAgentTool[];
  messages?: AgentMessage[];
}

/** Options of an {@link Agent}. Every hook is also a public mutable property. */
export interface AgentOptions {
  initialState?: AgentInitialState;
  /** Default: keep user, assistant and toolResult messages. */
  convertToLlm?: (messages: AgentMessage[]) => MaybePromise<Message[]>;
  transformContext?: (messages: AgentMessage[], signal?: AbortSignal) => Promise<AgentMessage[]>;
  streamFn?: StreamFn;
  getApiKey?: (provider: string) => MaybePromise<string | undefined>;
  beforeToolCall?: (
    ctx: BeforeToolCallContext,
    signal?: AbortSignal,
  ) => MaybePromise<BeforeToolCallResult | undefined>;
  afterToolCall?: (
    ctx: AfterToolCallContext,
    signal?: AbortSignal,
  ) => MaybePromise<AfterToolCallResult | undefined>;
  shouldStopAfterTurn?: (ctx: TurnContext, signal: AbortSignal) => MaybePromise<boolean>;
  prepareNextTurn?: (
    ctx: TurnContext,
    signal: AbortSignal,
  ) => MaybePromise<PrepareNextTurnResult | undefined>;
  /** Default `"one-at-a-time"`. */
  steeringMode?: QueueMode;
  /** Default `"one-at-a-time"`. */
  followUpMode?: QueueMode;
  /** Default `"parallel"`. */
  toolExecution?: ToolExecutionMode;
  sessionId?: string;
  /** Extra options spread into every model request (temperature, maxTokens, headers, …). */
  streamOptions?: Omit<StreamOptions, "signal" | "reasoning">;
}

/** The model used until one is set. */
export const UNKNOWN_MODEL: Model = {
  id: "unknown",
  name: "unknown",
  api: "unknown",
  provider: "unknown",
  contextWindow: 0,
  maxTokens: 0,
};

/** A queued message; `inFlight` once a drain handed it to the loop, removed at its `message_end`. */
interface QueueEntry {
  message: AgentMessage;
  inFlight: boolean;
}

/** True when a queue holds a message no drain has taken yet. */
function hasReady(queue: readonly QueueEntry[]): boolean {
  return queue.some((entry) => !entry.inFlight);
}

/** The `Agent`'s observable state. */
export class AgentState {
  systemPrompt: string;
  model: Model;
  thinkingLevel: ThinkingLevel;
  private toolList: AnyAgentTool[];
  private messageList: AgentMessage[];
  /** @internal */ streaming = false;
  /** @internal */ partial: AgentMessage | undefined;
  /** @internal */ pending: Set<string> = new Set();
  /** @internal The current set was handed out: copy before the next change. */ pendingShared = false;
  /** @internal */ error: string | undefined;

  constructor(initial: AgentInitialState = {}) {
    this.systemPrompt = initial.systemPrompt ?? "";
    this.model = initial.model ?? UNKNOWN_MODEL;
    this.thinkingLevel = initial.thinkingLevel ?? "off";
    this.toolList = [...(initial.tools ?? [])];
    this.messageList = [...(initial.messages ?? [])];
  }

  /** The live tool list; assigning copies the array. */
  get tools(): AnyAgentTool[] {
    return this.toolList;
  }
  set tools(tools: AnyAgentTool[]) {
    this.toolList = [...tools];
  }
  /** The live transcript; mutating it mutates state, assigning copies the array. */
  get messages(): AgentMessage[] {
    return this.messageList;
  }
  set messages(messages: AgentMessage[]) {
    this.messageList = [...messages];
  }
  get isStreaming(): boolean {
    return this.streaming;
  }
  /** The message currently being streamed (never in `messages` until its `message_end`). */
  get streamingMessage(): AgentMessage | undefined {
    return this.partial;
  }
  /** Ids of tool calls between start and end. A new set after each change (a returned set never changes). */
  get pendingToolCalls(): ReadonlySet<string> {
    this.pendingShared = true;
    return this.pending;
  }
  get errorMessage(): string | undefined {
    return this.error;
  }
}

/**
 * A stateful agent: one transcript, two message queues (steering and follow-up) and at most one run at a
 * time. Queued messages leave their queue only when injected into the transcript (docs/agent-loop.md, deviation 3).
 */
export class Agent {
  readonly state: AgentState;
  convertToLlm: (messages: AgentMessage[]) => MaybePromise<Message[]>;
  transformContext: AgentOptions["transformContext"];
  streamFn: StreamFn | undefined;
  getApiKey: AgentOptions["getApiKey"];
  beforeToolCall: AgentOptions["beforeToolCall"];
  afterToolCall: AgentOptions["afterToolCall"];
  shouldStopAfterTurn: AgentOptions["shouldStopAfterTurn"];
  prepareNextTurn: AgentOptions["prepareNextTurn"];
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  toolExecution: ToolExecutionMode;
  sessionId: string | undefined;
  streamOptions: Omit<StreamOptions, "signal" | "reasoning">;

  /** Replaced (never mutated) on subscribe/unsubscribe, so emitting needs no copy. */
  private listeners: readonly AgentListener[] = [];
  private steeringQueue: QueueEntry[] = [];
  private followUpQueue: QueueEntry[] = [];
  private interruptQueue: QueueEntry[] = [];
  /** Aborts the model stream (interrupts) and interruptible tools (interrupts and steers) of a run. */
  private readonly latch = new InterruptLatch((phase) =>
    phase === "stream"
      ? hasReady(this.interruptQueue)
      : hasReady(this.interruptQueue) || hasReady(this.steeringQueue),
  );
  private controller: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(options: AgentOptions = {}) {
    this.state = new AgentState(options.initialState);
    this.convertToLlm = options.convertToLlm ?? defaultConvertToLlm;
    this.transformContext = options.transformContext;
    this.streamFn = options.streamFn;
    this.getApiKey = options.getApiKey;
    this.beforeToolCall = options.beforeToolCall;
    this.afterToolCall = options.afterToolCall;
    this.shouldStopAfterTurn = options.shouldStopAfterTurn;
    this.prepareNextTurn = options.prepareNextTurn;
    this.steeringMode = options.steeringMode ?? "one-at-a-time";
    this.followUpMode = options.followUpMode ?? "one-at-a-time";
    this.toolExecution = options.toolExecution ?? "parallel";
    this.sessionId = options.sessionId;
    this.streamOptions = options.streamOptions ?? {};
  }

  /** Adds a listener; returns a function that removes it. */
  subscribe(listener: AgentListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners = this.listeners.filter((_, i) => i !== index);
    };
  }

  /** The current run's abort signal, if a run is active. */
  get signal(): AbortSignal | undefined {
    return this.controller?.signal;
  }

  /**
   * Queues a message for delivery after the current tool batch. Works whether or not a run is active. A
   * running tool declared `interruptible` is aborted by it (docs/agent-loop.md, deviation 6); `notice` names who
   * sent it.
   */
  steer(message: AgentMessage, notice: InterruptNotice = {}): void {
    this.steeringQueue.push({ message, inFlight: false });
    this.latch.steer(notice);
  }

  /**
   * Delivers a message now (docs/agent-loop.md, deviation 6): a streaming model request is aborted — its
   * partial answer stays in the transcript, marked `interrupted` — and the next request starts at once with
   * the message; while tools run, it is delivered after the batch like a steer and aborts the tools declared
   * `interruptible`.
   * Never ends the run. When idle, the message waits for the next run (delivered before steering).
   */
  interrupt(message: AgentMessage, notice: InterruptNotice = {}): void {
    this.interruptQueue.push({ message, inFlight: false });
    this.latch.interrupt(notice);
  }

  /** Queues a message for delivery when the agent would otherwise stop. */
  followUp(message: AgentMessage): void {
    this.followUpQueue.push({ message, inFlight: false });
  }

  clearSteeringQueue(): void {
    this.steeringQueue = [];
  }
  clearFollowUpQueue(): void {
    this.followUpQueue = [];
  }
  clearInterruptQueue(): void {
    this.interruptQueue = [];
  }
  clearAllQueues(): void {
    this.clearInterruptQueue();
    this.clearSteeringQueue();
    this.clearFollowUpQueue();
  }
  hasQueuedMessages(): boolean {
    return this.interruptQueue.length > 0 || this.steeringQueue.length > 0 || this.followUpQueue.length > 0;
  }
  /** The next batch a drain would take (interrupts, then steering, then follow-ups), without taking it. */
  peekQueuedMessages(): AgentMessage[] {
    if (hasReady(this.interruptQueue)) {
      return this.interruptQueue.filter((entry) => !entry.inFlight).map((entry) => entry.message);
    }
    const queue = this.steeringQueue.length > 0 ? this.steeringQueue : this.followUpQueue;
    const mode = queue === this.steeringQueue ? this.steeringMode : this.followUpMode;
    const ready = queue.filter((entry) => !entry.inFlight).map((entry) => entry.message);
    return mode === "all" ? ready : ready.slice(0, 1);
  }

  /** Aborts the active run (no-op when idle). */
  abort(): void {
    this.controller?.abort();
  }

  /** Resolves when the active run and all its listeners are done. */
  waitForIdle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Clears transcript, streaming fields, errors and queues. @throws while a run is active. */
  reset(): void {
    if (this.state.streaming) {
      throw new Error("Agent is already processing. Wait for completion before resetting.");
    }
    this.state.messages = [];
    this.state.partial = undefined;
    this.state.pending = new Set();
    this.state.error = undefined;
    this.clearAllQueues();
  }

  /** Starts a run with a prompt. Rejects while a run is active. */
  prompt(text: string, images?: ImageContent[]): Promise<void>;
  prompt(message: AgentMessage | AgentMessage[]): Promise<void>;
  async prompt(input: string | AgentMessage | AgentMessage[], images: ImageContent[] = []): Promise<void> {
    if (this.state.streaming) {
      throw new Error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.",
      );
    }
    const prompts: AgentMessage[] =
      typeof input === "string"
        ? [{ role: "user", content: [{ type: "text", text: input }, ...images], timestamp: Date.now() }]
        : Array.isArray(input)
          ? input
          : [input];
    await this.run((config, emit, signal, context) =>
      runAgentLoop(prompts, context, config, emit, signal, this.streamFn),
    );
  }

  /**
   * Continues from the transcript. With an assistant tail, the next queued batch (steering first, then
   * follow-up) becomes the prompt. @throws "No messages to continue from" on an empty transcript.
   */
  async continue(): Promise<void> {
    if (this.state.streaming) {
      throw new Error("Agent is already processing. Wait for completion before continuing.");
    }
    const messages = this.state.messages;
    const last = messages[messages.length - 1] as { role?: unknown } | undefined;
    if (!last) throw new Error("No messages to continue from");
    if (last.role !== "assistant") {
      await this.run((config, emit, signal, context) =>
        runAgentLoopContinue(context, config, emit, signal, this.streamFn),
      );
      return;
    }
    const interrupts = this.drain(this.interruptQueue, "all");
    const steering = [...interrupts, ...this.drain(this.steeringQueue, this.steeringMode)];
    if (steering.length > 0) {
      await this.run((config, emit, signal, context) =>
        runAgentLoop(steering, context, config, emit, signal, this.streamFn, { initialPending: [] }),
      );
      return;
    }
    const followUps = this.drain(this.followUpQueue, this.followUpMode);
    if (followUps.length > 0) {
      await this.run((config, emit, signal, context) =>
        runAgentLoop(followUps, context, config, emit, signal, this.streamFn),
      );
      return;
    }
    throw new Error("Cannot continue from message role: assistant");
  }

  /** Takes the oldest (or every) ready message, marking it in flight until its `message_end`. */
  private drain(queue: QueueEntry[], mode: QueueMode): AgentMessage[] {
    const taken: AgentMessage[] = [];
    for (const entry of queue) {
      if (entry.inFlight) continue;
      entry.inFlight = true;
      taken.push(entry.message);
      if (mode === "one-at-a-time") break;
    }
    return taken;
  }

  private settleInjected(message: AgentMessage): void {
    if (!this.hasQueuedMessages()) return;
    for (const queue of [this.interruptQueue, this.steeringQueue, this.followUpQueue]) {
      const index = queue.findIndex((entry) => entry.inFlight && entry.message === message);
      if (index >= 0) {
        queue.splice(index, 1);
        return;
      }
    }
  }

  private releaseInFlight(): void {
    for (const entry of this.interruptQueue) entry.inFlight = false;
    for (const entry of this.steeringQueue) entry.inFlight = false;
    for (const entry of this.followUpQueue) entry.inFlight = false;
  }

  private buildConfig(): AgentLoopConfig {
    const signal = this.controller!.signal;
    const { thinkingLevel } = this.state;
    const config: AgentLoopConfig = {
      ...this.streamOptions,
      model: this.state.model,
      convertToLlm: this.convertToLlm,
      toolExecution: this.toolExecution,
      getSteeringMessages: async () => this.drain(this.steeringQueue, this.steeringMode),
      getFollowUpMessages: async () => this.drain(this.followUpQueue, this.followUpMode),
      interrupts: {
        signal: (phase) => this.latch.signal(phase),
        take: async () => this.drain(this.interruptQueue, "all"),
      },
    };
    if (thinkingLevel !== "off") config.reasoning = thinkingLevel;
    if (this.sessionId !== undefined) config.sessionId = this.sessionId;
    if (this.transformContext) config.transformContext = this.transformContext;
    if (this.getApiKey) config.getApiKey = this.getApiKey;
    if (this.beforeToolCall) config.beforeToolCall = this.beforeToolCall;
    if (this.afterToolCall) config.afterToolCall = this.afterToolCall;
    const stop = this.shouldStopAfterTurn;
    if (stop) config.shouldStopAfterTurn = (ctx) => stop(ctx, signal);
    const prepare = this.prepareNextTurn;
    if (prepare) config.prepareNextTurn = (ctx) => prepare(ctx, signal);
    return config;
  }

  private run(
    start: (
      config: AgentLoopConfig,
      emit: (event: AgentEvent) => Promise<void>,
      signal: AbortSignal,
      context: AgentContext,
    ) => Promise<AgentMessage[]>,
  ): Promise<void> {
    const state = this.state;
    state.streaming = true;
    state.partial = undefined;
    state.error = undefined;
    const controller = new AbortController();
    this.controller = controller;
    const context: AgentContext = {
      systemPrompt: state.systemPrompt,
      messages: state.messages.slice(),
      tools: state.tools.slice(),
    };
    const model = state.model;
    const emit = (event: AgentEvent) => this.process(event, controller.signal);
    const execution = (async () => {
      try {
        await start(this.buildConfig(), emit, controller.signal, context);
      } catch (err) {
        await this.emitFailure(model, err, controller.signal, emit);
      } finally {
        this.releaseInFlight();
        state.streaming = false;
        state.partial = undefined;
        state.pending = new Set();
        this.controller = undefined;
        this.running = undefined;
      }
    })();
    this.running = execution;
    return execution;
  }

  /** An exception escaping the loop becomes a failure message and a closing event sequence (docs/agent-loop.md §6). */
  private async emitFailure(
    model: Model,
    err: unknown,
    signal: AbortSignal,
    emit: (event: AgentEvent) => Promise<void>,
  ): Promise<void> {
    const message: AssistantMessage = failureMessage(model, err, signal.aborted);
    await emit({ type: "message_start", message: { ...message } });
    await emit({ type: "message_end", message });
    await emit({ type: "turn_end", message, toolResults: [] });
    await emit({ type: "agent_end", messages: [message] });
  }

  /** The pending set, copied first if a reader holds the current one (so handed-out sets never change). */
  private writablePending(): Set<string> {
    const state = this.state;
    if (state.pendingShared) {
      state.pending = new Set(state.pending);
      state.pendingShared = false;
    }
    return state.pending;
  }

  /** Reduces an event into state, then awaits the listeners in order. */
  private async process(event: AgentEvent, signal: AbortSignal): Promise<void> {
    const state = this.state;
    switch (event.type) {
      case "message_start":
      case "message_update":
        state.partial = event.message;
        break;
      case "message_end":
        state.partial = undefined;
        state.messages.push(event.message);
        this.settleInjected(event.message);
        break;
      case "tool_execution_start":
        this.writablePending().add(event.toolCallId);
        break;
      case "tool_execution_end":
        this.writablePending().delete(event.toolCallId);
        break;
      case "turn_end":
        if (event.message.errorMessage) state.error = event.message.errorMessage;
        break;
      case "agent_end":
        state.partial = undefined;
        break;
      default:
        break;
    }
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) await listeners[i]!(event, signal);
  }
}
