/**
 * Progress lines for tool executions: `🔧 name …` while running (followed by what the tool last reported
 * through `onUpdate`), `🔧 name ✓ 1.2s` when it succeeded, `🔧 name ✗ <short error>` when it failed.
 */
import type { ToolTask } from "../types.js";

/** State of one tool execution as a progress line shows it. */
export type ToolProgress =
  | { state: "running" }
  | { state: "succeeded"; durationMs?: number }
  | { state: "failed"; error: string };

/** Longest error text a failed tool's progress line shows. */
export const TOOL_ERROR_CHARS = 120;

/** Longest progress text (`onUpdate`) a running tool's line shows. */
export const TOOL_DETAILS_CHARS = 120;

/**
 * Longest `details` / `output` of a {@link ToolTask}: Slack's task_update chunk takes at most 256
 * characters in each (https://docs.slack.dev/reference/methods/chat.appendStream#chunks).
 */
export const TASK_TEXT_CHARS = 256;

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
export function formatToolLine(toolName: string, progress: ToolProgress, details?: string): string {
  switch (progress.state) {
    case "running": {
      const shown = details === undefined ? "" : shortText(details, TOOL_DETAILS_CHARS);
      return shown === "" ? `🔧 ${toolName} …` : `🔧 ${toolName} … ${escapeMarkdown(shown)}`;
    }
    case "succeeded":
      return progress.durationMs === undefined
        ? `🔧 ${toolName} ✓`
        : `🔧 ${toolName} ✓ ${formatDuration(progress.durationMs)}`;
    case "failed":
      return `🔧 ${toolName} ✗ ${escapeMarkdown(shortText(progress.error, TOOL_ERROR_CHARS) || "failed")}`;
  }
}

/**
 * The task card of one tool call: `pending` while an approval waits, `in_progress` while it runs (with its
 * progress text as `details`), then `complete` (its duration as `details`) or `error` (the error as
 * `output`). Texts are plain, one line, within {@link TASK_TEXT_CHARS}. Never throws.
 */
export function toolTask(tool: {
  id: string;
  name: string;
  progress: ToolProgress;
  details: string | undefined;
  awaitingApproval: boolean;
}): ToolTask {
  const task: ToolTask = { id: tool.id, title: tool.name, status: "in_progress" };
  const details = tool.details === undefined ? "" : shortText(tool.details, TASK_TEXT_CHARS);
  switch (tool.progress.state) {
    case "running":
      if (tool.awaitingApproval) task.status = "pending";
      if (details !== "") task.details = details;
      break;
    case "succeeded":
      task.status = "complete";
      if (tool.progress.durationMs !== undefined)
        task.details = `✓ ${formatDuration(tool.progress.durationMs)}`;
      break;
    case "failed":
      task.status = "error";
      task.output = shortText(tool.progress.error, TASK_TEXT_CHARS) || "failed";
      break;
  }
  return task;
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
