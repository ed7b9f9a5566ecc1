import { defaultConvertToLlm, IncrementalConverter } from "./convert.js";
import { EventStream } from "./event-stream.js";
import { linkSignals, noticeOf } from "./interrupts.js";
import { abortToolCalls, runToolBatch } from "./tool-calls.js";
import type {
  AgentContext,
  AgentEvent,
  AgentEventSink,
  AgentLoopConfig,
  AgentMessage,
  AssistantMessage,
  LlmContext,
  Message,
  Model,
  StreamFn,
  ToolCall,
  ToolResultMessage,
  TurnContext,
  Usage,
} from "./types.js";

/** There is no process-wide default (pi's `setDefaultStreamFn`): a run without a stream function is misuse. */
function resolveStreamFn(streamFn: StreamFn | undefined): StreamFn {
  if (!streamFn) throw new Error("No stream function configured. Pass streamFn explicitly.");
  return streamFn;
}

/** Text of the synthesized message when a turn would call the model after an abort. */
export const ABORTED_REQUEST_TEXT = "Request was aborted";

/** Options of the shared loop that the public entry points do not expose. */
interface RunOptions {
  /** `Agent.continue()` already drained one steering batch: do not poll at the start. */
  initialPending?: AgentMessage[];
}

/**
 * Starts a run with new prompt messages. Events are pushed to the returned stream without waiting for
 * the consumer; `result()` resolves with the run's new messages at `agent_end`. Never throws.
 */
export function agentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
  streamFn?: StreamFn,
): EventStream<AgentEvent, AgentMessage[]> {
  const stream = createAgentEventStream();
  const fn = resolveStreamFn(streamFn);
  void runAgentLoop(prompts, context, config, (event) => stream.push(event), signal, fn).catch(() =>
    stream.end(),
  );
  return stream;
}

/**
 * Continues a run from the existing transcript (last message must not be an assistant message).
 * @throws synchronously "Cannot continue: no messages in context" / "Cannot continue from message role: assistant".
 */
export function agentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  signal?: AbortSignal,
  streamFn?: StreamFn,
): EventStream<AgentEvent, AgentMessage[]> {
  assertCanContinue(context);
  const stream = createAgentEventStream();
  const fn = resolveStreamFn(streamFn);
  void runAgentLoopContinue(context, config, (event) => stream.push(event), signal, fn).catch(() =>
    stream.end(),
  );
  return stream;
}

function createAgentEventStream(): EventStream<AgentEvent, AgentMessage[]> {
  return new EventStream<AgentEvent, AgentMessage[]>({
    isComplete: (event) => event.type === "agent_end",
    extractResult: (event) => (event.type === "agent_end" ? event.messages : []),
  });
}

function assertCanContinue(context: AgentContext): void {
  if (context.messages.length === 0) throw new Error("Cannot continue: no messages in context");
  const last = context.messages[context.messages.length - 1] as { role?: unknown };
  if (last.role === "assistant") throw new Error("Cannot continue from message role: assistant");
}

/**
 * Like {@link agentLoop} but awaits `emit` for every event, so the sink is a barrier for the loop.
 * Resolves with the run's new messages. Rejects only when `emit` throws.
 */
export async function runAgentLoop(
  prompts: AgentMessage[],
  context: AgentContext,
  config: AgentLoopConfig,
  emit: AgentEventSink,
  signal?: AbortSignal,
  streamFn?: StreamFn,
  options: RunOptions = {},
): Promise<AgentMessage[]> {
  const fn = resolveStreamFn(streamFn);
  const run = new LoopRun(
    { ...context, messages: [...context.messages, ...prompts] },
    config,
    emit,
    signal,
    fn,
  );
  run.newMessages.push(...prompts);
  return run.execute(async () => {
    await run.emit({ type: "agent_start" });
    await run.startTurn();
    for (const message of prompts) {
      await run.emit({ type: "message_start", message });
      await run.emit({ type: "message_end", message });
    }
  }, options.initialPending);
}

