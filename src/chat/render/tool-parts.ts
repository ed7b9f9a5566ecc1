import type { ReplyPart } from "../types.js";
import { formatToolLine, toolTask } from "./progress.js";
import { TOOL_TOKEN_CLOSE, TOOL_TOKEN_OPEN, type ToolView } from "./run-document.js";

const TOKEN_PATTERN = new RegExp(`${TOOL_TOKEN_OPEN}(\\d+)${TOOL_TOKEN_CLOSE}`, "g");

/**
 * A converted piece of a rendering with tool tokens (see `RunDocument.render`), in both forms: `text` with
 * every token replaced by its tool's progress line (converted to the dialect), and `parts` with the text
 * runs as they are and every token as the tool's {@link toolTask}, in order. A token of an unknown tool
 * is dropped. Pure; never throws.
 */
export function withToolTasks(
  converted: string,
  tools: readonly ToolView[],
  convert: (markdown: string) => string,
): { text: string; parts: ReplyPart[] } {
  const parts: ReplyPart[] = [];
  let text = "";
  let last = 0;
  for (const match of converted.matchAll(TOKEN_PATTERN)) {
    const before = converted.slice(last, match.index);
    if (before !== "") parts.push({ kind: "text", text: before });
    text += before;
    last = match.index + match[0].length;
    const tool = tools[Number(match[1])];
    if (tool === undefined) continue;
    parts.push({ kind: "task", task: toolTask(tool) });
    text += convert(formatToolLine(tool.name, tool.progress, tool.details)).trim();
  }
  const rest = converted.slice(last);
  if (rest !== "") parts.push({ kind: "text", text: rest });
  return { text: text + rest, parts };
}
