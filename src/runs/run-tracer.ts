import {
  type Attributes,
  type Context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { AgentEvent, AgentLoopConfig, AssistantMessage, StreamFn } from "../agent/index.js";
import type { ChatOutbound } from "../chat/index.js";
import { type PriceTable, priceMessage } from "./pricing.js";
import type { RunJobData } from "./queue.js";
import type { RunObserver } from "./setup.js";
import {
  CHAT_METHODS,
  CLIENT,
  delegate,
  failSpan,
  INTERNAL,
  NO_SPAN,
  runsInFlight,
  tracer,
  tracingActive,
} from "./tracing-core.js";

/**
 * The worker side of tracing (src/runs/tracing.ts has the tree of spans): `run` → `turn` → `model.request` ·
 * `tool <name>` → `approval.wait`, and the run's `chat.<method>` and `chat.stream` spans.
 */

/**
 * The chat calls that get a span each. Streaming edits and status refreshes come many times a turn: they are
 * counted on the turn's span instead (`threadline.chat.edits` / `.status_updates`), and only one that fails
 * gets a span of its own, so the stream of a long answer does not multiply the cost of tracing it.
 */
const COUNTED_CHAT_METHODS: Readonly<Record<string, string>> = {
  edit: "threadline.chat.edits",
  setStatus: "threadline.chat.status_updates",
};

/** The chat calls a tool call's approval makes: their spans go under the tool call whose hook is waiting. */
const APPROVAL_CHAT_METHODS: ReadonlySet<string> = new Set(["postApproval", "updateApproval"]);

/** The counts a run reports at its end. */
export interface RunTraceStats {
  turns: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  cost?: number;
}

/**
 * The spans of one execution of a run job (worker side). Created per job; the `run` span is a child of the
 * gateway's context carried in the job, and every span of the run gets its parent from this object (the open
 * turn, the tool call whose `beforeToolCall` is waiting), not from an active context. {@link RunTracer.run}
 * makes the run known to `traceLogFields` (tracing-core.ts) while it executes, so its log lines carry the run
 * span's ids. When tracing is off every method is a pass-through. Methods never throw.
 */
export class RunTracer {
  private readonly runSpan: Span;
  private readonly runContext: Context;
  private readonly runId: string;
  private readonly tracer: Tracer | undefined;
  private turn:
    | { span: Span; context: Context; counts: Record<string, number>; streams: Map<string, ChatStream> }
    | undefined;
  /** The model request in flight: its span until the loop's `message_end` of the answer. */
  private model: { span: Span; startedAt: number; waiting: boolean } | undefined;
  private readonly tools = new Map<string, { span: Span; context: Context }>();
  /**
   * The tool call whose `beforeToolCall` (its approval) is in flight: the loop prepares calls one after the
   * other, so there is at most one. Its `approval.wait` and approval card calls go under it.
   */
  private hooked: { span: Span; context: Context } | undefined;
  /** The `model.request` attributes of a model, built once per model object. */
  private readonly modelAttributes = new WeakMap<object, SpanOptions>();
  /** False when no tracer provider is registered: nothing is wrapped or recorded. */
  readonly enabled: boolean;

  /** `job` undefined: a tracer that records nothing, whatever provider is registered. */
  constructor(
    job: RunJobData | undefined,
    private readonly prices: PriceTable = {},
  ) {
    this.runId = job?.runId ?? "";
    if (!job || !tracingActive()) {
      this.runSpan = NO_SPAN;
      this.runContext = ROOT_CONTEXT;
      this.tracer = undefined;
      this.enabled = false;
      return;
    }
    this.tracer = tracer();
    const parent = job.trace ? propagation.extract(ROOT_CONTEXT, job.trace) : ROOT_CONTEXT;
    this.runSpan = this.tracer.startSpan(
      "run",
      {
        kind: SpanKind.CONSUMER,
        attributes: { "threadline.thread_id": job.threadId, "threadline.run_id": job.runId },
      },
      parent,
    );
    this.runContext = trace.setSpan(parent, this.runSpan);
    this.enabled = this.runSpan.isRecording();
  }

  /** Runs `execute` as the run (its log lines get the run span's ids), then ends the span (also when it throws). */
  async run<T>(execute: () => Promise<T>): Promise<T> {
    if (!this.enabled) return execute();
    runsInFlight.set(this.runId, this.runSpan);
    try {
      return await execute();
    } catch (err) {
      failSpan(this.runSpan, err);
      throw err;
    } finally {
      if (runsInFlight.get(this.runId) === this.runSpan) runsInFlight.delete(this.runId);
      this.closeOpen();
      this.runSpan.end();
    }
  }

  /** Records how the run ended and its totals on the run span. */
  finished(outcome: string, stats: RunTraceStats): void {
    if (!this.enabled) return;
    const attributes: Attributes = {
      "threadline.outcome": outcome,
      "threadline.turns": stats.turns,
      "threadline.tool_calls": stats.toolCalls,
      "gen_ai.usage.input_tokens": stats.inputTokens,
      "gen_ai.usage.output_tokens": stats.outputTokens,
    };
    if (stats.cost !== undefined) attributes["threadline.cost_usd"] = stats.cost;
    this.runSpan.setAttributes(attributes);
    if (outcome === "failed") this.runSpan.setStatus({ code: SpanStatusCode.ERROR, message: "run failed" });
  }

  /** Follows the loop's events: opens and closes `turn` and `tool <name>` spans. */
  onEvent(event: AgentEvent): void {
    if (!this.enabled) return;
    switch (event.type) {
      case "message_update":
        // Per streamed chunk: one comparison unless the first token of a request is still awaited. Set at
        // once, so a request whose answer never reaches the loop (its span ended early) still has it.
        if (this.model?.waiting && event.assistantMessageEvent.type.endsWith("_delta")) {
          this.model.waiting = false;
          this.model.span.setAttribute(
            "threadline.time_to_first_token_ms",
            Math.round(performance.now() - this.model.startedAt),
          );
        }
        break;
      case "turn_start": {
        this.endTurn();
        const span = this.tracer!.startSpan("turn", INTERNAL, this.runContext);
        this.turn = { span, context: trace.setSpan(this.runContext, span), counts: {}, streams: new Map() };
        break;
      }
      case "turn_end":
        this.endTurn();
        break;
      case "message_end":
        if ((event.message as { role?: string }).role === "assistant") {
          this.settleModel(event.message as AssistantMessage);
        }
        break;
      case "tool_execution_start": {
        const parent = this.turnContext();
        const span = this.tracer!.startSpan(
          `tool ${event.toolName}`,
          { attributes: { "gen_ai.tool.name": event.toolName, "gen_ai.tool.call.id": event.toolCallId } },
          parent,
        );
        this.tools.set(event.toolCallId, { span, context: trace.setSpan(parent, span) });
        break;
      }
      case "tool_execution_end": {
        const open = this.tools.get(event.toolCallId);
        if (!open) break;
        this.tools.delete(event.toolCallId);
        if (event.isError) open.span.setStatus({ code: SpanStatusCode.ERROR, message: "tool call failed" });
        open.span.end();
        break;
      }
      default:
        break;
    }
  }

  /**
   * `streamFn` with a `model.request` span per request (under the open turn): time to first token, tokens
   * (input, cached, output, reasoning), cost and stop reason as attributes, read from the loop's events (so
   * the stream itself is not re-piped). Unchanged when tracing is off.
   */
  wrapStream(streamFn: StreamFn): StreamFn {
    if (!this.enabled) return streamFn;
    return (model, llmContext, options) => {
      this.model?.span.end(); // a request whose answer never reached the loop
      let attributes = this.modelAttributes.get(model);
      if (!attributes) {
        attributes = {
          kind: SpanKind.CLIENT,
          attributes: { "gen_ai.request.model": model.id, "gen_ai.system": model.provider },
        };
        this.modelAttributes.set(model, attributes);
      }
      const span = this.tracer!.startSpan("model.request", attributes, this.turnContext());
      this.model = { span, startedAt: performance.now(), waiting: true };
      return streamFn(model, llmContext, options);
    };
  }

  private settleModel(message: AssistantMessage): void {
    if (!this.model) return;
    const { span } = this.model;
    this.model = undefined;
    const { usage } = message;
    const attributes: Attributes = {
      "gen_ai.response.model": message.model,
      "gen_ai.usage.input_tokens": usage.input,
      "gen_ai.usage.output_tokens": usage.output,
      "gen_ai.usage.cache_read_tokens": usage.cacheRead,
      "threadline.stop_reason": message.stopReason,
    };
    if (usage.reasoning !== undefined) attributes["gen_ai.usage.reasoning_tokens"] = usage.reasoning;
    const cost = priceMessage(message, this.prices);
    if (cost !== undefined) attributes["threadline.cost_usd"] = cost;
    span.setAttributes(attributes);
    if (message.stopReason === "error") {
      span.setStatus({ code: SpanStatusCode.ERROR, message: message.errorMessage ?? "model request failed" });
    }
    span.end();
  }

  /**
   * `beforeToolCall` with the call's tool span as the parent of what it does while it runs (the approval
   * card's chat calls, the `approval.wait`).
   */
  wrapBeforeToolCall(
    hook: NonNullable<AgentLoopConfig["beforeToolCall"]>,
  ): NonNullable<AgentLoopConfig["beforeToolCall"]> {
    if (!this.enabled) return hook;
    return async (call, signal) => {
      const open = this.tools.get(call.toolCall.id);
      if (!open) return hook(call, signal);
      this.hooked = open;
      try {
        return await hook(call, signal);
      } finally {
        if (this.hooked === open) this.hooked = undefined;
      }
    };
  }

  /**
   * `observer` plus an `approval.wait` span for each decided approval, under the tool call whose hook decided
   * it: it spans the wait (card posted → decision or timeout) and names the verdict.
   */
  observe(observer: RunObserver): RunObserver {
    if (!this.enabled) return observer;
    const approval = (verdict: string, waitedMs: number): void => {
      observer.approval?.(verdict, waitedMs);
      const now = Date.now();
      this.tracer!.startSpan(
        "approval.wait",
        { startTime: now - waitedMs, attributes: { "threadline.approval.verdict": verdict } },
        (this.hooked ?? this.turn)?.context ?? this.runContext,
      ).end(now);
    };
    return delegate(observer, { approval });
  }

  /**
   * `outbound` with a `chat.<method>` span around every call, under the open turn (the run, between turns); an
   * approval card's under the tool call whose hook is waiting for it.
   */
  outbound(outbound: ChatOutbound): ChatOutbound {
    if (!this.enabled) return outbound;
    const overrides: Partial<Record<(typeof CHAT_METHODS)[number], unknown>> = {};
    for (const name of CHAT_METHODS) {
      const original = outbound[name] as (...args: unknown[]) => Promise<unknown>;
      const spanName = `chat.${name}`;
      const counted = COUNTED_CHAT_METHODS[name];
      const approval = APPROVAL_CHAT_METHODS.has(name);
      overrides[name] = counted
        ? (...args: unknown[]) =>
            this.countedCall(
              spanName,
              counted,
              () => original.apply(outbound, args),
              name === "edit",
              args[1],
            )
        : (...args: unknown[]) =>
            this.chatCall(
              spanName,
              () => original.apply(outbound, args),
              approval && this.hooked ? this.hooked.context : this.turnContext(),
            );
    }
    return delegate(outbound, overrides);
  }

  /** The open `chat.stream` span of a reply message in this turn (opened by its first edit). */
  private chatStream(messageId: unknown, parent: Context): ChatStream | undefined {
    const streams = this.turn?.streams;
    if (!streams || typeof messageId !== "string") return undefined;
    let stream = streams.get(messageId);
    if (!stream) {
      const span = this.tracer!.startSpan(
        "chat.stream",
        { kind: SpanKind.CLIENT, attributes: { "threadline.chat.message_id": messageId } },
        parent,
      );
      stream = { span, edits: 0, lastEnd: Date.now() };
      streams.set(messageId, stream);
    }
    return stream;
  }

  /** A streaming edit or status refresh: counted on the turn (an edit on its message's `chat.stream`). */
  private countedCall<T>(
    spanName: string,
    counter: string,
    call: () => Promise<T>,
    edit: boolean,
    messageId: unknown,
  ): Promise<T> {
    const parent = this.turnContext();
    const counts = this.turn?.counts;
    if (counts) counts[counter] = (counts[counter] ?? 0) + 1;
    const stream = edit ? this.chatStream(messageId, parent) : undefined;
    // One `then` per call (no async frame, no named closure): this runs for every streaming edit.
    const pending = attempt(call);
    if (!stream)
      return pending.then(undefined, (err: unknown) => this.countedCallFailed(spanName, parent, err));
    return pending.then(
      (result) => {
        stream.edits++;
        stream.lastEnd = Date.now();
        return result;
      },
      (err: unknown) => this.countedCallFailed(spanName, parent, err),
    );
  }

  /** A counted call that failed gets a span of its own. */
  private countedCallFailed(spanName: string, parent: Context, err: unknown): never {
    const span = this.tracer!.startSpan(spanName, CLIENT, parent);
    failSpan(span, err);
    span.end();
    throw err;
  }

  private chatCall<T>(spanName: string, call: () => Promise<T>, parent: Context): Promise<T> {
    const span = this.tracer!.startSpan(spanName, CLIENT, parent);
    return attempt(call).then(
      (result) => {
        span.end();
        return result;
      },
      (err: unknown) => {
        failSpan(span, err);
        span.end();
        throw err;
      },
    );
  }

  private turnContext(): Context {
    return this.turn?.context ?? this.runContext;
  }

  private endTurn(): void {
    if (!this.turn) return;
    for (const stream of this.turn.streams.values()) {
      stream.span.setAttribute("threadline.chat.edits", stream.edits);
      stream.span.end(stream.lastEnd);
    }
    this.turn.span.setAttributes(this.turn.counts);
    this.turn.span.end();
    this.turn = undefined;
  }

  private closeOpen(): void {
    this.model?.span.end();
    this.model = undefined;
    for (const open of this.tools.values()) open.span.end();
    this.tools.clear();
    this.hooked = undefined;
    this.endTurn();
  }
}

/** The streaming edits of one reply message within one turn, as one span. */
interface ChatStream {
  span: Span;
  edits: number;
  /** Epoch ms the last edit resolved: where the span ends. */
  lastEnd: number;
}

/** `call()` as a promise: a synchronous throw becomes its rejection. */
function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (err) {
    return Promise.reject(err);
  }
}
