import {
  type Attributes,
  type Context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ProxyTracerProvider,
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
 * `approval.wait`; `chat.<method>` under the turn that caused it (an approval card's under its tool call), and
 * one `chat.stream` span per reply message and turn for its streaming edits.
 *
 * Every parent is passed explicitly (`startSpan(name, options, parentContext)`), never read from
 * `context.active()`: src/app/tracing.ts registers no context manager, because on Node 20 the
 * AsyncLocalStorage one runs promise hooks on every promise of the process (most of what tracing cost). The
 * gateway side finds its parents in the intakes in flight in this process ({@link traceIntake}); the worker
 * side keeps them in the {@link RunTracer} of each job; log lines find theirs through the run id or message id
 * in their fields ({@link traceLogFields}).
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

/** The chat calls a tool call's approval makes: their spans go under the tool call whose hook is waiting. */
const APPROVAL_CHAT_METHODS: ReadonlySet<string> = new Set(["postApproval", "updateApproval"]);

/** Span options built once (the SDK only reads them). */
const CLIENT: SpanOptions = { kind: SpanKind.CLIENT };
const INTERNAL: SpanOptions = {};

/**
 * `target` with `overrides` in front; its other members are read from it and its methods bound to it. The
 * renderer reads an outbound's members many times a turn, so the trap looks the overrides up in a
 * prototype-less copy and keeps each bound method.
 */
function delegate<T extends object>(target: T, overrides: Record<string, unknown>): T {
  const own: Record<PropertyKey, unknown> = Object.assign(Object.create(null), overrides);
  const bound = new Map<PropertyKey, { of: unknown; fn: unknown }>();
  return new Proxy(target, {
    get(object, property) {
      const override = own[property];
      if (override !== undefined) return override;
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

function tracer(): Tracer {
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

/** One platform message the gateway of this process is handling, with its span's context. */
interface IntakeTrace {
  thread: string;
  messageId: string;
  context: Context;
  /** The `intake.submit` span's context, once the intake decision started: `run.enqueue`'s parent. */
  submit: Context | undefined;
}

/**
 * The intake whose `handle` is running its synchronous part right now: what the gateway calls before its first
 * `await` (the 👀 ack, {@link traceSubmit}) belongs to it without a doubt.
 */
let syncIntake: IntakeTrace | undefined;
/** The intakes in flight, by thread id (a thread may have several messages in flight) and by message id. */
const intakesByThread = new Map<string, IntakeTrace[]>();
const intakesByMessage = new Map<string, IntakeTrace>();
/** The run spans of the jobs executing in this process, by run id (for {@link traceLogFields}). */
const runsInFlight = new Map<string, Span>();

function addIntake(intake: IntakeTrace): void {
  const list = intakesByThread.get(intake.thread);
  if (list) list.push(intake);
  else intakesByThread.set(intake.thread, [intake]);
  intakesByMessage.set(intake.messageId, intake);
}

function removeIntake(intake: IntakeTrace): void {
  const list = intakesByThread.get(intake.thread);
  const at = list?.indexOf(intake) ?? -1;
  if (list && at >= 0) list.splice(at, 1);
  if (list?.length === 0) intakesByThread.delete(intake.thread);
  if (intakesByMessage.get(intake.messageId) === intake) intakesByMessage.delete(intake.messageId);
}

/** Calls `body` with `intake` as the one whose synchronous part runs ({@link syncIntake}). */
function synchronously<T>(intake: IntakeTrace, body: () => T): T {
  const outer = syncIntake;
  syncIntake = intake;
  try {
    return body();
  } finally {
    syncIntake = outer;
  }
}

/**
 * The parent of a gateway chat call: the intake whose synchronous part makes it; else the intake in flight in
 * the call's thread for the message it names (`args[1]`: react/unreact), else the thread's latest intake in
 * flight; else none (a root: a reaction, a stop, an ack on arrival before the message is handled).
 */
function gatewayParent(args: readonly unknown[]): Context {
  if (syncIntake) return syncIntake.context;
  if (intakesByThread.size === 0) return ROOT_CONTEXT;
  const thread = args[0] as Parameters<typeof threadId>[0] | undefined;
  const list = thread ? intakesByThread.get(threadId(thread)) : undefined;
  if (!list) return ROOT_CONTEXT;
  return (list.find((intake) => intake.messageId === args[1]) ?? list[list.length - 1]!).context;
}

/**
 * Runs the gateway's handling of one platform message inside a server span `intake` (message, thread, whether
 * it mentions the bot; the intake's verdict when `handle` resolves one with a `kind`), a root. While `handle`
 * runs, the intake is in flight: {@link traceSubmit}, {@link traceEnqueue} and the gateway's chat calls find
 * their parent in it. Rethrows what `handle` throws, after recording it. With tracing off, just `handle()`.
 */
export async function traceIntake<T>(message: IncomingMessage, handle: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return handle();
  const span = tracer().startSpan(
    "intake",
    {
      kind: SpanKind.SERVER,
      attributes: {
        "threadline.thread_id": threadId(message.thread),
        "threadline.message_id": message.id,
        "threadline.mentions_bot": message.mentionsBot,
      },
    },
    ROOT_CONTEXT,
  );
  const intake: IntakeTrace = {
    thread: threadId(message.thread),
    messageId: message.id,
    context: trace.setSpan(ROOT_CONTEXT, span),
    submit: undefined,
  };
  addIntake(intake);
  try {
    return await endWith(span, () => synchronously(intake, handle));
  } finally {
    removeIntake(intake);
  }
}

/**
 * Runs the intake decision (the intake script, and the job add of a decided start) inside `intake.submit`,
 * under the `intake` span whose handler calls it — before its first `await`, as the gateway does (called
 * later, the span is a root) —; the verdict's `kind` becomes `threadline.intake.result`.
 */
export async function traceSubmit<T extends { kind: string }>(submit: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return submit();
  const intake = syncIntake;
  const parent = intake?.context ?? ROOT_CONTEXT;
  const span = tracer().startSpan("intake.submit", INTERNAL, parent);
  if (intake) intake.submit = trace.setSpan(parent, span);
  return endWith(span, submit);
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
 * under its `intake` span: {@link gatewayParent}). With tracing off when called, `outbound` itself.
 */
export function traceGatewayOutbound(outbound: ChatOutbound): ChatOutbound {
  if (!tracingActive()) return outbound;
  const overrides: Record<string, unknown> = {};
  for (const name of CHAT_METHODS) {
    const original = outbound[name] as (...args: unknown[]) => Promise<unknown>;
    const spanName = `chat.${name}`;
    overrides[name] = (...args: unknown[]) =>
      tracingActive()
        ? endWith(tracer().startSpan(spanName, CLIENT, gatewayParent(args)), () =>
            original.apply(outbound, args),
          )
        : original.apply(outbound, args);
  }
  return delegate(outbound, overrides);
}

/**
 * Runs `enqueue` inside a producer span `run.enqueue` and hands it the carrier of that span's context, or
 * `undefined` when tracing is off. Its parent is the `intake.submit` of the intake in flight in this process
 * for the job's thread (the gateway's decided start), else none (the start sweeper's re-add is a root).
 * Rethrows what `enqueue` throws, after recording it on the span.
 */
export async function traceEnqueue<T>(
  job: { threadId: string; runId: string },
  enqueue: (carrier: TraceCarrier | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return enqueue(undefined);
  const parent = enqueueParent(job.threadId);
  const span = tracer().startSpan(
    "run.enqueue",
    {
      kind: SpanKind.PRODUCER,
      attributes: { "threadline.thread_id": job.threadId, "threadline.run_id": job.runId },
    },
    parent,
  );
  try {
    let carrier: TraceCarrier | undefined;
    if (span.isRecording()) {
      carrier = {};
      propagation.inject(trace.setSpan(parent, span), carrier);
    }
    return await enqueue(carrier);
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

function enqueueParent(thread: string): Context {
  if (syncIntake?.thread === thread && syncIntake.submit) return syncIntake.submit;
  const list = intakesByThread.get(thread);
  if (!list) return ROOT_CONTEXT;
  for (let i = list.length - 1; i >= 0; i--) {
    const submit = list[i]!.submit;
    if (submit) return submit;
  }
  return ROOT_CONTEXT;
}

/**
 * The trace fields of a log line from its merge object (pino's `mixin`): `trace_id` and `span_id` of the run
 * span when the line names a run (`runId`) executing in this process with tracing on, else of the `intake`
 * span when it names a message (`messageId`) the gateway is handling; `undefined` otherwise (always, with
 * tracing off: nothing is in flight).
 */
export function traceLogFields(fields: object): { trace_id: string; span_id: string } | undefined {
  if (runsInFlight.size === 0 && intakesByMessage.size === 0) return undefined;
  const { runId, messageId } = fields as { runId?: unknown; messageId?: unknown };
  let span: Span | undefined;
  if (typeof runId === "string") span = runsInFlight.get(runId);
  if (!span && typeof messageId === "string") {
    const intake = intakesByMessage.get(messageId);
    if (intake) span = trace.getSpan(intake.context);
  }
  if (!span) return undefined;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
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
 * The spans of one execution of a run job (worker side). Created per job; the `run` span is a child of the
 * gateway's context carried in the job, and every span of the run gets its parent from this object (the open
 * turn, the tool call whose `beforeToolCall` is waiting), not from an active context. {@link RunTracer.run}
 * makes the run known to {@link traceLogFields} while it executes, so its log lines carry the run span's ids.
 * When tracing is off every method is a pass-through. Methods never throw.
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
        // Per streamed chunk: one comparison unless the first token of a request is still awaited.
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
    // One `then` per call (no async frame): this runs for every streaming edit.
    const failed = (err: unknown): never => {
      const span = this.tracer!.startSpan(spanName, CLIENT, parent);
      failSpan(span, err);
      span.end();
      throw err;
    };
    let pending: Promise<T>;
    try {
      pending = Promise.resolve(call());
    } catch (err) {
      return Promise.reject(err).catch(failed);
    }
    if (!stream) return pending.then(undefined, failed);
    return pending.then((result) => {
      stream.edits++;
      stream.lastEnd = Date.now();
      return result;
    }, failed);
  }

  private chatCall<T>(spanName: string, call: () => Promise<T>, parent: Context): Promise<T> {
    const span = this.tracer!.startSpan(spanName, CLIENT, parent);
    const failed = (err: unknown): never => {
      failSpan(span, err);
      span.end();
      throw err;
    };
    let pending: Promise<T>;
    try {
      pending = Promise.resolve(call());
    } catch (err) {
      return Promise.reject(err).catch(failed);
    }
    return pending.then((result) => {
      span.end();
      return result;
    }, failed);
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
