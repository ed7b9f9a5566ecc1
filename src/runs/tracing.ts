import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { AgentEvent, AgentLoopConfig, AssistantMessage, StreamFn } from "../agent/index.js";
import { CHAT_OUTBOUND_METHODS, type ChatOutbound, type IncomingMessage, threadId } from "../chat/index.js";
import { type PriceTable, priceMessage } from "./pricing.js";
import type { RunJobData } from "./queue.js";
import type { RunObserver } from "./setup.js";

/**
 * Traces of runs through `@opentelemetry/api` only: without a registered tracer provider (no
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, see src/app/tracing.ts) every span is the API's no-op and a
 * {@link RunTracer} wraps nothing. The tree of one run:
 *
 * `intake` (gateway: one platform message) → `intake.submit` (the intake script) → `run.enqueue`, and the
 * gateway's `chat.react` acks under `intake`; then `run` (worker) → `turn` → `model.request` · `tool <name>` →
 * `approval.wait`; `chat.<method>` under the innermost open span that caused it, and one `chat.stream` span
 * per reply message and turn for its streaming edits.
 *
 * Off means free: every entry point first asks {@link tracingActive} and, when no provider is registered,
 * creates no span, context or attribute object and wraps nothing.
 */
const TRACER_NAME = "threadline";

/**
 * The chat calls that get a span each. Streaming edits and status refreshes come many times a turn: they are
 * counted on the turn's span instead (`threadline.chat.edits` / `.status_updates`), and only one that fails
 * gets a span of its own, so the stream of a long answer does not multiply the cost of tracing it.
 */
const COUNTED_CHAT_METHODS: Readonly<Record<string, string>> = {
  edit: "threadline.chat.edits",
  setStatus: "threadline.chat.status_updates",
};

/** The chat calls that are traced (each, or counted: {@link COUNTED_CHAT_METHODS}). */
const CHAT_METHODS = CHAT_OUTBOUND_METHODS;

/** `target` with `overrides` in front; its other members are read from it and its methods bound to it. */
function delegate<T extends object>(target: T, overrides: Record<string, unknown>): T {
  const bound = new Map<PropertyKey, { of: unknown; fn: unknown }>();
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === "string" && Object.hasOwn(overrides, property)) return overrides[property];
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== "function") return value;
      const cached = bound.get(property);
      if (cached?.of === value) return cached.fn;
      const fn = (value as (...args: unknown[]) => unknown).bind(object);
      bound.set(property, { of: value, fn });
      return fn;
    },
  });
}

/** W3C trace context (`traceparent`, `tracestate`) carried in a job from the gateway to a worker. */
export type TraceCarrier = Record<string, string>;

function tracer() {
  return trace.getTracer(TRACER_NAME);
}

/** The API's own no-op provider: what a {@link ProxyTracerProvider} without a delegate hands out. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();
/** The run span of a tracer that records nothing. */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * True when a tracer provider is registered (src/app/tracing.ts did, or the host application did), so spans
 * are worth building. Cheap (a global lookup); asked per call, because a provider may be registered or
 * disabled after a module was loaded.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider && provider.getDelegate() === NOOP_PROVIDER);
}

/**
 * Runs the gateway's handling of one platform message inside a server span `intake` (message, thread, whether
 * it mentions the bot; the intake's verdict when `handle` resolves one with a `kind`). Rethrows what `handle`
 * throws, after recording it. With tracing off, just `handle()`.
 */
export async function traceIntake<T>(message: IncomingMessage, handle: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return handle();
  return tracer().startActiveSpan(
    "intake",
    {
      kind: SpanKind.SERVER,
      attributes: {
        "threadline.thread_id": threadId(message.thread),
        "threadline.message_id": message.id,
        "threadline.mentions_bot": message.mentionsBot,
      },
    },
    (span) => endWith(span, handle),
  );
}

/**
 * Runs the intake decision (the intake script, and the job add of a decided start) inside `intake.submit`,
 * under the active `intake` span; the verdict's `kind` becomes `threadline.intake.result`.
 */
export async function traceSubmit<T extends { kind: string }>(submit: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return submit();
  return tracer().startActiveSpan("intake.submit", {}, (span) => endWith(span, submit));
}