/** Like {@link agentLoopContinue} with an awaited `emit`. Pushes to `context.messages` (a shallow copy of context). */
export async function runAgentLoopContinue(
  context: AgentContext,
  config: AgentLoopConfig,
  emit: AgentEventSink,
  signal?: AbortSignal,
  streamFn?: StreamFn,
): Promise<AgentMessage[]> {
  assertCanContinue(context);
  const fn = resolveStreamFn(streamFn);
  const run = new LoopRun({ ...context }, config, emit, signal, fn);
  return run.execute(async () => {
    await run.emit({ type: "agent_start" });
    await run.startTurn();
  });
}

/** Thrown through the loop when the event sink fails; it is not a hook failure and is rethrown. */
class SinkError extends Error {
  constructor(readonly original: unknown) {
    super("event sink failed");
  }
}

/** State of one run of the loop (docs/agent-loop.md §2). */
class LoopRun {
  readonly newMessages: AgentMessage[] = [];
  private readonly config: AgentLoopConfig;
  private inTurn = false;
  /** Converts only new messages per turn when the default converter is used (flat per-turn cost). */
  private readonly converter = new IncrementalConverter();
  /** True while a streaming partial sits at the end of the working transcript. */
  private partialInContext = false;

  constructor(
    private context: AgentContext,
    config: AgentLoopConfig,
    private readonly sink: AgentEventSink,
    private readonly signal: AbortSignal | undefined,
    private readonly streamFn: StreamFn,
  ) {
    this.config = { ...config };
  }

  async emit(event: AgentEvent): Promise<void> {
    try {
      await this.sink(event);
    } catch (err) {
      throw new SinkError(err);
    }
  }

  async startTurn(): Promise<void> {
    this.inTurn = true;
    await this.emit({ type: "turn_start" });
  }

  private async endTurn(message: AssistantMessage, toolResults: ToolResultMessage[]): Promise<void> {
    this.inTurn = false;
    await this.emit({ type: "turn_end", message, toolResults });
  }

  /**
   * Runs the entry steps, then the loop; a throwing hook ends the run with an error message
   * (docs/agent-loop.md, deviation 5).
   */
  async execute(enter: () => Promise<void>, initialPending?: AgentMessage[]): Promise<AgentMessage[]> {
    try {
      await enter();
      await this.loop(initialPending);
    } catch (err) {
      if (err instanceof SinkError) throw err.original;
      await this.fail(err).catch((again: unknown) => {
        throw again instanceof SinkError ? again.original : again;
      });
    }
    return this.newMessages;
  }

  private async fail(err: unknown): Promise<void> {
    if (!this.inTurn) await this.startTurn();
    const message = failureMessage(this.config.model, err, this.signal?.aborted ?? false);
    if (this.partialInContext) this.context.messages.pop();
    this.partialInContext = false;
    this.context.messages.push(message);
    this.newMessages.push(message);
    await this.emit({ type: "message_start", message: { ...message } });
    await this.emit({ type: "message_end", message });
    await this.endTurn(message, []);
    await this.emit({ type: "agent_end", messages: this.newMessages });
  }

  private async pollSteering(): Promise<AgentMessage[]> {
    return (await this.config.getSteeringMessages?.()) ?? [];
  }

  /** A drain point: interrupt messages first (they were meant for "now"), then the steering poll. */
  private async pollQueued(): Promise<AgentMessage[]> {
    const interrupts = (await this.config.interrupts?.take()) ?? [];
    const steering = await this.pollSteering();
    return interrupts.length === 0 ? steering : [...interrupts, ...steering];
  }

  /** Injects queued messages into the transcript (inside the current turn). */
  private async inject(messages: readonly AgentMessage[]): Promise<void> {
    for (const message of messages) {
      await this.emit({ type: "message_start", message });
      await this.emit({ type: "message_end", message });
      this.context.messages.push(message);
      this.newMessages.push(message);
    }
  }

