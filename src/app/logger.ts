import { pino } from "pino";
import type { RunLogger } from "../runs/index.js";

/**
 * Structured JSON logs (pretty-printed when stdout is a terminal); secrets in known fields are redacted.
 */
export function createLogger(level: string, base: Record<string, unknown> = {}): pino.Logger & RunLogger {
  const pretty = process.stdout.isTTY && process.env.NODE_ENV !== "production";
  return pino({
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
  });
}
