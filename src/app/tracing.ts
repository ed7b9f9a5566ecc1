/**
 * Starts the OpenTelemetry SDK when the operator points it at an OTLP/HTTP endpoint. The SDK packages are
 * imported only then: with `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) unset,
 * nothing of them is loaded and every span in src/runs is the `@opentelemetry/api` no-op.
 */

import type { SpanExporter } from "@opentelemetry/sdk-trace-node";

/** A started SDK. */
export interface Tracing {
  /** Exports the spans ended so far. Never rejects. */
  flush(): Promise<void>;
  /** Exports the spans still buffered, then stops the SDK. Never rejects (an unreachable collector is logged by the SDK). */
  shutdown(): Promise<void>;
}

/** What {@link startTracing} may be given besides the environment. */
export interface TracingOptions {
  /**
   * Where the batched spans go instead of the OTLP/HTTP exporter (default: that exporter, at the endpoint of
   * `env`). For benchmarks and tests: a no-op exporter measures recording spans without their export.
   */
  exporter?: SpanExporter;
}

/** The environment this reads (process.env satisfies it). */
export type TracingEnv = Readonly<Record<string, string | undefined>>;

/** True when the environment names an OTLP endpoint for traces. */
export function tracingConfigured(env: TracingEnv): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** The spec's rule: the traces endpoint as given, else `/v1/traces` under the general endpoint. */
function tracesUrl(env: TracingEnv): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  return `${(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "").trim().replace(/\/+$/, "")}/v1/traces`;
}

/**
 * Registers a global tracer provider that batches spans to the OTLP/HTTP (JSON) endpoint of the standard
 * `OTEL_EXPORTER_OTLP_*` variables (endpoint from `env`; headers and timeout the exporter reads from process.env), with the W3C trace
 * context propagator alone (no baggage) and **no context manager**: src/runs/tracing.ts passes every parent explicitly, and on
 * Node 20 an AsyncLocalStorage context manager in use runs promise hooks on every promise of the process
 * (about 14 % of a light turn's CPU, issue #19's bench). A host application that registered its own context
 * manager keeps it. `service.name` is `serviceName` unless
 * `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` say otherwise. Returns `undefined` (and loads nothing)
 * when no endpoint is set. Call once per process, before any run starts.
 */
export async function startTracing(
  env: TracingEnv,
  serviceName: string,
  options: TracingOptions = {},
): Promise<Tracing | undefined> {
  if (!tracingConfigured(env)) return undefined;
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    resources,
    { W3CTraceContextPropagator },
  ] = await Promise.all([
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/core"),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": serviceName }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor(options.exporter ?? new OTLPTraceExporter({ url: tracesUrl(env) })),
    ],
  });
  // Trace context only: the job carries `traceparent` (and `tracestate`), not baggage, which nothing here sets.
  provider.register({ contextManager: null, propagator: new W3CTraceContextPropagator() });
  return {
    async flush() {
      await provider.forceFlush().catch(() => {});
    },
    async shutdown() {
      await provider.shutdown().catch(() => {});
    },
  };
}