  private async loop(initialPending: AgentMessage[] | undefined): Promise<void> {
    let pending = initialPending ?? (await this.pollQueued());
    let lastTurn: TurnContext | undefined;
    for (;;) {
      let hasMoreToolCalls = true;
      while (hasMoreToolCalls || pending.length > 0) {
        if (lastTurn) {
          const update = await this.config.prepareNextTurn?.(lastTurn);
          if (update) this.applyTurnUpdate(update);
          if (pending.length === 0) pending = await this.pollQueued();
          await this.startTurn();
        }
        await this.inject(pending);
        pending = [];

        const message = await this.streamAssistantResponse();
        this.newMessages.push(message);
        if (message.interrupted) {
          // The cut answer stays, its calls get results, the next request starts at once (docs/agent-loop.md,
          // deviation 6).
          const toolResults = await this.abortCalls(message);
          lastTurn = { message, toolResults, context: this.context, newMessages: this.newMessages };
          await this.endTurn(message, toolResults);
          if (await this.config.shouldStopAfterTurn?.(lastTurn)) {
            await this.emit({ type: "agent_end", messages: this.newMessages });
            return;
          }
          pending = await this.pollQueued();
          hasMoreToolCalls = true;
          continue;
        }
        if (message.stopReason === "error" || message.stopReason === "aborted") {
          await this.endTurn(message, []);
          await this.emit({ type: "agent_end", messages: this.newMessages });
          return;
        }

        const toolCalls = message.content.filter((block): block is ToolCall => block.type === "toolCall");
        let toolResults: ToolResultMessage[] = [];
        hasMoreToolCalls = false;
        if (toolCalls.length > 0) {
          const batch = await runToolBatch({
            assistantMessage: message,
            toolCalls,
            context: this.context,
            config: this.config,
            emit: (event) => this.emit(event),
            signal: this.signal,
            interruptSignal: this.config.interrupts?.signal("tools"),
          });
          toolResults = batch.toolResults;
          hasMoreToolCalls = !batch.terminate;
          for (const result of toolResults) {
            this.context.messages.push(result);
            this.newMessages.push(result);
          }
        }

        lastTurn = { message, toolResults, context: this.context, newMessages: this.newMessages };
        await this.endTurn(message, toolResults);
        if (await this.config.shouldStopAfterTurn?.(lastTurn)) {
          await this.emit({ type: "agent_end", messages: this.newMessages });
          return;
        }
        pending = await this.pollQueued();
      }
      const followUps = (await this.config.getFollowUpMessages?.()) ?? [];
      if (followUps.length === 0) break;
      pending = followUps;
    }
    await this.emit({ type: "agent_end", messages: this.newMessages });
  }

  private applyTurnUpdate(
    update: NonNullable<Awaited<ReturnType<NonNullable<AgentLoopConfig["prepareNextTurn"]>>>>,
  ) {
    if (update.context) this.context = update.context;
    if (update.model) this.config.model = update.model;
    if (update.thinkingLevel) {
      if (update.thinkingLevel === "off") delete this.config.reasoning;
      else this.config.reasoning = update.thinkingLevel;
    }
  }

  /** `Operation aborted` results for the tool calls of an interrupted response (docs/agent-loop.md, deviation 1). */
  private async abortCalls(message: AssistantMessage): Promise<ToolResultMessage[]> {
    const toolCalls = message.content.filter((block): block is ToolCall => block.type === "toolCall");
    if (toolCalls.length === 0) return [];
    const toolResults = await abortToolCalls({
      assistantMessage: message,
      toolCalls,
      context: this.context,
      config: this.config,
      emit: (event) => this.emit(event),
      signal: this.signal,
    });
    for (const result of toolResults) {
      this.context.messages.push(result);
      this.newMessages.push(result);
    }
    return toolResults;
  }

  /** Stands in for the model response once the run is aborted (docs/agent-loop.md, deviation 2). */
  private async synthesizeAbortedResponse(): Promise<AssistantMessage> {
    const aborted = abortedMessage(this.config.model);
    this.context.messages.push(aborted);
    await this.emit({ type: "message_start", message: { ...aborted } });
    await this.emit({ type: "message_end", message: aborted });
    return aborted;
  }

