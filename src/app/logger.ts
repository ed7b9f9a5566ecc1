import { isSpanContextValid, trace } from "@opentelemetry/api";
import { pino } from "pino";
import type { RunLogger } from "../runs/index.js";

/**
 * Structured JSON logs (pretty-printed when stdout is a terminal); secrets in known fields are redacted.
 * A line written while a span is active (tracing on, inside a run) carries `trace_id` and `span_id`.
 * `destination` (default stdout) receives the JSON lines; it turns pretty-printing off.
 */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  destination?: pino.DestinationStream,
): pino.Logger & RunLogger {
  const pretty = !destination && process.stdout.isTTY && process.env.NODE_ENV !== "production";
  const options: pino.LoggerOptions = {
    ...(pretty
      ? {
          transport: {
            target: "pino-pretty",
            options: { translateTime: "HH:MM:ss", ignore: "pid,hostname" },
          },
        }
      : {}),
    level,
    base: { ...base },
    redact: {
      paths: ["*.token", "*.apiKey", "*.authorization", "*.headers.authorization", "err.config.headers"],
      censor: "[redacted]",
    },
    mixin: traceFields,
  };
  return destination ? pino(options, destination) : pino(options);
}

/** The active span's ids, in the field names log backends link to traces; none without a recording span. */
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}
