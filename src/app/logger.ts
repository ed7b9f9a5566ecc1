import { pino } from "pino";
import { type RunLogger, traceLogFields } from "../runs/index.js";

/**
 * Structured JSON logs (pretty-printed when stdout is a terminal); secrets in known fields are redacted.
 * With tracing on, a line whose fields name a run executing in this process (`runId`) carries its run span's
 * `trace_id` and `span_id`, and one naming a message the gateway is handling (`messageId`) its intake span's.
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

/** The trace ids of the span a line belongs to, in the field names log backends link to traces; none off. */
function traceFields(mergeObject: object): Record<string, string> {
  // A new object each time: pino merges the line's fields into what the mixin returns.
  return traceLogFields(mergeObject) ?? {};
}