  /** Streams one response (docs/agent-loop.md §5); deviation 2: no request once the run is aborted. */
  private async streamAssistantResponse(): Promise<AssistantMessage> {
    const messages = this.context.messages;
    if (this.signal?.aborted) return this.synthesizeAbortedResponse();
    const config = this.config;
    let interrupt = config.interrupts?.signal("stream");
    let llmMessages = await this.convert(messages);
    // An interrupt that came while the request was prepared joins it instead of aborting it at once.
    for (let round = 0; interrupt?.aborted && round < 3 && !this.signal?.aborted; round++) {
      const taken = (await config.interrupts?.take()) ?? [];
      interrupt = config.interrupts?.signal("stream");
      if (taken.length === 0) continue;
      await this.inject(taken);
      llmMessages = await this.convert(messages);
    }
    const request: LlmContext = { systemPrompt: this.context.systemPrompt, messages: llmMessages };
    if (this.context.tools) request.tools = this.context.tools;
    const apiKey =
      (config.getApiKey ? await config.getApiKey(config.model.provider) : undefined) || config.apiKey;
    const options = { ...config };
    if (apiKey !== undefined) options.apiKey = apiKey;
    // The request's signal: the run's, and an interrupt's, which aborts this request only (docs/agent-loop.md,
    // deviation 6).
    const requestSignal = linkSignals(this.signal, interrupt);
    if (requestSignal.signal) options.signal = requestSignal.signal;
    try {
      // The async hooks above may have outlived an abort.
      if (this.signal?.aborted) return await this.synthesizeAbortedResponse();
      return await this.streamResponse(await this.streamFn(config.model, request, options), interrupt);
    } finally {
      requestSignal.dispose();
    }
  }

  private async convert(messages: AgentMessage[]): Promise<Message[]> {
    const config = this.config;
    if (config.convertToLlm === defaultConvertToLlm && !config.transformContext) {
      return this.converter.convert(messages);
    }
    const transformed = config.transformContext
      ? await config.transformContext(messages, this.signal)
      : messages;
    return config.convertToLlm(transformed);
  }

  /** The provider events → message events (docs/agent-loop.md §5); returns the final message. */
  private async streamResponse(
    response: Awaited<ReturnType<StreamFn>>,
    interrupt: AbortSignal | undefined,
  ): Promise<AssistantMessage> {
    const messages = this.context.messages;

    let partial: AssistantMessage | undefined;
    for await (const event of response) {
      switch (event.type) {
        case "start":
          partial = event.partial;
          messages.push(partial);
          this.partialInContext = true;
          await this.emit({ type: "message_start", message: { ...partial } });
          break;
        case "text_start":
        case "text_delta":
        case "text_end":
        case "thinking_start":
        case "thinking_delta":
        case "thinking_end":
        case "toolcall_start":
        case "toolcall_delta":
        case "toolcall_end":
          if (partial) {
            partial = event.partial;
            messages[messages.length - 1] = partial;
            await this.emit({
              type: "message_update",
              message: { ...partial },
              assistantMessageEvent: event,
            });
          }
          break;
        case "done":
        case "error":
          return this.finishResponse(await response.result(), partial !== undefined, interrupt);
        default:
          break;
      }
    }
    return this.finishResponse(await response.result(), partial !== undefined, interrupt);
  }

  private async finishResponse(
    response: AssistantMessage,
    started: boolean,
    interrupt: AbortSignal | undefined,
  ): Promise<AssistantMessage> {
    const messages = this.context.messages;
    // Aborted by an interrupt, not by the run: the partial answer is kept, marked (docs/agent-loop.md, deviation 6).
    const final =
      response.stopReason === "aborted" && interrupt?.aborted && !this.signal?.aborted
        ? { ...response, interrupted: noticeOf(interrupt) }
        : response;
    this.partialInContext = false;
    if (started) {
      messages[messages.length - 1] = final;
    } else {
      messages.push(final);
      await this.emit({ type: "message_start", message: { ...final } });
    }
    await this.emit({ type: "message_end", message: final });
    return final;
  }
}

/** A usage record with every count and cost at zero. */
export function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

/** An assistant message with zero usage, used for failures and aborted turns. */
export function emptyAssistantMessage(
  model: Model,
  stopReason: AssistantMessage["stopReason"],
  errorMessage: string,
): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text: "" }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason,
    errorMessage,
    timestamp: Date.now(),
  };
}

function abortedMessage(model: Model): AssistantMessage {
  return emptyAssistantMessage(model, "aborted", ABORTED_REQUEST_TEXT);
}

/** The message a run ends with when a hook or the stream function throws. */
export function failureMessage(model: Model, err: unknown, aborted: boolean): AssistantMessage {
  return emptyAssistantMessage(
    model,
    aborted ? "aborted" : "error",
    err instanceof Error ? err.message : String(err),
  );
}
