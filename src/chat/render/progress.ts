/**
 * Progress lines for tool executions: `🔧 name …` while running, `🔧 name ✓ 1.2s` when it succeeded,
 * `🔧 name ✗ <short error>` when it failed.
 */

/** State of one tool execution as a progress line shows it. */
export type ToolProgress =
  | { state: "running" }
  | { state: "succeeded"; durationMs?: number }
  | { state: "failed"; error: string };

/** Longest error text a failed tool's progress line shows. */
export const TOOL_ERROR_CHARS = 120;

/**
 * Formats a duration: tenths of a second below a minute (`0.4s`, `1.2s`, `59.9s`), then minutes and
 * zero-padded seconds (`2m 03s`), then hours and zero-padded minutes (`1h 05m`). Negative or non-finite
 * input formats as `0.0s`. Never throws.
 */
export function formatDuration(ms: number): string {
  const safe = Number.isFinite(ms) && ms > 0 ? ms : 0;
  const tenths = Math.round(safe / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)}s`;
  const seconds = Math.round(safe / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${pad(seconds % 60)}s`;
  const minutes = Math.round(safe / 60_000);
  return `${Math.floor(minutes / 60)}h ${pad(minutes % 60)}m`;
}

/**
 * The Markdown progress line of one tool call. The tool name is shown as given; the error is shortened
 * with {@link shortText} and Markdown-escaped so it renders literally.
 */
export function formatToolLine(toolName: string, progress: ToolProgress): string {
  switch (progress.state) {
    case "running":
      return `🔧 ${toolName} …`;
    case "succeeded":
      return progress.durationMs === undefined
        ? `🔧 ${toolName} ✓`
        : `🔧 ${toolName} ✓ ${formatDuration(progress.durationMs)}`;
    case "failed":
      return `🔧 ${toolName} ✗ ${escapeMarkdown(shortText(progress.error, TOOL_ERROR_CHARS) || "failed")}`;
  }
}

/**
 * One short line for a chat out of a possibly long, multi-line error text: stack frames (`    at …`) are
 * dropped, the first remaining non-empty line is kept, whitespace collapsed, and the result cut to
 * `maxChars` with `…`. Returns `""` for empty input.
 */
export function shortText(text: string, maxChars: number): string {
  const line =
    text
      .split("\n")
      .filter((candidate) => !/^\s+at\s/.test(candidate))
      .map((candidate) => candidate.replace(/\s+/g, " ").trim())
      .find((candidate) => candidate !== "") ?? "";
  return line.length <= maxChars ? line : `${line.slice(0, Math.max(0, maxChars - 1)).trimEnd()}…`;
}

/** Backslash-escapes Markdown punctuation so `text` renders literally (CommonMark escapes). */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~[\]<>|#]/g, (char) => `\\${char}`);
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}
