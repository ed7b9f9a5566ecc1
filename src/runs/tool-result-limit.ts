import type { AgentToolResult, AgentToolUpdateCallback, ImageContent, TextContent } from "../agent/index.js";
import type { RunTool } from "./setup.js";

/** Characters of text one tool result may carry by default (about 8 000 tokens). */
export const DEFAULT_TOOL_RESULT_MAX_CHARS = 32_000;
/** Smallest accepted text cap: room for a head, a tail and the marker. */
export const MIN_TOOL_RESULT_MAX_CHARS = 1_000;

/** Limits of {@link limitToolResult}. */
export interface ToolResultLimits {
  /** Characters of all text blocks together, the truncation marker included. */
  maxChars: number;
  /**
   * Characters of base64 image data one result may carry (images beyond are replaced by a short note).
   * Default 4 MiB (about 3 MB of image), under what model APIs accept per image.
   */
  maxImageChars?: number;
  /** Most images per result (default 8). */
  maxImages?: number;
  /** Characters of `details` as JSON (only UIs and logs read it, but it is stored); default 128 KiB. */
  maxDetailsChars?: number;
}

const DEFAULT_MAX_IMAGE_CHARS = 4 * 1024 * 1024;
const DEFAULT_MAX_IMAGES = 8;
const DEFAULT_MAX_DETAILS_CHARS = 128 * 1024;
/** Share of the kept text taken from the start (the rest is the end, where errors and totals usually are). */
const HEAD_SHARE = 0.6;
/** How far back a cut may move to land on a line boundary. */
const LINE_SLACK = 0.1;

const count = (n: number) => n.toLocaleString("en-US");

/** The note that replaces the middle of a cut text. */
export function truncationMarker(cutChars: number, totalChars: number, maxChars: number): string {
  return `\n\n[… ${count(cutChars)} characters cut here. This tool result was truncated: it had ${count(totalChars)} characters, more than the ${count(maxChars)} a tool result may have, so only its start and end are shown. Ask for a smaller part (a range, a filter, a limit) to see the rest. …]\n\n`;
}

/** Where to cut `text` at most at `index`: the start of a line within the slack, never inside a surrogate pair. */
function cutBefore(text: string, index: number, slack: number): number {
  const newline = text.lastIndexOf("\n", index - 1);
  if (newline >= 0 && newline + 1 >= index - slack) return newline + 1;
  const code = text.charCodeAt(index - 1);
  return code >= 0xd800 && code <= 0xdbff ? index - 1 : index;
}

/** Where to resume `text` at least at `index`: after a line break within the slack, never inside a pair. */
function resumeAfter(text: string, index: number, slack: number): number {
  const newline = text.indexOf("\n", index);
  if (newline >= 0 && newline < index + slack) return newline + 1;
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index + 1 : index;
}

/**
 * `text` within `maxChars`: unchanged when it fits, else its head and tail around a
 * {@link truncationMarker} that says how many characters were cut (marker included in the limit).
 */
export function truncateText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  // The marker's own length depends on the number it states; size it for the largest possible cut.
  const room = Math.max(0, maxChars - truncationMarker(text.length, text.length, maxChars).length);
  const slack = Math.floor(room * LINE_SLACK);
  const headEnd = cutBefore(text, Math.floor(room * HEAD_SHARE), slack);
  const tailStart = resumeAfter(text, text.length - (room - headEnd), slack);
  return `${text.slice(0, headEnd)}${truncationMarker(tailStart - headEnd, text.length, maxChars)}${text.slice(tailStart)}`;
}

function imageNote(image: ImageContent, why: string): TextContent {
  const kib = Math.round((image.data.length * 3) / 4 / 1024);
  return { type: "text", text: `[An image (${image.mimeType}, ${count(kib)} KiB) was left out: ${why}.]` };
}

