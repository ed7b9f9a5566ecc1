/**
 * The structured log sink every part of Threadline writes to (pino-compatible: the app passes its pino
 * logger). Adapters, the run machinery and the playground all take this one shape. Methods must not throw;
 * `debug` is optional (callers use `log.debug?.(…)`).
 */
export interface ChatLogger {
  debug?(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** Logs nothing. */
export const SILENT_LOGGER: ChatLogger = { info() {}, warn() {}, error() {} };
