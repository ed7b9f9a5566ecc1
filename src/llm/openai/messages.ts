import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
} from "openai/resources/chat/completions";
import type {
  AssistantMessage,
  ImageContent,
  Message,
  Model,
  TextContent,
  ToolResultMessage,
  UserMessage,
} from "../../agent/index.js";

/** How {@link convertToOpenAIMessages} renders a transcript. */
export interface OpenAIMessageOptions {
  /** Role of the system prompt. Default `"system"` (OpenAI's reasoning models also accept `"developer"`). */
  systemRole?: "system" | "developer";
  /**
   * Send earlier thinking back on assistant messages, in the field it arrived in (`reasoning_content`
   * by default). Only for providers that require it (e.g. some reasoning models with tool calls);
   * default `false`, since most servers ignore or reject it.
   */
  replayReasoning?: boolean;
  /** Whether images are sent as `image_url` parts. Default: `model.input` includes `"image"` (or is unset). */
  supportsImages?: boolean;
}

/** Text of the tool message synthesized for a tool call that has no result in the transcript. */
export const MISSING_TOOL_RESULT_TEXT = "No result provided";
/** Stands in for an image when the model does not accept images. */
export const IMAGE_OMITTED_TEXT = "(image omitted: the model does not accept images)";
/** Introduces the user message carrying images that tool results returned. */
export const TOOL_IMAGES_TEXT = "Images returned by the tool calls above:";
/** Content of a tool message whose result had no text. */
export const EMPTY_TOOL_RESULT_TEXT = "(no output)";

const REASONING_FIELDS = new Set(["reasoning_content", "reasoning", "reasoning_text"]);

function imagePart(image: ImageContent): ChatCompletionContentPart {
  return { type: "image_url", image_url: { url: `data:${image.mimeType};base64,${image.data}` } };
}

function userContent(message: UserMessage, images: boolean): string | ChatCompletionContentPart[] {
  const content = message.content;
  if (typeof content === "string") return content;
  if (content.every((block) => block.type === "text")) {
    return (content as TextContent[]).map((block) => block.text).join("\n");
  }
  return content.map((block) =>
    block.type === "text"
      ? { type: "text", text: block.text }
      : images
        ? imagePart(block)
        : { type: "text", text: IMAGE_OMITTED_TEXT },
  );
}

function assistantParam(
  message: AssistantMessage,
  options: OpenAIMessageOptions,
): ChatCompletionMessageParam | undefined {
  let text = "";
  let reasoning = "";
  let reasoningField = "reasoning_content";
  const toolCalls: ChatCompletionMessageToolCall[] = [];
  for (const block of message.content) {
    if (block.type === "text") text += block.text;
    else if (block.type === "thinking") {
      if (block.redacted) continue;
      reasoning += block.thinking;
      if (block.thinkingSignature && REASONING_FIELDS.has(block.thinkingSignature)) {
        reasoningField = block.thinkingSignature;
      }
    } else {
      toolCalls.push({
        id: block.id,
        type: "function",
        function: { name: block.name, arguments: JSON.stringify(block.arguments) },
      });
    }
  }
  if (text === "" && toolCalls.length === 0) return undefined;
  const param: ChatCompletionAssistantMessageParam = {
    role: "assistant",
    content: text === "" ? null : text,
  };
  if (toolCalls.length > 0) param.tool_calls = toolCalls;
  if (options.replayReasoning && reasoning !== "") {
    (param as unknown as Record<string, unknown>)[reasoningField] = reasoning;
  }
  return param;
}

/**
 * An answer an interrupt cut short (docs/agent-loop.md, deviation 6), as the model will read it next: the
 * text it had written (the user saw it in the chat, cut) and a line saying where and why it stopped. Its
 * tool calls are left out: their arguments may be cut too, and none of them ran (their `Operation aborted`
 * results are dropped with them). Undefined when it had written no text.
 */
function interruptedParam(message: AssistantMessage): ChatCompletionMessageParam | undefined {
  const text = message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
  if (text.trim() === "") return undefined;
  const from = message.interrupted?.by ? ` from ${message.interrupted.by}` : "";
  return { role: "assistant", content: `${text}\n\n${INTERRUPTED_ANSWER_TEXT.replace("{from}", from)}` };
}

/** The line that ends an interrupted answer in the next request; `{from}` is " from <name>" or empty. */
export const INTERRUPTED_ANSWER_TEXT = "[This answer was cut off here by a new message{from}.]";

function toolText(message: ToolResultMessage, images: boolean): string {
  const parts: string[] = [];
  for (const block of message.content) {
    if (block.type === "text") parts.push(block.text);
    else if (!images) parts.push(IMAGE_OMITTED_TEXT);
  }
  const text = parts.join("\n");
  return text === "" ? EMPTY_TOOL_RESULT_TEXT : text;
}

/**
 * Renders an LLM transcript in chat-completions format: the system prompt first (omitted when empty),
 * user messages with text and images, assistant messages with text and `tool_calls` (thinking only
 * with `replayReasoning`), tool results as `tool` messages. Keeps the transcript valid for strict servers:
 * - assistant messages that ended in `error`/`aborted`, or carry neither text nor tool calls, are skipped —
 *   except an interrupted answer, whose text stays (ending in {@link INTERRUPTED_ANSWER_TEXT}) without its
 *   tool calls;
 * - a tool result whose call is not in the immediately preceding assistant message is dropped;
 * - a tool call without a result gets a `tool` message saying "No result provided";
 * - images from tool results follow the batch's `tool` messages as one user message (tool messages
 *   carry text only).
 * Pure and O(n); never throws on well-typed input.
 */
export function convertToOpenAIMessages(
  systemPrompt: string,
  messages: readonly Message[],
  model: Pick<Model, "input">,
  options: OpenAIMessageOptions = {},
): ChatCompletionMessageParam[] {
  const images = options.supportsImages ?? (model.input === undefined || model.input.includes("image"));
  const out: ChatCompletionMessageParam[] = [];
  if (systemPrompt !== "") out.push({ role: options.systemRole ?? "system", content: systemPrompt });
  let openCalls: string[] = [];
  let toolImages: ImageContent[] = [];

  const closeBatch = () => {
    for (const id of openCalls)
      out.push({ role: "tool", tool_call_id: id, content: MISSING_TOOL_RESULT_TEXT });
    openCalls = [];
    if (toolImages.length > 0) {
      out.push({
        role: "user",
        content: [{ type: "text", text: TOOL_IMAGES_TEXT }, ...toolImages.map(imagePart)],
      });
      toolImages = [];
    }
  };

  for (const message of messages) {
    if (message.role === "toolResult") {
      const at = openCalls.indexOf(message.toolCallId);
      if (at < 0) continue;
      openCalls.splice(at, 1);
      out.push({ role: "tool", tool_call_id: message.toolCallId, content: toolText(message, images) });
      if (images) {
        for (const block of message.content) if (block.type === "image") toolImages.push(block);
      }
      continue;
    }
    closeBatch();
    if (message.role === "user") {
      out.push({ role: "user", content: userContent(message, images) });
      continue;
    }
    if (message.interrupted) {
      const param = interruptedParam(message);
      if (param) out.push(param);
      continue;
    }
    if (message.stopReason === "error" || message.stopReason === "aborted") continue;
    const param = assistantParam(message, options);
    if (!param) continue;
    out.push(param);
    if (param.role === "assistant" && param.tool_calls) openCalls = param.tool_calls.map((call) => call.id);
  }
  closeBatch();
  return out;
}
