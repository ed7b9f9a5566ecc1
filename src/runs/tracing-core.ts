import {
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { CHAT_OUTBOUND_METHODS } from "../chat/index.js";

/**
 * What both sides of tracing share (src/runs/tracing.ts has the tree of spans): the tracer and whether a
 * provider is registered, the span helpers, and the spans in flight in this process that log lines find
 * theirs in ({@link traceLogFields}).
 */
const TRACER_NAME = "threadline";

/** The chat calls that are traced (by the gateway each; by a run each, or counted on its turn). */
export const CHAT_METHODS = CHAT_OUTBOUND_METHODS;

/** Span options built once (the SDK only reads them). */
export const CLIENT: SpanOptions = { kind: SpanKind.CLIENT };
export const INTERNAL: SpanOptions = {};

/** W3C trace context (`traceparent`, `tracestate`) carried in a job from the gateway to a worker. */
export type TraceCarrier = Record<string, string>;

/** The tracer of every Threadline span (the registered provider's, or the API's no-op). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The API's own no-op provider: what a {@link ProxyTracerProvider} without a delegate hands out. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();
/** The run span of a tracer that records nothing. */
export const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * True when a tracer provider is registered (src/app/tracing.ts did, or the host application did), so spans
 * are worth building. Cheap (a global lookup); asked per call, because a provider may be registered or
 * disabled after a module was loaded.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider && provider.getDelegate() === NOOP_PROVIDER);
}

/** Records `err` on `span` and marks it failed (the caller still ends it). */
export function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * `target` with `overrides` in front; its other members are read from it and its methods bound to it. The
 * renderer reads an outbound's members many times a turn, so the trap looks the overrides up in a
 * prototype-less copy and keeps each bound method.
 */
export function delegate<T extends object>(target: T, overrides: Record<string, unknown>): T {
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

/**
 * The run spans of the jobs executing in this process, by run id: a `RunTracer` adds its run while it
 * executes and deletes it (if still its own) when it ends.
 */
export const runsInFlight = new Map<string, Span>();
/**
 * The `intake` spans of the platform messages the gateway of this process is handling, by message id:
 * `traceIntake` adds one while its handler runs and deletes it (if still its own) when it settles.
 */
export const intakesInFlight = new Map<string, Span>();

/**
 * The trace fields of a log line from its merge object (pino's `mixin`): `trace_id` and `span_id` of the run
 * span when the line names a run (`runId`) executing in this process with tracing on, else of the `intake`
 * span when it names a message (`messageId`) the gateway is handling; `undefined` otherwise (always, with
 * tracing off: nothing is in flight).
 */
export function traceLogFields(fields: object): { trace_id: string; span_id: string } | undefined {
  if (runsInFlight.size === 0 && intakesInFlight.size === 0) return undefined;
  const { runId, messageId } = fields as { runId?: unknown; messageId?: unknown };
  let span: Span | undefined;
  if (typeof runId === "string") span = runsInFlight.get(runId);
  if (!span && typeof messageId === "string") span = intakesInFlight.get(messageId);
  if (!span) return undefined;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
}