/** Text blocks cut as one text (joined by line breaks, keeping its head and tail); other blocks kept in order. */
function limitTexts(
  content: (TextContent | ImageContent)[],
  maxChars: number,
): (TextContent | ImageContent)[] {
  let total = 0;
  for (const block of content) if (block.type === "text") total += block.text.length;
  if (total <= maxChars) return content;
  const joined = content
    .filter((block): block is TextContent => block.type === "text")
    .map((block) => block.text)
    .join("\n");
  const cut = truncateText(joined, maxChars);
  // The cut text replaces the text blocks at the first one's place; images stay where they were.
  const out: (TextContent | ImageContent)[] = [];
  let placed = false;
  for (const block of content) {
    if (block.type !== "text") out.push(block);
    else if (!placed) {
      out.push({ type: "text", text: cut });
      placed = true;
    }
  }
  return out;
}

function detailsSize(details: unknown): number | undefined {
  if (details === undefined) return 0;
  try {
    return JSON.stringify(details)?.length ?? 0;
  } catch {
    return undefined;
  }
}

/**
 * A tool result bounded for the transcript: text blocks together within `maxChars` (head and tail kept,
 * with a marker telling the model how much was cut); images within their own count and size budget (the
 * rest replaced by a note, which counts as text); `details` replaced by a short note when its JSON is too
 * large or not serializable. A result within the limits is returned as is. Pure; never throws on odd
 * shapes (a result without a content array passes through).
 */
export function limitToolResult(result: AgentToolResult, limits: ToolResultLimits): AgentToolResult {
  if (typeof result !== "object" || result === null || !Array.isArray(result.content)) return result;
  const maxImageChars = limits.maxImageChars ?? DEFAULT_MAX_IMAGE_CHARS;
  const maxImages = limits.maxImages ?? DEFAULT_MAX_IMAGES;
  let images = 0;
  let imageChars = 0;
  let changed = false;
  const content: (TextContent | ImageContent)[] = [];
  for (const block of result.content) {
    if (block?.type === "image" && typeof block.data === "string") {
      const why =
        images >= maxImages
          ? `a tool result may carry ${maxImages} images`
          : imageChars + block.data.length > maxImageChars
            ? "it is too large for a tool result"
            : undefined;
      if (why === undefined) {
        images++;
        imageChars += block.data.length;
        content.push(block);
      } else {
        content.push(imageNote(block, why));
        changed = true;
      }
    } else if (block?.type === "text" && typeof block.text === "string") content.push(block);
    else changed = true; // Neither text nor image: nothing a model can read.
  }
  const limited = limitTexts(content, limits.maxChars);
  changed ||= limited !== content;
  const maxDetails = limits.maxDetailsChars ?? DEFAULT_MAX_DETAILS_CHARS;
  const size = detailsSize(result.details);
  const detailsFit = size !== undefined && size <= maxDetails;
  if (!changed && detailsFit) return result;
  return {
    ...result,
    content: limited,
    details: detailsFit
      ? result.details
      : {
          truncated: true,
          reason: size === undefined ? "not serializable" : `${count(size)} characters of JSON`,
        },
  };
}

/** The error a tool threw, with its message within the text limit. */
function limitError(err: unknown, maxChars: number): unknown {
  if (err instanceof Error) {
    if (err.message.length <= maxChars) return err;
    try {
      err.message = truncateText(err.message, maxChars);
      return err;
    } catch {
      return new Error(truncateText(err.message, maxChars));
    }
  }
  const text = String(err);
  return text.length <= maxChars ? err : new Error(truncateText(text, maxChars));
}

/**
 * The tools with every result bounded by {@link limitToolResult}: what `execute` resolves with, what it
 * streams through `onUpdate`, and the message of what it throws. Applies to every tool source alike
 * (built-ins, `defineTool`, MCP). Each tool keeps its own fields and prototype; `execute` keeps its `this`.
 */
export function limitToolResults(tools: readonly RunTool[], limits: ToolResultLimits): RunTool[] {
  return tools.map((tool) => {
    const execute = tool.execute;
    const limited: RunTool = Object.assign(
      Object.create(Object.getPrototypeOf(tool) as object) as RunTool,
      tool,
    );
    limited.execute = async (toolCallId, params, signal, onUpdate?: AgentToolUpdateCallback) => {
      const update: AgentToolUpdateCallback | undefined =
        onUpdate && ((partial) => onUpdate(limitToolResult(partial, limits)));
      try {
        return limitToolResult(await execute.call(tool, toolCallId, params, signal, update), limits);
      } catch (err) {
        throw limitError(err, limits.maxChars);
      }
    };
    return limited;
  });
}
