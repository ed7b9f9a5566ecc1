import { type Logger, LogLevel } from "@slack/bolt";
import type { SlackLogger } from "./options.js";

/**
 * Bolt's and the Socket Mode client's logs into our structured logger, under `{ source: "bolt" }`.
 * Bolt's debug chatter is dropped; its info goes to debug (connection state changes are logged by us).
 */
export function boltLogger(log: SlackLogger): Logger {
  let level = LogLevel.INFO;
  const text = (parts: unknown[]) =>
    parts.map((part) => (part instanceof Error ? part.message : String(part))).join(" ");
  return {
    debug() {},
    info: (...parts: unknown[]) => log.debug?.({ source: "bolt" }, text(parts)),
    warn: (...parts: unknown[]) => log.warn({ source: "bolt" }, text(parts)),
    error: (...parts: unknown[]) => log.error({ source: "bolt" }, text(parts)),
    setLevel(next) {
      level = next;
    },
    getLevel: () => level,
    setName() {},
  };
}
