/** Structured log sink of the Discord adapter (pino-compatible; the app passes its logger). */
export interface DiscordLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Discards everything. */
export const SILENT_DISCORD_LOGGER: DiscordLogger = { info() {}, warn() {}, error() {} };
