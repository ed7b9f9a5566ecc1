import { pino } from "pino";
import type { RunLogger } from "../runs/index.js";

/** Structured JSON logs; secrets in known fields are redacted. */
export function createLogger(level: string, base: Record<string, unknown> = {}): pino.Logger & RunLogger {
  return pino({
    level,
    base: { ...base },
    redact: {
      paths: ["*.token", "*.apiKey", "*.authorization", "*.headers.authorization", "err.config.headers"],
      censor: "[redacted]",
    },
  });
}