async function endWith<T>(span: Span, body: () => Promise<T>): Promise<T> {
  try {
    const result = await body();
    const kind = (result as { kind?: unknown } | undefined)?.kind;
    if (typeof kind === "string") span.setAttribute("threadline.intake.result", kind);
    return result;
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The gateway's outbound with a client span `chat.<method>` around every call (the acks of a message nest
 * under its `intake` span). With tracing off when called, `outbound` itself.
 */
export function traceGatewayOutbound(outbound: ChatOutbound): ChatOutbound {
  if (!tracingActive()) return outbound;
  const overrides: Record<string, unknown> = {};
  for (const name of CHAT_METHODS) {
    const original = outbound[name] as (...args: unknown[]) => Promise<unknown>;
    overrides[name] = (...args: unknown[]) =>
      tracingActive()
        ? tracer().startActiveSpan(`chat.${name}`, { kind: SpanKind.CLIENT }, (span) =>
            endWith(span, () => original.apply(outbound, args)),
          )
        : original.apply(outbound, args);
  }
  return delegate(outbound, overrides);
}

/**
 * Runs `enqueue` inside a producer span `run.enqueue` (a child of the caller's active span, if any) and hands
 * it the carrier of that span's context, or `undefined` when tracing is off. Rethrows what `enqueue` throws,
 * after recording it on the span.
 */
export async function traceEnqueue<T>(
  job: { threadId: string; runId: string },
  enqueue: (carrier: TraceCarrier | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return enqueue(undefined);
  return tracer().startActiveSpan(
    "run.enqueue",
    {
      kind: SpanKind.PRODUCER,
      attributes: { "threadline.thread_id": job.threadId, "threadline.run_id": job.runId },
    },
    async (span) => {
      try {
        let carrier: TraceCarrier | undefined;
        if (span.isRecording()) {
          carrier = {};
          propagation.inject(context.active(), carrier);
        }
        return await enqueue(carrier);
      } catch (err) {
        failSpan(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** The counts a run reports at its end. */
export interface RunTraceStats {
  turns: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  cost?: number;
}

/**
 * The spans of one execution of a run job (worker side). Created per job; {@link RunTracer.run} makes the
 * `run` span — a child of the gateway's context carried in the job — active around the whole execution, so
 * log lines and chat calls in it carry its ids. When tracing is off every method is a pass-through.
 * Methods never throw.
 */
export class RunTracer {
  private readonly runSpan: Span;
  private readonly runContext: Context;
  private turn:
    | { span: Span; context: Context; counts: Record<string, number>; streams: Map<string, ChatStream> }
    | undefined;
  /** The model request in flight: its span until the loop's `message_end` of the answer. */
  private model: { span: Span; startedAt: number; waiting: boolean } | undefined;
  private readonly tools = new Map<string, { span: Span; context: Context }>();
  /** False when no tracer provider is registered: nothing is wrapped or recorded. */
  readonly enabled: boolean;

  /** `job` undefined: a tracer that records nothing, whatever provider is registered. */
  constructor(
    job: RunJobData | undefined,
    private readonly prices: PriceTable = {},
  ) {
    if (!job || !tracingActive()) {
      this.runSpan = NO_SPAN;
      this.runContext = ROOT_CONTEXT;
      this.enabled = false;
      return;
    }
    const parent = job.trace ? propagation.extract(context.active(), job.trace) : context.active();
    this.runSpan = tracer().startSpan(
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

  /** Runs `execute` with the run span active, then ends the span (also when `execute` throws). */
  async run<T>(execute: () => Promise<T>): Promise<T> {
    if (!this.enabled) return execute();
    try {
      return await context.with(this.runContext, execute);
    } catch (err) {
      failSpan(this.runSpan, err);
      throw err;
    } finally {
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
      case "turn_start": {
        this.endTurn();
        const span = tracer().startSpan("turn", {}, this.runContext);
        this.turn = { span, context: trace.setSpan(this.runContext, span), counts: {}, streams: new Map() };
        break;
      }
      case "turn_end":
        this.endTurn();
        break;
      case "message_update":
        if (this.model?.waiting && event.assistantMessageEvent.type.endsWith("_delta")) {
          this.model.waiting = false;
          this.model.span.setAttribute(
            "threadline.time_to_first_token_ms",
            Math.round(performance.now() - this.model.startedAt),
          );
        }
        break;
      case "message_end":
        if ((event.message as { role?: string }).role === "assistant") {
          this.settleModel(event.message as AssistantMessage);
        }
        break;
      case "tool_execution_start": {
        const span = tracer().startSpan(
          `tool ${event.toolName}`,
          { attributes: { "gen_ai.tool.name": event.toolName, "gen_ai.tool.call.id": event.toolCallId } },
          this.turnContext(),
        );
        this.tools.set(event.toolCallId, { span, context: trace.setSpan(this.turnContext(), span) });
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
      const span = tracer().startSpan(
        "model.request",
        {
          kind: SpanKind.CLIENT,
          attributes: { "gen_ai.request.model": model.id, "gen_ai.system": model.provider },
        },
        this.turnContext(),
      );
      this.model = { span, startedAt: performance.now(), waiting: true };
      return context.with(trace.setSpan(this.turnContext(), span), () =>
        streamFn(model, llmContext, options),
      );
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
   * `beforeToolCall` run with the call's tool span active, so what it does (an approval card, the wait for
   * the decision) nests under the call.
   */
  wrapBeforeToolCall(
    hook: NonNullable<AgentLoopConfig["beforeToolCall"]>,
  ): NonNullable<AgentLoopConfig["beforeToolCall"]> {
    if (!this.enabled) return hook;
    return (call, signal) => {
      const open = this.tools.get(call.toolCall.id);
      return open ? context.with(open.context, () => hook(call, signal)) : hook(call, signal);
    };
  }

  /**
   * `observer` plus an `approval.wait` span for each decided approval, under the active tool span: it spans
   * the wait (card posted → decision or timeout) and names the verdict.
   */
  observe(observer: RunObserver): RunObserver {
    if (!this.enabled) return observer;
    const approval = (verdict: string, waitedMs: number): void => {
      observer.approval?.(verdict, waitedMs);
      const now = Date.now();
      tracer()
        .startSpan(
          "approval.wait",
          { startTime: now - waitedMs, attributes: { "threadline.approval.verdict": verdict } },
          context.active(),
        )
        .end(now);
    };
    return delegate(observer, { approval });
  }

  /** `outbound` with a `chat.<method>` span around every call, under the innermost open span. */
  outbound(outbound: ChatOutbound): ChatOutbound {
    if (!this.enabled) return outbound;
    const overrides: Partial<Record<(typeof CHAT_METHODS)[number], unknown>> = {};
    for (const name of CHAT_METHODS) {
      const original = outbound[name] as (...args: unknown[]) => Promise<unknown>;
      overrides[name] = (...args: unknown[]) =>
        this.chatCall(name, () => original.apply(outbound, args), args[1]);
    }
    return delegate(outbound, overrides);
  }

  /** The open `chat.stream` span of a reply message in this turn (opened by its first edit). */
  private chatStream(messageId: unknown, parent: Context): ChatStream | undefined {
    const streams = this.turn?.streams;
    if (!streams || typeof messageId !== "string") return undefined;
    let stream = streams.get(messageId);
    if (!stream) {
      const span = tracer().startSpan(
        "chat.stream",
        { kind: SpanKind.CLIENT, attributes: { "threadline.chat.message_id": messageId } },
        parent,
      );
      stream = { span, edits: 0, lastEnd: Date.now() };
      streams.set(messageId, stream);
    }
    return stream;
  }

  private async chatCall<T>(method: string, call: () => Promise<T>, messageId?: unknown): Promise<T> {
    const counted = COUNTED_CHAT_METHODS[method];
    if (counted) {
      const parent = this.innermost();
      const counts = this.turn?.counts;
      if (counts) counts[counted] = (counts[counted] ?? 0) + 1;
      const stream = method === "edit" ? this.chatStream(messageId, parent) : undefined;
      try {
        const result = await call();
        if (stream) {
          stream.edits++;
          stream.lastEnd = Date.now();
        }
        return result;
      } catch (err) {
        const span = tracer().startSpan(`chat.${method}`, { kind: SpanKind.CLIENT }, parent);
        failSpan(span, err);
        span.end();
        throw err;
      }
    }
    const span = tracer().startSpan(`chat.${method}`, { kind: SpanKind.CLIENT }, this.innermost());
    try {
      return await call();
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  /** The active span's context when it is below the run span (a tool call's hook), else the open turn's. */
  private innermost(): Context {
    const active = trace.getActiveSpan();
    if (
      active &&
      active !== this.runSpan &&
      active.spanContext().traceId === this.runSpan.spanContext().traceId
    ) {
      return context.active();
    }
    return this.turnContext();
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
