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
 * gateway side (gateway-tracing.ts) finds its parents in the intakes in flight in this process
 * ({@link traceIntake}); the worker side (run-tracer.ts) keeps them in the {@link RunTracer} of each job; log
 * lines find theirs through the run id or message id in their fields ({@link traceLogFields}, tracing-core.ts,
 * with the tracer and the span helpers both sides share).
 *
 * Off means free: every entry point first asks {@link tracingActive} and, when no provider is registered,
 * creates no span, context or attribute object and wraps nothing.
 *
 * This module gathers the three parts' exports; the files of src/runs import the part they use.
 */
export { traceEnqueue, traceGatewayOutbound, traceIntake, traceSubmit } from "./gateway-tracing.js";
export { RunTracer, type RunTraceStats } from "./run-tracer.js";
export { type TraceCarrier, traceLogFields, tracingActive } from "./tracing-core.js";
